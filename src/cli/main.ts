/**
 * `cuda-memdiff`: the engine on the command line, for snapshot pickles from
 * `torch.cuda.memory._dump_snapshot()` and for recorded session folders.
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  CellCodeNames,
  checkSize,
  decodeLimits,
  diffSnapshots,
  findLeaks,
  FrameTable,
  groupBySite,
  IDecodeLimits,
  IFrameFilterOptions,
  ISession,
  LIMIT_NAMES,
  loadSession,
  readSnapshot,
  reportCells,
  sessionExecutions,
  Snapshot,
  SnapshotError
} from '../engine';
import { diffJson, diffText, sessionJson, sessionText, summaryJson, summaryText } from './report';
import { leaksJson, leaksText } from './leaks';
import { printableLines } from './table';

const USAGE = `usage:
  cuda-memdiff summary FILE [--json]
  cuda-memdiff diff BEFORE AFTER [--json] [--all-frames]
  cuda-memdiff session DIR [--json] [--all-frames]
  cuda-memdiff leaks DIR [--json] [--all-frames]

FILE, BEFORE and AFTER are snapshot pickles written by torch.cuda.memory._dump_snapshot()
(plain or gzip) or the same dict as JSON. DIR is a session folder (manifest.json plus one
snapshot per cell). \`leaks\` ranks the session's cells by the memory they left alive:
leak (grows on re-run, or held by nothing the user sees), retained (expected state) or ok.

Decode limits (a hostile file is refused with one line naming the one it broke); raise
them for a real file with the flag or the environment variable (K, M, G: powers of 1024):
  --max-bytes N       bytes after gunzip (CUDA_MEMDIFF_MAX_BYTES, default 2G)
  --max-entries N     blocks plus trace entries (CUDA_MEMDIFF_MAX_ENTRIES, default 20,000,000)
  --max-devices N     devices (CUDA_MEMDIFF_MAX_DEVICES, default 1024)
  --max-int-bytes N   bytes of one pickled integer (CUDA_MEMDIFF_MAX_INT_BYTES, default 16)`;

/** Wrong arguments: reported with the usage text. */
class UsageError extends Error {}

interface IArgs {
  command: string;
  operands: string[];
  json: boolean;
  allFrames: boolean;
  limits: IDecodeLimits;
}

/** `123`, `1_000_000`, `2G` (K, M, G: powers of 1024) as a number; NaN when not one. */
function parseCount(text: string): number {
  const m = /^(\d[\d_,]*)([KMG]?)$/i.exec(text.trim());
  if (!m) {
    return NaN;
  }
  const scale = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 }[m[2].toUpperCase() as '' | 'K' | 'M' | 'G'];
  return Number(m[1].replace(/[_,]/g, '')) * scale;
}

/** Decode limits from the environment, then from flags (flags win). */
function limitOverrides(flags: Map<string, string>, env: NodeJS.ProcessEnv): Partial<IDecodeLimits> {
  const out: { -readonly [K in keyof IDecodeLimits]?: number } = {};
  for (const key of Object.keys(LIMIT_NAMES) as (keyof IDecodeLimits)[]) {
    const { flag, env: name } = LIMIT_NAMES[key];
    const text = flags.get(flag) ?? env[name];
    if (text !== undefined) {
      const value = parseCount(text);
      if (!Number.isSafeInteger(value) || value <= 0) {
        throw new UsageError(`${flags.has(flag) ? flag : name} takes a positive integer (K, M, G allowed), not '${text}'`);
      }
      out[key] = value;
    }
  }
  return out;
}

const LIMIT_FLAGS = new Set(Object.values(LIMIT_NAMES).map(n => n.flag));

function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): IArgs {
  const operands: string[] = [];
  const limitFlags = new Map<string, string>();
  let json = false;
  let allFrames = false;
  for (let k = 0; k < argv.length; k++) {
    const arg = argv[k];
    const [flag, inline] = arg.split(/=(.*)/s, 2);
    if (LIMIT_FLAGS.has(flag)) {
      const value = inline ?? argv[++k];
      if (value === undefined) {
        throw new UsageError(`${flag} takes a number`);
      }
      limitFlags.set(flag, value);
    } else if (arg === '--json') {
      json = true;
    } else if (arg === '--all-frames') {
      allFrames = true;
    } else if (arg === '-h' || arg === '--help') {
      return { command: 'help', operands: [], json, allFrames, limits: decodeLimits() };
    } else if (arg.startsWith('--')) {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      operands.push(arg);
    }
  }
  const [command, ...rest] = operands;
  if (!command) {
    throw new UsageError('no command given');
  }
  return { command, operands: rest, json, allFrames, limits: decodeLimits(limitOverrides(limitFlags, env)) };
}

function readBytes(file: string, limits: IDecodeLimits): Uint8Array {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new SnapshotError(`${file}: no such file`);
  }
  if (stat.isDirectory()) {
    throw new SnapshotError(`${file}: is a folder, not a snapshot file`);
  }
  // A file over the byte limit is refused before it is read (gzip cannot shrink on decompression).
  checkSize(stat.size, limits.maxBytes);
  return new Uint8Array(fs.readFileSync(file));
}

function readSnapshotFile(file: string, frames: FrameTable, limits: IDecodeLimits): Snapshot {
  try {
    return readSnapshot(readBytes(file, limits), frames, limits);
  } catch (reason) {
    if (reason instanceof SnapshotError && !reason.message.startsWith(file)) {
      throw new SnapshotError(`${file}: ${reason.message}`);
    }
    throw reason;
  }
}

function expectOperands(args: IArgs, count: number, names: string): void {
  if (args.operands.length !== count) {
    throw new UsageError(`${args.command} takes ${names}`);
  }
}

function readSessionFolder(dir: string, limits: IDecodeLimits): ISession {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new SnapshotError(`${dir}: no such folder`);
  }
  const manifestPath = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestPath)) {
    throw new SnapshotError(`${dir}: no manifest.json, so it is not a session folder`);
  }
  return loadSession(fs.readFileSync(manifestPath, 'utf-8'), name => readBytes(path.join(dir, name), limits), limits);
}

/** Run one command; returns the text for stdout. */
export function run(argv: string[]): string {
  const args = parseArgs(argv);
  const filter: IFrameFilterOptions = { allFrames: args.allFrames };
  // Text goes to a terminal: control characters from the data are escaped; JSON keeps them as data.
  const out = (json: unknown, text: () => string) =>
    args.json ? JSON.stringify(json, null, 2) : printableLines(text());
  switch (args.command) {
    case 'help':
      return USAGE;
    case 'summary': {
      expectOperands(args, 1, 'one FILE');
      const snapshot = readSnapshotFile(args.operands[0], new FrameTable(), args.limits);
      return out(summaryJson(snapshot), () => summaryText(snapshot));
    }
    case 'diff': {
      expectOperands(args, 2, 'BEFORE and AFTER');
      const frames = new FrameTable();
      const before = readSnapshotFile(args.operands[0], frames, args.limits);
      const after = readSnapshotFile(args.operands[1], frames, args.limits);
      const diff = diffSnapshots(before, after);
      const groups = groupBySite(diff, filter);
      return out(diffJson(diff, groups, filter), () => diffText(diff, groups, filter));
    }
    case 'session': {
      expectOperands(args, 1, 'one DIR');
      const session = readSessionFolder(args.operands[0], args.limits);
      const reports = reportCells(session, filter);
      const cells = new CellCodeNames(
        session.manifest.cells.map(c => ({ id: String(c.index), source: c.source, executionCount: c.execution_count }))
      );
      return out(sessionJson(reports, session.frames, filter, cells), () => sessionText(reports, session.frames));
    }
    case 'leaks': {
      expectOperands(args, 1, 'one DIR');
      const session = readSessionFolder(args.operands[0], args.limits);
      // The kernel's holders after the last cell, when the session was recorded with them.
      const holders = session.holders[session.holders.length - 1] ?? undefined;
      const report = findLeaks(session.snapshots, sessionExecutions(session.manifest), { holders });
      return out(leaksJson(report, session, filter), () => leaksText(report, session, filter));
    }
    default:
      throw new UsageError(`unknown command ${args.command}`);
  }
}

/** Entry point: prints the result, or one clear line on stderr and a non-zero exit. */
export function main(argv: string[]): number {
  try {
    process.stdout.write(run(argv) + '\n');
    return 0;
  } catch (reason) {
    if (reason instanceof UsageError) {
      process.stderr.write(`cuda-memdiff: ${reason.message}\n${USAGE}\n`);
      return 2;
    }
    if (reason instanceof SnapshotError) {
      process.stderr.write(`cuda-memdiff: ${oneLine(reason.message)}\n`);
      return 1;
    }
    const message = reason instanceof Error ? reason.message : String(reason);
    process.stderr.write(`cuda-memdiff: unexpected error: ${oneLine(message)}\n`);
    return 1;
  }
}

/** An error message as one terminal-safe line (it may quote names from the file). */
function oneLine(message: string): string {
  return printableLines(message).replace(/\n/g, '\\n');
}
