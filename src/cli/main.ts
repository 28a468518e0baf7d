/**
 * `cuda-memdiff`: the engine on the command line, for snapshot pickles from
 * `torch.cuda.memory._dump_snapshot()` and for recorded session folders.
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  AllocationSite,
  Block,
  BlockBirths,
  CellCodeNames,
  decodeLimits,
  diffSnapshots,
  findLeaks,
  FrameTable,
  groupByRole,
  roleMoves,
  groupBySite,
  IDecodeLimits,
  IFrameFilterOptions,
  ISession,
  ISessionManifest,
  IRankedSession,
  IUnreadableFile,
  kernelPositions,
  kernelSessionsOf,
  LIMIT_NAMES,
  loadRankedSession,
  loadSession,
  NotebookError,
  RANKS_INDEX,
  rankFolders,
  rankSession,
  readSnapshot,
  retentionByExecution,
  runMismatch,
  reportCells,
  sessionCellName,
  sessionExecutions,
  sessionRoles,
  Snapshot,
  SnapshotError,
  splitSitesByRun
} from '../engine';
import {
  diffJson,
  diffText,
  leftOutJson,
  sessionCells,
  sessionJson,
  sessionText,
  summaryJson,
  summaryText
} from './report';
import { leaksJson, leaksText } from './leaks';
import { differentRunsJson, differentRunsNote } from './runMismatch';
import { compareJson, compareText, ranksJson, ranksText } from './ranks';
import { diffRolesJson, diffRolesText, rolesBeside, sessionRolesText } from './roles';
import {
  fileProblem,
  inFolder,
  isFileSystemError,
  isFolder,
  ManifestsBeside,
  manifestsBeside,
  readBytes,
  readFolderFile,
  readText
} from './files';
import { printable, printableLines } from './table';

const USAGE = `usage:
  cuda-memdiff --version
  cuda-memdiff summary FILE [--json]
  cuda-memdiff diff BEFORE AFTER [--json] [--all-frames] [--by role]
  cuda-memdiff session DIR [--json] [--all-frames] [--by role]
  cuda-memdiff leaks DIR [--json] [--all-frames]
  cuda-memdiff session|leaks RANKS_DIR [--rank N] [--json]
  cuda-memdiff diff RANKS_DIR --ranks A,B [--point K] [--json]

FILE, BEFORE and AFTER are snapshot pickles written by torch.cuda.memory._dump_snapshot()
(plain or gzip) or the same dict as JSON. DIR is a session folder (manifest.json plus one
snapshot per cell; the tables' snapshot column names each cell's file, which diff takes);
RANKS_DIR is a multi-rank folder (rank0/, rank1/, ... each a session
folder, written by cuda_memdiff_kernel.ranks): without --rank, session and leaks compare the
ranks and say which one grows; diff --ranks compares two ranks by allocation site at capture
point K (counted from 0, so the table's first row, "step 1", is point 0; default: the last point
both ranks have). \`leaks\` ranks the session's cells by the memory they left alive:
leak (grows on re-run, or held by nothing the user sees), fixed (a leak a later cell freed),
retained (expected state), unknown (no allocation stacks to tell) or ok.
--by role groups memory by what it is for (parameter, gradient, optimizer_state, activation, ...),
as the kernel recorded it: \`diff\` takes two snapshots of one session folder recorded with roles.

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
  /** `--by role`: group by what the memory is for. */
  byRole: boolean;
  /** --rank N: one rank of a multi-rank folder. */
  rank: number | null;
  /** --ranks A,B: the two ranks `diff` compares. */
  ranks: [number, number] | null;
  /** --point K: the capture point `diff --ranks` compares at (default: the last both have). */
  point: number | null;
  limits: IDecodeLimits;
}

function integerOption(name: string, value: string | undefined): number {
  // Past 2^53 the number read is not the one given: --rank 99999999999999999999 named rank 100000000000000000000.
  if (value === undefined || !/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`${name} takes a whole number below 2^53${value === undefined ? '' : `, not '${value}'`}`);
  }
  return Number(value);
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
        throw new UsageError(
          `${flags.has(flag) ? flag : name} takes a positive integer below 2^53 (K, M, G allowed), not '${text}'`
        );
      }
      out[key] = value;
    }
  }
  return out;
}

/** The version of the package this CLI is part of (its package.json, beside dist/node/cli). */
function packageVersion(): string {
  const manifest = path.join(__dirname, '..', '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(manifest, 'utf-8')) as { version: string }).version;
}

const LIMIT_FLAGS = new Set(Object.values(LIMIT_NAMES).map(n => n.flag));

/**
 * The options each command takes besides --json and the decode limits: one
 * it ignored would read as applied (`summary F --rank 1` as rank 1's figures).
 */
const COMMAND_OPTIONS: Record<string, readonly string[]> = {
  summary: [],
  diff: ['--all-frames', '--by', '--ranks', '--point'],
  session: ['--all-frames', '--by', '--rank'],
  leaks: ['--all-frames', '--rank']
};
const COMMAND_FLAGS = new Set(Object.values(COMMAND_OPTIONS).flat());

function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): IArgs {
  const operands: string[] = [];
  const limitFlags = new Map<string, string>();
  let json = false;
  let allFrames = false;
  let byRole = false;
  let rank: number | null = null;
  let ranks: [number, number] | null = null;
  let point: number | null = null;
  const given = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.split(/=(.*)/s, 2);
    given.add(flag);
    if (LIMIT_FLAGS.has(flag)) {
      const value = inline ?? argv[++i];
      if (value === undefined) {
        throw new UsageError(`${flag} takes a number`);
      }
      limitFlags.set(flag, value);
    } else if (flag === '--by') {
      const value = inline ?? argv[++i];
      if (value !== 'role') {
        throw new UsageError(`--by takes 'role'${value === undefined ? '' : `, not '${value}'`}`);
      }
      byRole = true;
    } else if (flag === '--rank') {
      rank = integerOption(flag, inline ?? argv[++i]);
    } else if (flag === '--point') {
      point = integerOption(flag, inline ?? argv[++i]);
    } else if (flag === '--ranks') {
      const pair = (inline ?? argv[++i] ?? '').split(',');
      if (pair.length !== 2) {
        throw new UsageError('--ranks takes two ranks, as in --ranks 0,1');
      }
      ranks = [integerOption('--ranks', pair[0]), integerOption('--ranks', pair[1])];
    } else if (arg === '--json') {
      json = true;
    } else if (arg === '--all-frames') {
      allFrames = true;
    } else if (arg === '-h' || arg === '--help' || arg === '--version') {
      const command = arg === '--version' ? 'version' : 'help';
      return { command, operands: [], json, allFrames, byRole, rank, ranks, point, limits: decodeLimits() };
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
  const takes = COMMAND_OPTIONS[command] ?? [...COMMAND_FLAGS];
  const ignored = [...given].find(f => COMMAND_FLAGS.has(f) && !takes.includes(f));
  if (ignored) {
    throw new UsageError(`${command} does not take ${ignored}`);
  }
  if (point !== null && !ranks) {
    throw new UsageError('--point goes with --ranks A,B: it picks the capture point the two ranks are compared at');
  }
  if (byRole && ranks) {
    throw new UsageError('--by role reads one session folder: it does not go with --ranks');
  }
  const limits = decodeLimits(limitOverrides(limitFlags, env));
  return { command, operands: rest, json, allFrames, byRole, rank, ranks, point, limits };
}

/** What to do with a notebook given where a snapshot file belongs: the ways to get one from it. */
function notebookNotSnapshot(file: string): string {
  return (
    `${file}: is a Jupyter notebook, not a snapshot: call torch.cuda.memory._dump_snapshot("snap.pickle") in it, ` +
    'or run it in JupyterLab with this extension and use Save CUDA Memory Snapshot as Pickle ' +
    '(Export CUDA Memory Session writes a folder of them for `cuda-memdiff session` and `leaks`)'
  );
}

/** What to do with a notebook given where a session folder belongs: the ways to record one from it. */
function notebookNotSession(file: string): string {
  return (
    `${file}: is a Jupyter notebook, not a session folder: run it in JupyterLab with this extension and use ` +
    `Export CUDA Memory Session, or record one on a CUDA machine with \`python -m cuda_memdiff_kernel.recorder ${file} OUT_DIR\``
  );
}

function readSnapshotFile(file: string, frames: FrameTable, limits: IDecodeLimits): Snapshot {
  // "is a folder, not a file" leaves a person guessing which command reads a folder.
  const folder = !isFolder(file)
    ? null
    : fs.existsSync(path.join(file, 'manifest.json'))
      ? 'a session folder'
      : rankFolderNames(file).length > 0
        ? 'a multi-rank folder'
        : null;
  if (folder) {
    throw new SnapshotError(
      `${file}: is ${folder}, not a snapshot file: read it with \`cuda-memdiff session\` or \`leaks\`, or give one of its snapshot files`
    );
  }
  try {
    return readSnapshot(readBytes(file, limits), frames, limits);
  } catch (reason) {
    if (reason instanceof NotebookError) {
      throw new SnapshotError(notebookNotSnapshot(file));
    }
    // `FILE gives more than ...` names the file too: a bare prefix is the test here.
    if (reason instanceof SnapshotError && !reason.message.startsWith(file)) {
      throw new SnapshotError(`${file}: ${reason.message}`);
    }
    throw reason;
  }
}

/** A notebook's file name: given to `session` or `leaks`, it is not read, so its name is what tells. */
const NOTEBOOK_NAME = /\.ipynb$/i;

function expectOperands(args: IArgs, count: number, names: string): void {
  if (args.operands.length !== count) {
    throw new UsageError(`${args.command} takes ${names}`);
  }
}

function readSessionFolder(dir: string, limits: IDecodeLimits): ISession {
  if (!isFolder(dir)) {
    // A snapshot file given here exists: "no such folder" would say it does not.
    if (fs.existsSync(dir) && NOTEBOOK_NAME.test(dir)) {
      throw new SnapshotError(notebookNotSession(dir));
    }
    const why = fs.existsSync(dir)
      ? 'is a file, not a session folder: `cuda-memdiff summary` reads one snapshot file'
      : 'no such folder';
    throw new SnapshotError(`${dir}: ${why}`);
  }
  const manifestPath = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestPath)) {
    throw new SnapshotError(`${dir}: no manifest.json, so it is not a session folder`);
  }
  const manifestText = readText(manifestPath, limits);
  // The engine names the file inside the folder ("manifest.json cells[2] ..."); with several folders at hand, the
  // user needs which one.
  const session = inFolder(
    dir,
    () => loadSession(manifestText, name => readFolderFile(path.join(dir, name), limits), undefined, limits),
    'a file inside'
  );
  // An empty table and "No cell leaks." would read as a clean session.
  if (session.sourceCells.length === 0) {
    throw new SnapshotError(`${manifestPath}: lists no cells, so there is nothing to report`);
  }
  return session;
}

/** The `rank<N>` folders of a folder (none where it is not a multi-rank folder). */
function rankFolderNames(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (reason) {
    throw fileProblem(dir, reason);
  }
  // Only rank<N> entries are looked at: a stale link beside them is none of the ranks' business.
  return rankFolders(names)
    .map(r => r.folder)
    .filter(name => isFolder(path.join(dir, name)));
}

/** The ranks of a multi-rank folder, or null when the folder is not one. */
function readRankedFolder(dir: string, limits: IDecodeLimits): IRankedSession | null {
  if (!isFolder(dir) || fs.existsSync(path.join(dir, 'manifest.json'))) {
    return null;
  }
  const folders = rankFolderNames(dir);
  if (folders.length === 0) {
    return null;
  }
  const index = path.join(dir, RANKS_INDEX);
  // The engine names files inside the folder (ranks.json, rank1: ...); the user needs where the folder is.
  return inFolder(
    dir,
    () =>
      loadRankedSession(
        folders,
        (folder, name) => readFolderFile(path.join(dir, folder, name), limits),
        fs.existsSync(index) ? readText(index, limits) : null,
        limits
      ),
    'a file inside'
  );
}

/** The folder of the session's files: DIR, or a rank's own folder in a multi-rank one (`--rank N`). */
function sessionDir(args: IArgs): string {
  return args.rank === null ? args.operands[0] : path.join(args.operands[0], `rank${args.rank}`);
}

/** A session folder, or one rank of a multi-rank folder (`--rank N`). */
function readSessionOrRank(args: IArgs): ISession {
  const dir = args.operands[0];
  const ranked = readRankedFolder(dir, args.limits);
  if (!ranked) {
    if (args.rank !== null) {
      throw new UsageError(`--rank needs a multi-rank folder; ${dir} is not one`);
    }
    return readSessionFolder(dir, args.limits);
  }
  return inFolder(dir, () => rankSession(ranked, args.rank!), 'the folder').session;
}

/** Which run of a session allocated a block of a diff: born (alive after), or freed (alive before). */
type RunOfBlock = (b: Block, born: boolean) => string | null;

/**
 * The cells of the session folder whose manifest lists both BEFORE and AFTER, so that `diff` names a
 * site as `session` does (`Cell [3], line 2`, not the kernel's `/tmp/ipykernel_.../123.py:2`); and, for
 * code several cells ran (copies of one cell share its code name), which run allocated each block, from
 * the folder's snapshots as `session` reads them (see BlockBirths). The folder is read only when a
 * site's code is several cells': naming one of them by guess would credit another run's memory.
 */
function pairCells(
  before: string,
  after: string,
  manifests: ManifestsBeside,
  frames: FrameTable,
  limits: IDecodeLimits
): { cells: CellCodeNames; runOf: RunOfBlock } | null {
  if (path.resolve(path.dirname(before)) !== path.resolve(path.dirname(after))) {
    return null;
  }
  let manifest: ISessionManifest | null;
  try {
    manifest = manifests(after);
  } catch (reason) {
    // The names are a courtesy: a manifest that cannot be read leaves the kernel's file names, not an error.
    if (reason instanceof SnapshotError) {
      return null;
    }
    throw reason;
  }
  const listed = (file: string) => manifest?.cells.some(c => c.snapshot_file === path.basename(file)) ?? false;
  if (!manifest || !listed(before) || !listed(after)) {
    return null;
  }
  let runs: RunOfBlock | null | undefined;
  const runOf: RunOfBlock = (b, born) => {
    runs ??= sessionRuns(
      path.dirname(after),
      [before, after].map(f => path.basename(f)) as [string, string],
      frames,
      limits
    );
    return runs ? runs(b, born) : null;
  };
  return { cells: sessionCells(manifest.cells), runOf };
}

/**
 * Which run of the session folder `dir` allocated each block of a diff of two of its snapshot files
 * (`files`, BEFORE and AFTER), by each run's manifest index as text; null where the folder cannot
 * tell (a file of it cannot be read: then no run is named by guess).
 */
function sessionRuns(
  dir: string,
  files: [string, string],
  frames: FrameTable,
  limits: IDecodeLimits
): RunOfBlock | null {
  let session: ISession;
  try {
    // The diff's frame table: a stack is then the same id in the diff's files and the session's.
    session = loadSession(
      readText(path.join(dir, 'manifest.json'), limits),
      name => readFolderFile(path.join(dir, name), limits),
      frames,
      limits
    );
  } catch (reason) {
    if (reason instanceof SnapshotError) {
      return null;
    }
    throw reason;
  }
  if (session.unreadable.some(u => u.part === 'cell')) {
    return null;
  }
  const cells = session.manifest.cells;
  const [before, after] = files.map(f => cells.findIndex(c => c.snapshot_file === f));
  const births = new BlockBirths(
    retentionByExecution(session.snapshots, kernelPositions(kernelSessionsOf(session.manifest)))
  );
  return (b, born) => {
    const run = births.runOf(b, born ? after : before);
    return run === null ? null : String(cells[run].index);
  };
}

const REVERSED_NOTE =
  'note: BEFORE was taken after AFTER (its history is newer): were the files given the wrong way round?';

/** What was left out of `session` because a file of it could not be read, in words (the message names the file). */
function unreadableLine(u: IUnreadableFile, session: ISession | undefined): string {
  const cell = session?.sourceCells.find(c => c.index === u.index);
  const name = printable(sessionCellName(u.index, cell ? cell.execution_count : null, cell?.label));
  switch (u.part) {
    case 'cell':
      return `${name} left out (the next cell's change counts from the cell before it): ${u.message}`;
    case 'oom-snapshot':
      return `${name}'s out-of-memory snapshot left out: ${u.message}`;
    case 'holders':
      return `${name}'s holders left out: ${u.message}`;
    case 'roles':
      return `${name}'s per-block roles left out: ${u.message}`;
  }
}

/** The files left out of a session, or of each rank of a multi-rank one (with its `rank`). */
function unreadableOf(
  session: ISession | null,
  ranked: IRankedSession | null
): (IUnreadableFile & { rank?: number })[] {
  if (ranked) {
    return ranked.ranks.flatMap(r => r.session.unreadable.map(u => ({ rank: r.rank, ...u })));
  }
  return session ? [...session.unreadable] : [];
}

/**
 * Run one command; returns the text for stdout. What a session left out
 * because a file could not be read goes to ``warn`` and leads the text (or
 * is the JSON's ``unreadable``): the rest is still reported.
 */
export function run(argv: string[], warn: (line: string) => void = () => undefined): string {
  const args = parseArgs(argv);
  const filter: IFrameFilterOptions = { allFrames: args.allFrames };
  let skipped: (IUnreadableFile & { rank?: number })[] = [];
  let skippedLines: string[] = [];
  const leftOut = (session: ISession | null, ranked: IRankedSession | null = null, more: IUnreadableFile[] = []) => {
    skipped = [...unreadableOf(session, ranked), ...more];
    // Each line names its cell as the rest of the text does, by the session (or rank) it belongs to.
    skippedLines = skipped.map(u =>
      u.rank === undefined
        ? unreadableLine(u, session ?? undefined)
        : `rank ${u.rank}: ${unreadableLine(u, ranked?.ranks.find(r => r.rank === u.rank)?.session)}`
    );
    skippedLines.forEach(line => warn(line));
  };
  // Text goes to a terminal: control characters from the data are escaped; JSON keeps them as data.
  const out = (json: unknown, text: () => string) => {
    if (args.json) {
      const withSkipped = skipped.length && json && typeof json === 'object' ? { ...json, unreadable: skipped } : json;
      return JSON.stringify(withSkipped, null, 2);
    }
    return printableLines([...skippedLines, text()].join('\n'));
  };
  switch (args.command) {
    case 'help':
      return USAGE;
    case 'version':
      return `cuda-memdiff ${packageVersion()}`;
    case 'summary': {
      expectOperands(args, 1, 'one FILE');
      const snapshot = readSnapshotFile(args.operands[0], new FrameTable(), args.limits);
      return out(summaryJson(snapshot), () => summaryText(snapshot));
    }
    case 'diff': {
      if (args.ranks) {
        expectOperands(args, 1, 'one RANKS_DIR with --ranks');
        const ranked = readRankedFolder(args.operands[0], args.limits);
        if (!ranked) {
          throw new UsageError(`--ranks needs a multi-rank folder; ${args.operands[0]} is not one`);
        }
        const [a, b] = args.ranks;
        // A refusal about the ranks (no rank 5, no capture point 9) names the folder, as the others do.
        return inFolder(
          args.operands[0],
          () => {
            const lengths = [a, b].map(r => rankSession(ranked, r).session.snapshots.length);
            const point = args.point ?? Math.max(0, Math.min(...lengths) - 1);
            return out(compareJson(ranked, a, b, point, filter), () => compareText(ranked, a, b, point, filter));
          },
          'the folder'
        );
      }
      expectOperands(args, 2, 'BEFORE and AFTER');
      const frames = new FrameTable();
      const before = readSnapshotFile(args.operands[0], frames, args.limits);
      const after = readSnapshotFile(args.operands[1], frames, args.limits);
      const diff = diffSnapshots(before, after);
      // Two runs' snapshots read as a leak (every block born and freed): said where what they carry tells.
      const apart = runMismatch(before, after);
      // Files given the wrong way round read as a diff backwards: said where their histories tell
      // (two runs' clocks say nothing of which came first).
      const newest = (s: Snapshot) => s.traces.reduce((t, e) => Math.max(t, e.timeUs ?? -Infinity), -Infinity);
      const afterNewest = newest(after);
      const reversed = !apart && Number.isFinite(afterNewest) && newest(before) > afterNewest;
      const notes = [...(apart ? [differentRunsNote(apart)] : []), ...(reversed ? [REVERSED_NOTE] : [])];
      const noted = (json: object, text: () => string) =>
        out(
          { ...json, different_runs: differentRunsJson(apart), ...(reversed ? { before_newer_than_after: true } : {}) },
          () => [...notes, text()].join('\n')
        );
      const [beforeFile, afterFile] = args.operands;
      // The cells' names and each file's roles come from one manifest: read once.
      const manifests = manifestsBeside(args.limits);
      const pair = pairCells(beforeFile, afterFile, manifests, frames, args.limits);
      const cells = pair?.cells;
      // Copies of one cell's code told apart by the run that allocated their blocks, as `session` does.
      const byRun = <T extends { sites: readonly AllocationSite[] }>(g: T) => ({ ...g, sites: bySite(g.sites) });
      const bySite = (sites: readonly AllocationSite[]) =>
        pair ? splitSitesByRun(sites, frames, pair.cells, pair.runOf) : [...sites];
      if (args.byRole) {
        const rolesBefore = rolesBeside(beforeFile, manifests, args.limits);
        const rolesAfter = rolesBeside(afterFile, manifests, args.limits);
        const roles = groupByRole(diff, rolesBefore, rolesAfter, filter).map(byRun);
        // Blocks kept on both sides that changed role: in each role's total, not in the groups above.
        const moves = roleMoves(diff, after, rolesBefore, rolesAfter);
        return noted(diffRolesJson(diff, roles, filter, cells, moves), () => diffRolesText(diff, roles, cells, moves));
      }
      const groups = bySite(groupBySite(diff, filter));
      return noted(diffJson(diff, groups, filter, cells), () => diffText(diff, groups, filter, cells));
    }
    case 'session': {
      expectOperands(args, 1, 'one DIR');
      const ranked = args.rank === null ? readRankedFolder(args.operands[0], args.limits) : null;
      if (ranked && args.byRole) {
        throw new UsageError(`--by role reads one session folder: ${args.operands[0]} has ranks, so add --rank N`);
      }
      if (ranked) {
        leftOut(null, ranked);
        return out(ranksJson(ranked, filter), () => ranksText(ranked, filter));
      }
      const session = readSessionOrRank(args);
      leftOut(session);
      const reports = reportCells(session, filter);
      const cells = sessionCells(session.sourceCells);
      // Bytes per role only (the manifest's rule has checked them): no roles file is read, so a bad one cannot
      // stop the report.
      const roles = sessionRoles(session.manifest, null);
      if (args.byRole && roles.every(r => r === null)) {
        throw new SnapshotError(
          `${sessionDir(args)}: no cell has recorded roles (record it with cuda_memdiff_kernel.recorder)`
        );
      }
      // Each cell's bytes alive after it by role; null where the cell was recorded without roles.
      const json = sessionJson(reports, session.manifest.cells, session.frames, filter, cells);
      json.cells.forEach((cell, k) => Object.assign(cell, { roles: roles[k]?.bytes ?? null }));
      // Only on a cell after cells left out: its change counts theirs.
      json.cells.forEach((cell, k) => Object.assign(cell, leftOutJson(session, k)));
      return out(json, () =>
        args.byRole
          ? sessionRolesText(reports, session.manifest.cells, roles)
          : sessionText(reports, session.manifest.cells, session.frames, cells, filter)
      );
    }
    case 'leaks': {
      expectOperands(args, 1, 'one DIR');
      const ranked = args.rank === null ? readRankedFolder(args.operands[0], args.limits) : null;
      if (ranked) {
        leftOut(null, ranked);
        return out(ranksJson(ranked, filter), () => ranksText(ranked, filter));
      }
      const session = readSessionOrRank(args);
      // The kernel's holders after the last cell, when the session was recorded with them.
      const holders = session.holders[session.holders.length - 1] ?? undefined;
      // Each cell's per-block roles, when recorded: a leak's reasons then say what its memory is for.
      // A roles file that cannot be read is left out of its cell, like a holders file.
      const dir = sessionDir(args);
      const badRoles: IUnreadableFile[] = [];
      const roles = inFolder(
        dir,
        () =>
          sessionRoles(
            session.manifest,
            name => readFolderFile(path.join(dir, name), args.limits),
            file => badRoles.push(file)
          ),
        'a file inside'
      );
      leftOut(session, null, badRoles);
      const report = findLeaks(session.snapshots, sessionExecutions(session.manifest), {
        holders,
        holdersAfter: session.holders,
        roles: roles.map(r => r?.blocks ?? null)
      });
      return out(leaksJson(report, session, filter), () => leaksText(report, session, filter));
    }
    default:
      throw new UsageError(`unknown command ${args.command}`);
  }
}

/**
 * A reader that stops early (`| head -1`) closes the pipe: that ends the
 * output, it is no error to report (Node would print EPIPE's stack trace).
 */
function endQuietlyOnClosedPipe(): void {
  process.stdout.on('error', (reason: NodeJS.ErrnoException) => {
    if (reason.code !== 'EPIPE') {
      throw reason;
    }
    process.exit();
  });
}

/** Exit code of a refusal: wrong arguments, or input that is not what the command reads. */
export const EXIT_REFUSED = 2;
/** Exit code of an error the CLI did not expect: a bug to report, never bad input. */
export const EXIT_BUG = 1;

/**
 * What `main` prints on stderr for a failure, and its exit code: refused
 * arguments and refused files exit 2 alike, so a script (or a fuzzer) tells a
 * bad input from a bug in the CLI, which alone exits 1.
 */
export function failureOf(reason: unknown): { code: number; text: string } {
  if (reason instanceof UsageError) {
    return { code: EXIT_REFUSED, text: `cuda-memdiff: ${reason.message}\n${USAGE}\n` };
  }
  if (reason instanceof SnapshotError) {
    return { code: EXIT_REFUSED, text: `cuda-memdiff: ${oneLine(reason.message)}\n` };
  }
  if (isFileSystemError(reason) && reason.path) {
    // A read this code did not expect to fail still names its path.
    return { code: EXIT_REFUSED, text: `cuda-memdiff: ${oneLine(fileProblem(reason.path, reason).message)}\n` };
  }
  const message = reason instanceof Error ? reason.message : String(reason);
  return { code: EXIT_BUG, text: `cuda-memdiff: unexpected error: ${oneLine(message)}\n` };
}

/** Entry point: prints the result, or one clear line on stderr and a non-zero exit. */
export function main(argv: string[]): number {
  endQuietlyOnClosedPipe();
  try {
    // With --json the left-out files are the JSON's; a person reading the terminal is told on stderr too.
    const json = argv.includes('--json');
    const warn = (line: string) => {
      if (json) {
        process.stderr.write(`cuda-memdiff: ${oneLine(line)}\n`);
      }
    };
    process.stdout.write(run(argv, warn) + '\n');
    return 0;
  } catch (reason) {
    const { code, text } = failureOf(reason);
    process.stderr.write(text);
    return code;
  }
}

/** An error message as one terminal-safe line (it may quote names from the file). */
function oneLine(message: string): string {
  return printableLines(message).replace(/\n/g, '\\n');
}
