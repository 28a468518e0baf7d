/**
 * `cuda-memdiff`: the engine on the command line, for snapshot pickles from
 * `torch.cuda.memory._dump_snapshot()` and for recorded session folders.
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  CellCodeNames,
  diffSnapshots,
  findLeaks,
  FrameTable,
  groupBySite,
  IFrameFilterOptions,
  ISession,
  loadSession,
  readSnapshot,
  reportCells,
  sessionExecutions,
  Snapshot,
  SnapshotError
} from '../engine';
import { diffJson, diffText, sessionJson, sessionText, summaryJson, summaryText } from './report';
import { leaksJson, leaksText } from './leaks';

const USAGE = `usage:
  cuda-memdiff summary FILE [--json]
  cuda-memdiff diff BEFORE AFTER [--json] [--all-frames]
  cuda-memdiff session DIR [--json] [--all-frames]
  cuda-memdiff leaks DIR [--json] [--all-frames]

FILE, BEFORE and AFTER are snapshot pickles written by torch.cuda.memory._dump_snapshot()
(plain or gzip) or the same dict as JSON. DIR is a session folder (manifest.json plus one
snapshot per cell). \`leaks\` ranks the session's cells by the memory they left alive:
leak (grows on re-run, or held by nothing the user sees), retained (expected state) or ok.`;

/** Wrong arguments: reported with the usage text. */
class UsageError extends Error {}

interface IArgs {
  command: string;
  operands: string[];
  json: boolean;
  allFrames: boolean;
}

function parseArgs(argv: string[]): IArgs {
  const operands: string[] = [];
  let json = false;
  let allFrames = false;
  for (const arg of argv) {
    if (arg === '--json') {
      json = true;
    } else if (arg === '--all-frames') {
      allFrames = true;
    } else if (arg === '-h' || arg === '--help') {
      return { command: 'help', operands: [], json, allFrames };
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
  return { command, operands: rest, json, allFrames };
}

function readBytes(file: string): Uint8Array {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new SnapshotError(`${file}: no such file`);
  }
  if (stat.isDirectory()) {
    throw new SnapshotError(`${file}: is a folder, not a snapshot file`);
  }
  return new Uint8Array(fs.readFileSync(file));
}

function readSnapshotFile(file: string, frames: FrameTable): Snapshot {
  try {
    return readSnapshot(readBytes(file), frames);
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

function readSessionFolder(dir: string): ISession {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new SnapshotError(`${dir}: no such folder`);
  }
  const manifestPath = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestPath)) {
    throw new SnapshotError(`${dir}: no manifest.json, so it is not a session folder`);
  }
  return loadSession(fs.readFileSync(manifestPath, 'utf-8'), name => readBytes(path.join(dir, name)));
}

/** Run one command; returns the text for stdout. */
export function run(argv: string[]): string {
  const args = parseArgs(argv);
  const filter: IFrameFilterOptions = { allFrames: args.allFrames };
  const out = (json: unknown, text: () => string) =>
    args.json ? JSON.stringify(json, null, 2) : text();
  switch (args.command) {
    case 'help':
      return USAGE;
    case 'summary': {
      expectOperands(args, 1, 'one FILE');
      const snapshot = readSnapshotFile(args.operands[0], new FrameTable());
      return out(summaryJson(snapshot), () => summaryText(snapshot));
    }
    case 'diff': {
      expectOperands(args, 2, 'BEFORE and AFTER');
      const frames = new FrameTable();
      const before = readSnapshotFile(args.operands[0], frames);
      const after = readSnapshotFile(args.operands[1], frames);
      const diff = diffSnapshots(before, after);
      const groups = groupBySite(diff, filter);
      return out(diffJson(diff, groups, filter), () => diffText(diff, groups, filter));
    }
    case 'session': {
      expectOperands(args, 1, 'one DIR');
      const session = readSessionFolder(args.operands[0]);
      const reports = reportCells(session, filter);
      const cells = new CellCodeNames(
        session.manifest.cells.map(c => ({ id: String(c.index), source: c.source, executionCount: c.execution_count }))
      );
      return out(sessionJson(reports, session.frames, filter, cells), () =>
        sessionText(reports, session.frames, cells, filter)
      );
    }
    case 'leaks': {
      expectOperands(args, 1, 'one DIR');
      const session = readSessionFolder(args.operands[0]);
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
      process.stderr.write(`cuda-memdiff: ${reason.message}\n`);
      return 1;
    }
    const message = reason instanceof Error ? reason.message : String(reason);
    process.stderr.write(`cuda-memdiff: unexpected error: ${message}\n`);
    return 1;
  }
}
