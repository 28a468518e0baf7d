/**
 * Session folders: `manifest.json` plus one snapshot pickle per executed
 * cell, the layout of the project's recordings and of "Export session"
 * (documented in docs/session-format.md). File access is injected, so the CLI
 * reads from disk and the panel from the contents API with the same code.
 */
import { BlockBirths, IRunSite, splitSitesByRun } from './births';
import { CellCodeNames, sessionCellName } from './cells';
import { diffSnapshots, groupBySite } from './diff';
import { clip, SnapshotError } from './errors';
import { IFrameFilterOptions } from './frames';
import { IBlockHolders, parseHolderAnswer } from './holders';
import { ILeakExecution } from './leaks';
import { Block, FrameTable, Snapshot, totalBytes } from './model';
import { IOomReport, oomFromHistory, oomReport } from './oom';
import { cellSites, explainPeak, ICellSite, IPeakAnatomy, PeakContradiction } from './peak';
import { kernelPositions, kernelsInOrder, retentionByExecution } from './retention';
import { DEFAULT_DECODE_LIMITS, IDecodeLimits } from './budget';
import { emptySnapshot, readSnapshot } from './snapshot';
import { readManifest } from './manifest';

/** Allocator statistics the recorder stores before and after a cell (summed over devices). */
export interface IAllocatorStats {
  allocated: number;
  reserved: number;
  /** Peak allocated during the cell (the wire's name; older manifests say max_allocated). */
  peak_allocated?: number;
  peak_reserved?: number;
  /** The same peaks in manifests written before they took the wire's names. */
  max_allocated?: number;
  max_reserved?: number;
  /** False when torch's peak counters were not reset for the cell and it stayed under the high-water mark:
   * `peak_allocated` is then that mark, an upper bound of the cell's peak (an export of a passive session). */
  peak_exact?: boolean;
  device_free?: number;
  device_total?: number;
  per_device?: (IAllocatorStats & { device: number })[];
}

/** One executed cell in a manifest. */
export interface ISessionCell {
  index: number;
  execution_count: number | null;
  source: string;
  snapshot_file: string;
  cell_id?: string;
  /**
   * What the writer calls the cell, where it is no notebook cell: a capture
   * point of a multi-rank job (`step 4`, the text of a `mark`). A labelled
   * cell is named by it (see sessionCellName); absent for notebook cells.
   */
  label?: string;
  error?: string | null;
  oom_snapshots?: string[];
  /** The kernel's holders of the live blocks after the cell (`recorder --holders`). */
  holders_file?: string;
  /** Bytes alive after the cell by role (docs/session-format.md, Roles). */
  roles?: ISessionCell.IRoles;
  /** The role of each live block after the cell (`cellNN.roles.json`). */
  roles_file?: string;
  /**
   * The kernel session the cell ran in: a different value than the cell
   * before means the kernel restarted (or changed) in between. Absent: the
   * kernel of the cell before (a folder without it is one kernel).
   */
  kernel_session?: number;
  /**
   * Which stretch of allocation history the cell's snapshot file carries, as
   * the live snapshot it was exported from said (`TraceHistory`): its traces
   * are every entry since the cell before's capture. Absent: the file's
   * traces are a ring buffer, read as torch writes it.
   */
  history?: { since_us: number | null; until_us: number | null; complete: boolean };
  before?: IAllocatorStats;
  after?: IAllocatorStats;
}

/** The types of a session cell's fields. */
export namespace ISessionCell {
  /** What the kernel's role pass found after the cell: bytes per role, and whether it ran out of time. */
  export interface IRoles {
    bytes: Record<string, number>;
    partial?: boolean;
    elapsed_ms?: number;
    reused?: boolean;
  }
}

/** The manifest of a session folder (fields the engine reads; others are kept as they are). */
export interface ISessionManifest {
  cells: ISessionCell[];
  device_count?: number;
  [key: string]: unknown;
}

/** A loaded session: its manifest and one snapshot per cell, sharing one FrameTable. */
export interface ISession {
  readonly manifest: ISessionManifest;
  readonly snapshots: readonly Snapshot[];
  readonly frames: FrameTable;
  /** Per cell, the kernel's holders after it, when recorded. */
  readonly holders: readonly (IBlockHolders | null)[];
  /** Per cell, the snapshot taken at its first out-of-memory error, when recorded. */
  readonly oomSnapshots: readonly (Snapshot | null)[];
  /**
   * The files that could not be read, each with why. A cell whose snapshot
   * is one is left out (`manifest.cells` lists the others, so the next
   * cell's change is measured from the cell before it); an OOM snapshot or a
   * holders file that is one is left out of its cell.
   */
  readonly unreadable: readonly IUnreadableFile[];
  /** Every cell of the manifest, read or left out: what names a cell's code where a frame shows it. */
  readonly sourceCells: readonly ISessionCell[];
  /**
   * Per cell of `manifest.cells`, the cells left out just before it in its
   * kernel (positions in `sourceCells`): its change counts theirs too.
   */
  readonly leftOutBefore: readonly (readonly number[])[];
  /** Per cell of `manifest.cells`, its position in `sourceCells`. */
  readonly positions: readonly number[];
}

/** A file of a session folder that could not be read, and the cell (manifest index) it belongs to. */
export interface IUnreadableFile {
  readonly index: number;
  readonly file: string;
  readonly message: string;
  /**
   * What was left out: the cell (its snapshot), or only its OOM snapshot,
   * holders or per-block roles (`sessionRoles` reports those: a command reads
   * them only where it uses them).
   */
  readonly part: 'cell' | 'oom-snapshot' | 'holders' | 'roles';
}

/** What one cell did to GPU memory. */
export interface ICellReport {
  readonly index: number;
  readonly executionCount: number | null;
  /** The manifest's label of the cell (a capture point's `step 4`), null for a notebook cell. */
  readonly label: string | null;
  /** The kernel session the cell ran in (the manifest's `kernel_session`, filled in where absent). */
  readonly kernelSession: number;
  /** Position of that kernel among the session's kernels (0 for the first). */
  readonly kernel: number;
  /** True for the first cell after a kernel restart: it starts from an empty device. */
  readonly afterRestart: boolean;
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
  readonly netBytes: number;
  /** Peak allocated during the cell, from the manifest; null when it has none. */
  readonly peakBytes: number | null;
  /** False when `peakBytes` is only an upper bound (the manifest's `peak_exact`). */
  readonly peakExact: boolean;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly error: string | null;
  /** True when the cell ran out of memory: it has an OOM snapshot, or its history an `oom` entry. */
  readonly oom: boolean;
  /**
   * The cell's first out-of-memory error: what failed and what filled the
   * device, from its OOM snapshot, else from its own history and end snapshot
   * (null: none, or no request known).
   */
  readonly oomReport: IOomReport | null;
  /** What was alive at the cell's peak, from the allocation history (null: the snapshots carry none). */
  readonly peak: IPeakAnatomy | null;
  /** Why `peak` is null where the cell's history says why (it contradicts the snapshots), else null. */
  readonly peakContradiction: PeakContradiction | null;
  /**
   * What was alive at the peak by cell and line (`cellSites`), largest first,
   * each block credited to the run that allocated it (see BlockBirths); null
   * without `peak`.
   */
  readonly peakSites: readonly ICellSite[] | null;
  /** What filled the device at the out-of-memory error, as `peakSites`; null without `oomReport`. */
  readonly oomSites: readonly ICellSite[] | null;
  /** The largest changes by allocation site, copies of one cell's code told apart by the run that allocated them. */
  readonly sites: readonly IRunSite[];
}

/**
 * Validate a manifest's JSON text by the rule it shares with the kernel
 * helper (manifest.ts); errors name the field at fault. Then refuse cells out
 * of execution order, which only the analysis needs.
 */
export function parseManifest(text: string): ISessionManifest {
  // The rule checked every field ISessionCell types, and filled in those it does not make optional.
  const manifest = readManifest(text) as ISessionManifest;
  checkExecutionOrder(manifest);
  return manifest;
}

/**
 * Refuse cells listed out of execution order within one kernel session:
 * each cell's change is measured from the cell before it, so a reversed list
 * reads frees as allocations and hides a real leak. Every writer (the
 * recorder, Export session, ranks) lists cells as they ran, and counts start
 * again only after a restart, which `kernel_session` marks. Equal counts are
 * allowed: a cell run without storing history keeps the count of the last.
 */
function checkExecutionOrder(manifest: ISessionManifest): void {
  const kernels = kernelSessionsOf(manifest);
  // Each cell is named by its place in the list, which is what a person edits, and by its prompt.
  const named = (k: number) =>
    `cells[${k}] (${sessionCellName(manifest.cells[k].index, manifest.cells[k].execution_count, manifest.cells[k].label)})`;
  let last: { at: number; count: number; kernel: number } | null = null;
  manifest.cells.forEach((cell, k) => {
    const count = cell.execution_count;
    if (count === null) {
      return;
    }
    if (last && last.kernel === kernels[k] && count < last.count) {
      throw new SnapshotError(
        `manifest.json: cells are not in execution order: ${named(last.at)} comes before ${named(k)} in one ` +
          'kernel session (a restart between them needs kernel_session)'
      );
    }
    last = { at: k, count, kernel: kernels[k] };
  });
}

/**
 * Each cell's kernel, numbered 1, 2, ... in the order the kernels ran
 * (kernelsInOrder), whatever numbers the manifest holds: older exports wrote
 * the frontend's own count (0 or higher, with gaps). A cell without one is
 * in the kernel of the cell before (cells before the first that has one: that
 * cell's; none at all: kernel 1, so a folder written before the field
 * existed is one kernel).
 */
export function kernelSessionsOf(manifest: ISessionManifest): number[] {
  if (NUMBERED.has(manifest)) {
    return manifest.cells.map(cell => cell.kernel_session!);
  }
  return kernelsInOrder(manifest.cells.map(cell => cell.kernel_session));
}

// Manifests loadSession returned with cells left out, whose cells carry the kernel numbers read from the
// whole manifest: numbered again over the cells kept, a kernel none of whose cells could be read would shift
// the later ones down.
const NUMBERED = new WeakSet<ISessionManifest>();

/**
 * Load every cell's snapshot; `readFile` returns a file's bytes by its name
 * in the folder. A file that cannot be read is left out with why
 * (`unreadable`), so one broken cell loses nothing else; a session none of
 * whose cells can be read is refused with the first cell's reason.
 */
export function loadSession(
  manifestText: string,
  readFile: (name: string) => Uint8Array,
  // One table for several sessions (the ranks of a job) makes a site the same id in each.
  frames = new FrameTable(),
  limits: IDecodeLimits = DEFAULT_DECODE_LIMITS
): ISession {
  const manifest = parseManifest(manifestText);
  const unreadable: IUnreadableFile[] = [];
  // Each read that fails is noted and gives null.
  const attempt = <T>(cell: ISessionCell, part: IUnreadableFile['part'], file: string, read: () => T): T | null => {
    try {
      return read();
    } catch (reason) {
      if (!(reason instanceof SnapshotError)) {
        throw reason;
      }
      unreadable.push({ index: cell.index, file, message: reason.message, part });
      return null;
    }
  };
  const read = (name: string) => {
    let bytes: Uint8Array;
    try {
      bytes = readFile(name);
    } catch (reason) {
      throw new SnapshotError(`manifest.json names ${clip(name)}, which cannot be read (${(reason as Error).message})`);
    }
    try {
      return readSnapshot(bytes, frames, limits);
    } catch (reason) {
      throw new SnapshotError(`${clip(name)}: ${(reason as Error).message}`);
    }
  };
  const readHolders = (name: string) => {
    let answer: unknown;
    try {
      answer = JSON.parse(new TextDecoder().decode(readFile(name)));
    } catch (reason) {
      // JSON.parse quotes the text it met: for a binary file, raw bytes on the terminal
      throw new SnapshotError(
        `${clip(name)} cannot be read as JSON${reason instanceof SyntaxError ? '' : ` (${(reason as Error).message})`}`
      );
    }
    try {
      return parseHolderAnswer(answer).holders;
    } catch (reason) {
      throw new SnapshotError(`${clip(name)}: ${(reason as Error).message}`);
    }
  };
  const kept: number[] = [];
  const snapshots: Snapshot[] = [];
  manifest.cells.forEach((cell, k) => {
    const snapshot = attempt(cell, 'cell', cell.snapshot_file, () => read(cell.snapshot_file));
    if (snapshot) {
      // The stretch follows the cell before in the manifest: after a cell left out, the file is read alone.
      const h = cell.history && (k === 0 || kept[kept.length - 1] === k - 1) ? cell.history : undefined;
      kept.push(k);
      snapshots.push(
        h ? { ...snapshot, history: { sinceUs: h.since_us, untilUs: h.until_us, complete: h.complete } } : snapshot
      );
    }
  });
  // A cell left out passes its kernel on: each kept cell's is the one read from the whole manifest.
  const kernels = kept.length < manifest.cells.length ? kernelSessionsOf(manifest) : null;
  const cells = kernels ? kept.map(k => ({ ...manifest.cells[k], kernel_session: kernels[k] })) : manifest.cells;
  if (!cells.length && unreadable.length) {
    throw new SnapshotError(unreadable[0].message);
  }
  const oomSnapshots = cells.map(cell => {
    const name = cell.oom_snapshots?.[0];
    return name === undefined ? null : attempt(cell, 'oom-snapshot', name, () => read(name));
  });
  const holders = cells.map(cell => {
    const name = cell.holders_file;
    return name ? attempt(cell, 'holders', name, () => readHolders(name)) : null;
  });
  const loaded = { ...manifest, cells };
  if (kernels) {
    NUMBERED.add(loaded);
  }
  return {
    manifest: loaded,
    snapshots,
    frames,
    holders,
    oomSnapshots,
    unreadable,
    sourceCells: manifest.cells,
    leftOutBefore: leftOutBefore(kept, kernels),
    positions: kept
  };
}

/**
 * Per kept cell (positions in the manifest), the positions of the cells left
 * out since the kept cell before it. A left-out cell of an earlier kernel is
 * nobody's: the kernel restarted after it, and its memory went with it.
 */
function leftOutBefore(kept: readonly number[], kernels: readonly number[] | null): number[][] {
  return kept.map((k, i) => {
    const since: number[] = [];
    for (let j = i ? kept[i - 1] + 1 : 0; kernels && j < k; j++) {
      if (kernels[j] === kernels[k]) {
        since.push(j);
      }
    }
    return since;
  });
}

/**
 * The cells of a session folder (`ISession.sourceCells`) by the code names
 * their frames carry, each keyed by its manifest index as text.
 */
export function sessionCellNames(cells: readonly ISessionCell[]): CellCodeNames {
  return new CellCodeNames(
    cells.map(c => ({ id: String(c.index), source: c.source, executionCount: c.execution_count }))
  );
}

/** Per cell: memory after it, the change it made, and the sites behind the change. */
export function reportCells(
  session: ISession,
  options: IFrameFilterOptions & { topSites?: number } = {}
): ICellReport[] {
  const deviceCount = session.snapshots.reduce((n, s) => Math.max(n, s.totals.length), 0);
  const empty = emptySnapshot(session.frames, deviceCount);
  const ids = kernelSessionsOf(session.manifest);
  const kernels = kernelPositions(ids);
  // Which run allocated each block: copies of one cell's code share a code name, the snapshots tell them apart.
  const births = new BlockBirths(retentionByExecution(session.snapshots, kernels));
  const names = sessionCellNames(session.sourceCells);
  const cellOf = (run: number | null) => (run === null ? null : String(session.manifest.cells[run].index));
  return session.manifest.cells.map((cell, k) => {
    const snapshot = session.snapshots[k];
    // After a restart the new process starts from an empty device, not from the old one's last figures.
    const afterRestart = k > 0 && kernels[k] !== kernels[k - 1];
    const start = k === 0 || afterRestart ? empty : session.snapshots[k - 1];
    const diff = diffSnapshots(start, snapshot);
    const peak = cell.after?.peak_allocated ?? cell.after?.max_allocated;
    const atOom = session.oomSnapshots?.[k] ?? null;
    // Without an OOM snapshot, an OOM in the cell's history is reported from the cell's end snapshot, the
    // best there is: its free figures and holders are after the cell (`moment: 'cell-end'`), not at the error.
    const oom = atOom ? oomReport(start, atOom) : oomFromHistory(start, snapshot);
    const found = explainPeak(start, snapshot, typeof peak === 'number' ? peak : null);
    // A peak's blocks its history allocated have no segment; the others were alive at the cell's start.
    const atPeak = births.runsAt(k, b => b.segment < 0);
    const oomBorn = new Set(oom?.diff.born ?? []);
    const atOomRun = births.runsAt(k, b => oomBorn.has(b));
    // A diff's born blocks are alive after the cell, its freed ones before it.
    const changed = (b: Block, born: boolean) => cellOf(born ? births.runOf(b, k) : births.runOf(b, k - 1));
    return {
      index: cell.index,
      executionCount: cell.execution_count,
      label: cell.label ?? null,
      kernelSession: ids[k],
      kernel: kernels[k],
      afterRestart,
      allocatedBytes: totalBytes(snapshot, 'allocatedBytes'),
      reservedBytes: totalBytes(snapshot, 'reservedBytes'),
      netBytes: diff.netBytes,
      peakBytes: typeof peak === 'number' ? peak : null,
      peakExact: cell.after?.peak_exact !== false,
      bornBytes: diff.bornBytes,
      freedBytes: diff.freedBytes,
      error: cell.error ?? null,
      oom: (cell.oom_snapshots?.length ?? 0) > 0 || oom !== null,
      oomReport: oom,
      peak: found.anatomy,
      peakContradiction: found.contradiction,
      peakSites: found.anatomy
        ? cellSites(found.anatomy.alive, session.frames, names, options, b => cellOf(atPeak(b)))
        : null,
      oomSites: oom ? cellSites(oom.held, session.frames, names, options, b => cellOf(atOomRun(b))) : null,
      sites: splitSitesByRun(groupBySite(diff, options), session.frames, names, changed).slice(0, options.topSites ?? 3)
    };
  });
}

/**
 * The session's cells as executions for `findLeaks`, each with its kernel
 * session (the same cell and count name several executions once the session
 * spans kernel restarts; the CLI names them, cli/runNames.ts).
 */
export function sessionExecutions(manifest: ISessionManifest): ILeakExecution[] {
  const ids = kernelSessionsOf(manifest);
  return manifest.cells.map((cell, k) => ({
    cellId: String(cell.index),
    executionCount: cell.execution_count,
    source: cell.source,
    error: cell.error ?? null,
    kernelSession: ids[k]
  }));
}
