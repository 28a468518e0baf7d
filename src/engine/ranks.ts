/**
 * Multi-rank sessions (docs/ranks-format.md): one session folder per rank of
 * a multi-process training job, `rank<R>/`, written by
 * `cuda_memdiff_kernel.ranks`, each capture point a "cell". This module
 * loads them into one frame table, so that a site is the same id on every
 * rank, and compares the ranks: memory per capture point, which rank grows
 * and from where, and one rank against another at the same point.
 */
import { DEFAULT_DECODE_LIMITS, IDecodeLimits } from './budget';
import { clip, SnapshotError } from './errors';
import { allocationSite, IFrameFilterOptions } from './frames';
import { FrameTable, isAllocated, Snapshot, totalBytes } from './model';
import { decodeText } from './read';
import { ISession, loadSession } from './session';

/** The index rank 0 writes (ranks.json); optional, the folders are enough. */
export const RANKS_INDEX = 'ranks.json';

/**
 * Most ranks a job may have: ten times the largest training jobs run (about
 * 100,000 GPUs). A world size or rank folder past it is a damaged index or
 * name, not a job, so it is refused. Not a decode limit: no file's decode
 * needs more, so there is nothing for a user to raise.
 */
export const MAX_WORLD_SIZE = 2 ** 20;

/** Ranks `first` to `last`, both included. */
export interface IRankRange {
  readonly first: number;
  readonly last: number;
}

/** `rank<R>` folder names, in rank order. */
export function rankFolders(names: readonly string[]): { rank: number; folder: string }[] {
  return names
    .map(folder => ({ folder, match: /^rank(\d+)$/.exec(folder) }))
    .filter(f => f.match)
    .map(f => ({ rank: Number(f.match![1]), folder: f.folder }))
    .sort((a, b) => a.rank - b.rank);
}

/** One rank's session. */
export interface IRankSession {
  readonly rank: number;
  readonly folder: string;
  readonly host: string | null;
  readonly session: ISession;
}

/** Every rank of a job, sharing one frame table. */
export interface IRankedSession {
  /** The job's world size (from the index or the manifests; else the number of ranks found). */
  readonly worldSize: number;
  readonly ranks: readonly IRankSession[];
  /** Ranks the world size promises that have no folder, as runs (a world of a million costs one entry). */
  readonly missing: readonly IRankRange[];
  readonly frames: FrameTable;
}

/** `2-4,999,999, 7`: runs of ranks as people read them (a run of one is its rank). */
export function formatRankRanges(ranges: readonly IRankRange[]): string {
  const n = (rank: number) => rank.toLocaleString('en-US');
  return ranges.map(r => (r.first === r.last ? n(r.first) : `${n(r.first)}-${n(r.last)}`)).join(', ');
}

/** How many ranks the runs hold. */
export function rankCount(ranges: readonly IRankRange[]): number {
  return ranges.reduce((sum, r) => sum + r.last - r.first + 1, 0);
}

/**
 * A file's world size, null where it gives none; refused where no job has it
 * (`where` names the file). Read as none, a world_size of "4" or 4.5 hid the
 * ranks the folder lacks: the report then named no missing rank.
 */
function worldSizeOf(value: unknown, where: string): number | null {
  if (value === undefined || value === null) {
    return null;
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new SnapshotError(
      `${where}: world_size must be a whole number of ranks, not ${clip(JSON.stringify(value) ?? String(value))}`
    );
  }
  checkWorldSize(value, where);
  return value;
}

/** Refuse a world size no job has; `where` names the file that gave it. */
function checkWorldSize(worldSize: number, where: string): void {
  if (worldSize > MAX_WORLD_SIZE) {
    throw new SnapshotError(
      `${where}: world_size ${worldSize.toLocaleString('en-US')} is more ranks than any job runs ` +
        `(at most ${MAX_WORLD_SIZE.toLocaleString('en-US')})`
    );
  }
}

/** The runs of ranks below `worldSize` that `have` (in rank order) lacks. */
function missingRanks(have: readonly number[], worldSize: number): IRankRange[] {
  const missing: IRankRange[] = [];
  let next = 0;
  for (const rank of have) {
    if (rank > next) {
      missing.push({ first: next, last: rank - 1 });
    }
    next = Math.max(next, rank + 1);
  }
  if (next < worldSize) {
    missing.push({ first: next, last: worldSize - 1 });
  }
  return missing;
}

/**
 * Load the ranks' session folders; `readFile(folder, name)` returns a file's
 * bytes, `indexText` is ranks.json's text when the folder has one, and
 * `limits` bound each snapshot's decode as for a single session.
 */
export function loadRankedSession(
  folders: readonly string[],
  readFile: (folder: string, name: string) => Uint8Array,
  indexText: string | null = null,
  limits: IDecodeLimits = DEFAULT_DECODE_LIMITS
): IRankedSession {
  const found = rankFolders(folders);
  if (found.length === 0) {
    throw new SnapshotError('no rank<N> folders, so it is not a multi-rank session');
  }
  // Before anything is read: rank99999999999999999999 is not even an exact number.
  const past = found.find(f => f.rank >= MAX_WORLD_SIZE);
  if (past) {
    throw new SnapshotError(
      `${past.folder}: a rank number past the ${MAX_WORLD_SIZE.toLocaleString('en-US')} ranks any job runs`
    );
  }
  let indexWorld: unknown = null;
  if (indexText !== null) {
    try {
      const index = JSON.parse(indexText) as { world_size?: unknown } | null;
      indexWorld = typeof index === 'object' && index !== null ? index.world_size : undefined;
    } catch (reason) {
      throw new SnapshotError(`${RANKS_INDEX} is not valid JSON (${(reason as Error).message})`);
    }
    indexWorld = worldSizeOf(indexWorld, RANKS_INDEX);
  }
  const frames = new FrameTable();
  const worlds: (number | null)[] = [];
  const ranks = found.map(({ rank, folder }) => {
    let manifestBytes: Uint8Array;
    try {
      manifestBytes = readFile(folder, 'manifest.json');
    } catch (reason) {
      // The reader's own words where it has them ("is a folder, not a file"); a missing one is said plainly.
      const said = reason instanceof SnapshotError && !/: no such file$/.test(reason.message);
      throw said ? reason : new SnapshotError(`${folder}: no manifest.json`);
    }
    const manifestText = decodeText(manifestBytes, `${folder}/manifest.json`);
    Private.checkOwnRank(manifestText, rank, folder);
    let session: ISession;
    try {
      session = loadSession(manifestText, name => readFile(folder, name), frames, limits);
    } catch (reason) {
      throw new SnapshotError(`${folder}: ${(reason as Error).message}`);
    }
    // Ranks are compared capture point by capture point, by position: one left out would shift the rest.
    const lost = session.unreadable.find(u => u.part === 'cell');
    if (lost) {
      throw new SnapshotError(`${folder}: ${lost.message}`);
    }
    const world = worldSizeOf(session.manifest.world_size, `${folder}/manifest.json`);
    const host = session.manifest.host;
    worlds.push(world);
    return { rank, folder, host: typeof host === 'string' ? host : null, session };
  });
  const manifestWorld = worlds.find(w => w !== null);
  const worldSize = Math.max((indexWorld as number | null) ?? manifestWorld ?? 0, ranks[ranks.length - 1].rank + 1);
  return {
    worldSize,
    ranks,
    missing: missingRanks(
      ranks.map(r => r.rank),
      worldSize
    ),
    frames
  };
}

/** One capture point of a rank. */
export interface IRankPoint {
  readonly index: number;
  readonly label: string;
  readonly step: number | null;
  /** Allocated bytes in the snapshot (all devices of the rank). */
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
  /** `torch.cuda.memory_allocated()` as the rank read it at the point, when recorded. */
  readonly memoryAllocated: number | null;
}

/** A rank's capture points. */
export function rankPoints(rank: IRankSession): IRankPoint[] {
  return rank.session.manifest.cells.map((cell, k) => {
    const extra = cell as unknown as { step?: unknown };
    const snapshot = rank.session.snapshots[k];
    return {
      index: cell.index,
      label: cell.label ?? `point ${cell.index}`,
      step: Number.isInteger(extra.step) ? (extra.step as number) : null,
      allocatedBytes: totalBytes(snapshot, 'allocatedBytes'),
      reservedBytes: totalBytes(snapshot, 'reservedBytes'),
      memoryAllocated: typeof cell.after?.allocated === 'number' ? cell.after.allocated : null
    };
  });
}

/** Live bytes per allocation site (frame id, -1 for no stack) in one snapshot. */
export function liveBytesBySite(snapshot: Snapshot, options: IFrameFilterOptions = {}): Map<number, number> {
  const bySite = new Map<number, number>();
  const siteOfStack = new Map<number, number>();
  for (const block of snapshot.blocks) {
    if (!isAllocated(block)) {
      continue;
    }
    let site = siteOfStack.get(block.stack);
    if (site === undefined) {
      site = allocationSite(snapshot.frames, block.stack, options);
      siteOfStack.set(block.stack, site);
    }
    bySite.set(site, (bySite.get(site) ?? 0) + block.size);
  }
  return bySite;
}

/** A site whose live memory grows from capture point to capture point. */
export interface IGrowingSite {
  readonly frameId: number;
  readonly bytesPerStep: number;
  readonly totalBytes: number;
}

/** How a rank's live memory moves over its optimizer-step capture points. */
export interface IRankGrowth {
  readonly rank: number;
  /** Optimizer steps between the first and the last step point (0: fewer than two). */
  readonly steps: number;
  readonly bytesPerStep: number;
  /** True when it rose at most intervals and by at least `GROWTH_FLOOR` per step. */
  readonly grows: boolean;
  /** Sites that grew, most per step first. */
  readonly sites: readonly IGrowingSite[];
}

/** Growth under a MiB per step is noise (allocator rounding, small temporaries). */
export const GROWTH_FLOOR = 1 << 20;

/**
 * A rank's growth between its step points (points a hand-placed `mark` made
 * are left out: they need not sit at comparable moments). The first step
 * point is the baseline, so the first step's gradients and optimizer state,
 * made once, are not growth.
 */
export function rankGrowth(rank: IRankSession, options: IFrameFilterOptions = {}): IRankGrowth {
  const points = rankPoints(rank);
  const at = points.map((p, k) => ({ p, k })).filter(({ p }) => p.step !== null && p.label.startsWith('step'));
  if (at.length < 2) {
    return { rank: rank.rank, steps: 0, bytesPerStep: 0, grows: false, sites: [] };
  }
  const first = at[0];
  const last = at[at.length - 1];
  const steps = last.p.step! - first.p.step!;
  let rises = 0;
  for (let i = 1; i < at.length; i++) {
    if (at[i].p.allocatedBytes > at[i - 1].p.allocatedBytes) {
      rises++;
    }
  }
  const total = last.p.allocatedBytes - first.p.allocatedBytes;
  const bytesPerStep = steps > 0 ? total / steps : 0;
  const grows = bytesPerStep >= GROWTH_FLOOR && rises * 2 > at.length - 1;
  const sites: IGrowingSite[] = [];
  if (grows) {
    const before = liveBytesBySite(rank.session.snapshots[first.k], options);
    const after = liveBytesBySite(rank.session.snapshots[last.k], options);
    for (const [frameId, bytes] of after) {
      const grew = bytes - (before.get(frameId) ?? 0);
      if (grew / steps >= GROWTH_FLOOR) {
        sites.push({ frameId, bytesPerStep: grew / steps, totalBytes: grew });
      }
    }
    sites.sort((a, b) => b.bytesPerStep - a.bytesPerStep);
  }
  return { rank: rank.rank, steps, bytesPerStep, grows, sites };
}

/**
 * What the ranks' growth says, as a code and its ranks. `all-*` speak of the
 * measured ranks; `unmeasured` are those with fewer than two step points,
 * too few to tell whether they grow.
 */
export type RanksVerdict =
  | { code: 'rank-grows'; growing: number[]; flat: number[]; unmeasured: number[] }
  | { code: 'all-grow'; growing: number[]; unmeasured: number[] }
  | { code: 'all-flat'; unmeasured: number[] }
  | { code: 'too-few-steps' };

/** The ranks' growth in one finding, as data for the CLI and the panel to word. */
export function ranksVerdict(growth: readonly IRankGrowth[]): RanksVerdict {
  // A rank with fewer than two step points has no growth to measure: it is neither flat nor growing.
  const measured = growth.filter(g => g.steps > 0);
  if (measured.length === 0) {
    return { code: 'too-few-steps' };
  }
  const unmeasured = growth.filter(g => g.steps === 0).map(g => g.rank);
  const growing = measured.filter(g => g.grows).map(g => g.rank);
  if (growing.length === 0) {
    return { code: 'all-flat', unmeasured };
  }
  if (growing.length === measured.length) {
    return { code: 'all-grow', growing, unmeasured };
  }
  return { code: 'rank-grows', growing, flat: measured.filter(g => !g.grows).map(g => g.rank), unmeasured };
}

/** Rank `rank` of the job; refused, naming the ranks there are, where no folder holds it. */
export function rankSession(ranked: IRankedSession, rank: number): IRankSession {
  const found = ranked.ranks.find(r => r.rank === rank);
  if (!found) {
    throw new SnapshotError(`no rank ${rank} (ranks: ${ranked.ranks.map(r => r.rank).join(', ')})`);
  }
  return found;
}

/** One site's live bytes on two ranks at the same capture point. */
export interface IRankSiteComparison {
  readonly frameId: number;
  readonly aBytes: number;
  readonly bBytes: number;
}

/**
 * Rank `a` against rank `b` at capture point `point` (the same point index
 * on both), by site: blocks of two processes are never the same block, so
 * they are compared by where they were allocated, not by address.
 */
export function compareRanks(
  ranked: IRankedSession,
  a: number,
  b: number,
  point: number,
  options: IFrameFilterOptions = {}
): IRankSiteComparison[] {
  const snapshotOf = (rank: number): Snapshot => {
    const r = rankSession(ranked, rank);
    const snapshot = r.session.snapshots[point];
    if (!snapshot) {
      // Points count from 0 while their labels count steps from 1: "no point 5 (it has 5)" read as a contradiction.
      const points = rankPoints(r);
      const last = points.length - 1;
      const range = points.length
        ? `its points are 0 (${points[0].label}) to ${last} (${points[last].label})`
        : 'it has none';
      throw new SnapshotError(`rank ${rank} has no capture point ${point}: ${range}`);
    }
    return snapshot;
  };
  const left = liveBytesBySite(snapshotOf(a), options);
  const right = liveBytesBySite(snapshotOf(b), options);
  const sites = new Set([...left.keys(), ...right.keys()]);
  return [...sites]
    .map(frameId => ({ frameId, aBytes: left.get(frameId) ?? 0, bBytes: right.get(frameId) ?? 0 }))
    .filter(s => s.aBytes !== s.bBytes)
    .sort((x, y) => Math.abs(y.bBytes - y.aBytes) - Math.abs(x.bBytes - x.aBytes));
}

namespace Private {
  /**
   * Refuse a rank folder whose manifest says another rank, before its snapshots are read: a folder copied from
   * another (cp -r rank0 rank1) compared the rank with itself, saying nothing. A manifest that is no JSON is
   * left to the session's reader, which says why.
   */
  export function checkOwnRank(manifestText: string, rank: number, folder: string): void {
    let says: unknown;
    try {
      says = (JSON.parse(manifestText) as { rank?: unknown } | null)?.rank;
    } catch {
      return;
    }
    if (typeof says === 'number' && says !== rank) {
      throw new SnapshotError(
        `${folder}/manifest.json says rank ${says}: each rank's folder holds that rank's own capture (a copy of rank${says}?)`
      );
    }
  }
}
