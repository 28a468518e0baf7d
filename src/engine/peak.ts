/**
 * Peak anatomy: what was alive at a cell's peak. Replaying the allocation
 * history between the cell's start and its end over the blocks alive at its
 * start gives the allocated total after every entry; the moment of the
 * highest total is the peak (what `max_memory_allocated` reports, per
 * device), and the blocks alive then are what made it.
 */
import { cellOfRun } from './births';
import { CellCodeNames, codeAsRun, ICellSource, murmur2 } from './cells';
import { diffSnapshots, SnapshotDiff } from './diff';
import { allocationSite, IFrameFilterOptions } from './frames';
import { historyBetween, isFree } from './history';
import { Block, FrameTable, isAllocated, Snapshot, TraceEntry } from './model';

/** The blocks alive at a cell's peak. */
export interface IPeakAnatomy {
  /** Allocated bytes at the peak, summed over devices (each device's own peak). */
  readonly bytes: number;
  /** The blocks alive at the peak; those born in the cell have no segment (-1). */
  readonly alive: readonly Block[];
  /** The peak moment against the cell's start: born is what the cell added by then, freed what it had let go. */
  readonly diff: SnapshotDiff;
  /** False when history between start and end was lost: the peak may have been higher. */
  readonly complete: boolean;
}

/** Allocated bytes from one place: a notebook cell's line, or a file's. */
export interface ICellSite {
  /** The cell whose code allocated them, when the site is in a notebook cell. */
  readonly cell: ICellSource | null;
  /**
   * Every cell whose source is that code, when several are (copies of one
   * cell) and which of them ran it is unknown; `cell` is the first of them.
   */
  readonly sameSource?: readonly ICellSource[];
  /**
   * For code another process ran (`cell` is null; see
   * `CellCodeNames.sameCodeElsewhere`), the notebook's cells whose source
   * it is: what it resembles, not what this notebook ran.
   */
  readonly sameCodeElsewhere?: readonly ICellSource[];
  /** The line (inside the cell, for a cell); null without a Python stack. */
  readonly line: number | null;
  /**
   * The function a cell defined that allocated them (`train_step`), called
   * from any cell; null for the cell's own code and outside the notebook.
   */
  readonly function: string | null;
  readonly filename: string;
  /** The site frame id, or -1 without a Python stack. */
  readonly frameId: number;
  readonly bytes: number;
  readonly blocks: number;
}

/**
 * Why a history that links two snapshots gives no peak anatomy:
 * `not-this-snapshot`, its replay ends holding blocks the end snapshot does
 * not (a history of another session or device); `above-recorded`, it lost
 * entries and replays to a peak above torch's own figure for the cell.
 */
export type PeakContradiction = 'not-this-snapshot' | 'above-recorded';

/** The peak anatomy between two snapshots (see `peakAnatomy`), and why there is none where the history says why. */
export function explainPeak(
  start: Snapshot,
  end: Snapshot,
  recorded: number | null = null
): { anatomy: IPeakAnatomy | null; contradiction: PeakContradiction | null } {
  const found = replayPeak(start, end, recorded);
  return typeof found === 'string' ? { anatomy: null, contradiction: found } : { anatomy: found, contradiction: null };
}

/**
 * The anatomy of the peak between two snapshots, or null when no allocation
 * history links them (then only the kernel's peak figure is known), or when
 * the history contradicts them: with no entry lost, a replay that ends
 * holding blocks the end snapshot does not (a trace of another device or
 * session); with entries lost, a peak above `recorded`, torch's own figure
 * for the cell (entries give requested sizes, so a replay's peak is not
 * above it unless the cell reset torch's counters, and then a history with
 * nothing lost is the better witness).
 */
export function peakAnatomy(start: Snapshot, end: Snapshot, recorded: number | null = null): IPeakAnatomy | null {
  return explainPeak(start, end, recorded).anatomy;
}

function replayPeak(start: Snapshot, end: Snapshot, recorded: number | null): IPeakAnatomy | PeakContradiction | null {
  const history = historyBetween(start, end);
  if (!history) {
    return null;
  }
  const devices = new Set<number>();
  for (const b of start.blocks) {
    devices.add(b.device);
  }
  for (const e of history.entries) {
    devices.add(e.device);
  }
  for (const b of end.blocks) {
    devices.add(b.device);
  }
  const alive: Block[] = [];
  let bytes = 0;
  let complete = history.complete;
  for (const device of [...devices].sort((p, q) => p - q)) {
    const entries = history.entries.filter(e => e.device === device && e.address !== null);
    const live = new Map<number, Block>();
    let total = 0;
    for (const b of start.blocks) {
      if (b.device === device && isAllocated(b)) {
        live.set(b.address, b);
        total += b.size;
      }
    }
    // First pass: the highest total and the last entry after which it stood (-1: at the start). The last
    // such moment, so that a cell that frees and allocates as much again is seen with its own blocks.
    let highest = total;
    let at = -1;
    entries.forEach((e, k) => {
      total += step(live, e, device);
      if (total >= highest) {
        highest = total;
        at = k;
      }
    });
    // `total` is now the replay's allocated bytes at its end (each step returns its change to the live blocks).
    const { missing, extra, allowance } = againstEnd(live, total, end, device);
    if (history.complete && extra > allowance) {
      return 'not-this-snapshot';
    }
    complete = complete && missing <= allowance;
    // Second pass: the blocks alive at that moment.
    live.clear();
    for (const b of start.blocks) {
      if (b.device === device && isAllocated(b)) {
        live.set(b.address, b);
      }
    }
    for (let k = 0; k <= at; k++) {
      step(live, entries[k], device);
    }
    bytes += highest;
    for (const b of live.values()) {
      alive.push(b); // a loop: a spread of 120,000 blocks overflows the call stack
    }
  }
  if (!complete && recorded !== null && bytes > recorded + unaccountedAllowance(recorded)) {
    return 'above-recorded';
  }
  alive.sort((x, y) => x.device - y.device || x.address - y.address);
  const moment: Snapshot = { ...start, blocks: alive, traces: [], history: undefined };
  // The peak moment's blocks came from the history: compared by identity with the start, nothing more.
  const diff = diffSnapshots({ ...start, traces: [], history: undefined }, moment);
  return { bytes, alive, diff, complete };
}

/** Blocks alive at the end that the replay does not hold, beyond this share of the device's allocated bytes or
 * 1 MiB, mean lost history (a device without entries, a ring that wrapped, entries torch did not record): the
 * peak may have been higher. Below it, small allocations' entries give the requested size, not the block's. */
const UNACCOUNTED_SHARE = 0.01;
const UNACCOUNTED_BYTES = 2 ** 20;

/**
 * A replay's blocks at its end against the end snapshot's allocated blocks of the device: `missing`, the bytes
 * alive at the end that the replay does not hold (lost history); `extra`, the bytes the replay holds that are
 * not alive at the end (a history that is not this snapshot's); `allowance`, what rounding may account for
 * (small allocations' entries give the requested size, not the block's).
 */
function againstEnd(
  replayed: Map<number, Block>,
  replayedBytes: number,
  end: Snapshot,
  device: number
): { missing: number; extra: number; allowance: number } {
  let allocated = 0;
  let missing = 0;
  let matched = 0;
  for (const b of end.blocks) {
    if (b.device === device && isAllocated(b)) {
      allocated += b.size;
      const r = replayed.get(b.address);
      if (r === undefined) {
        missing += b.size;
      } else {
        matched += r.size;
      }
    }
  }
  return { missing, extra: replayedBytes - matched, allowance: unaccountedAllowance(allocated) };
}

/** Bytes two accounts of a device may differ by. */
function unaccountedAllowance(allocated: number): number {
  return Math.max(UNACCOUNTED_BYTES, allocated * UNACCOUNTED_SHARE);
}

/** Apply one history entry to the live blocks of a device; returns the change in allocated bytes. */
function step(live: Map<number, Block>, e: TraceEntry, device: number): number {
  if (e.address === null) {
    return 0;
  }
  if (e.action === 'alloc') {
    const block: Block = {
      device,
      address: e.address,
      size: e.size,
      requestedSize: e.size,
      state: 'active_allocated',
      stack: e.stack,
      segment: -1
    };
    const old = live.get(e.address);
    live.set(e.address, block);
    return e.size - (old?.size ?? 0);
  }
  if (isFree(e) || e.action === 'free_completed') {
    const old = live.get(e.address);
    if (old !== undefined) {
      live.delete(e.address);
      return -old.size;
    }
  }
  return 0;
}

/**
 * The function a cell defined that a frame in the cell's code is in, or null:
 * `<module>` is the cell's own code; `<listcomp>`, `<lambda>` name no
 * function a person called.
 */
export function cellFunction(frameName: string): string | null {
  return frameName.startsWith('<') ? null : frameName;
}

/**
 * Allocated bytes grouped by where they were allocated: the notebook cell and
 * line when the allocation site is in a cell, else the site's file and line
 * (`line` null and `filename` empty for blocks without a Python stack).
 * Largest first.
 *
 * `runOf`: the id of the cell whose run allocated a block, or null where that
 * is unknown (see `BlockBirths`). Code that several cells share (copies of one
 * cell) has one code name: a block of it is its run's cell's where that cell
 * is one of the copies; where it is not, or is unknown, the site names every
 * copy (`sameSource`), never one of them by guess.
 */
export function cellSites(
  blocks: readonly Block[],
  table: FrameTable,
  cells?: CellCodeNames,
  options: IFrameFilterOptions = {},
  runOf?: (b: Block) => string | null
): ICellSite[] {
  const groups = new Map<
    string,
    ICellSite & {
      bytes: number;
      blocks: number;
      sameSource?: readonly ICellSource[];
      sameCodeElsewhere?: readonly ICellSource[];
    }
  >();
  const siteOfStack = new Map<number, number>();
  for (const b of blocks) {
    if (!isAllocated(b)) {
      continue;
    }
    let site = siteOfStack.get(b.stack);
    if (site === undefined) {
      site = allocationSite(table, b.stack, options);
      siteOfStack.set(b.stack, site);
    }
    const frame = site < 0 ? null : table.frame(site);
    const match = frame ? cells?.lookup(frame.filename) : null;
    const own = match?.ambiguous && runOf ? cellOfRun(match.cells, runOf(b)) : undefined;
    const cell = own ?? match?.cells[0] ?? null;
    // Copies whose run is unknown are one site of their own, apart from the blocks a known run of them made; a
    // cell's line before an edit is other code than the same line now, and each code a deleted cell ran other
    // code than the rest: a site of its own.
    const copies = match?.ambiguous && !own;
    const code = cell && (cell.sourceAsRun !== undefined || cell.deleted) ? `:${murmur2(codeAsRun(cell))}` : '';
    const key = `${cell ? `${copies ? 'copies' : 'cell'}:${cell.id}${code}` : (frame?.filename ?? '')}:${frame?.line ?? ''}`;
    let g = groups.get(key);
    if (!g) {
      g = {
        cell,
        line: frame?.line ?? null,
        function: cell && frame ? cellFunction(frame.name) : null,
        filename: frame?.filename ?? '',
        frameId: site,
        bytes: 0,
        blocks: 0
      };
      if (copies) {
        g.sameSource = match.cells;
      }
      const elsewhere = !match && frame ? (cells?.sameCodeElsewhere(frame.filename) ?? []) : [];
      if (elsewhere.length) {
        g.sameCodeElsewhere = elsewhere;
      }
      groups.set(key, g);
    }
    g.bytes += b.size;
    g.blocks += 1;
  }
  return [...groups.values()].sort((p, q) => q.bytes - p.bytes || p.filename.localeCompare(q.filename));
}

/** A list of sites cut to its largest few, and what the others hold: in words it then adds up to its total. */
export interface ISitesInBrief {
  /** The largest sites, largest first. */
  readonly sites: readonly ICellSite[];
  /**
   * What the list leaves out: the number of sites cut and the bytes of the
   * total that the named sites do not account for (both 0 when nothing is).
   */
  readonly rest: { readonly sites: number; readonly bytes: number };
}

/**
 * The first `count` of `items` that a cut list shows, or all of them where
 * only one would be left out: a line saying "1 more site" takes that item's
 * room and hides it.
 */
export function shownOf<T>(items: readonly T[], count: number): T[] {
  return items.slice(0, items.length === count + 1 ? count + 1 : count);
}

/**
 * The largest `count` of `sites` (largest first, as `cellSites` gives them)
 * and the rest of `total` (by default the sites' sum; a peak's bytes, so
 * that memory no site accounts for is in the rest too); see shownOf.
 */
export function sitesInBrief(sites: readonly ICellSite[], count: number, total?: number): ISitesInBrief {
  const named = shownOf(sites, count);
  const all = total ?? sites.reduce((n, s) => n + s.bytes, 0);
  return {
    sites: named,
    rest: { sites: sites.length - named.length, bytes: Math.max(0, all - named.reduce((n, s) => n + s.bytes, 0)) }
  };
}
