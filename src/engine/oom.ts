/**
 * The out-of-memory post-mortem: the request that failed against what the
 * device had free, whether fragmentation is to blame, and what filled the
 * device at that moment, from the snapshot taken when the allocation failed
 * (or, without one, from the cell's history and the snapshot after it).
 */
import { diffSnapshots, SnapshotDiff } from './diff';
import { historyBetween } from './history';
import { Block, isAllocated, Snapshot, TraceEntry } from './model';

/** What the kernel reported about the failed allocation (the wire's `oom` field). */
export interface IOomEvent {
  readonly device?: number;
  /**
   * Bytes the allocator asked the device for (torch gives its observers the
   * segment size it tried to map, rounded up to 2 or 20 MiB; the history's
   * `oom` entry has the block's own size, which is preferred where there is one).
   */
  readonly alloc?: number;
  /** Bytes the device had free, as the driver said. */
  readonly device_free?: number;
}

/**
 * What fragmentation means for the remedy: `enable-expandable-segments` when
 * the device's segments are fixed-size (`expandable_segments:True` would let
 * the allocator grow one to fit), `expandable-segments-on` when they already
 * are expandable, so that setting cannot help.
 */
export type FragmentationAdvice = 'enable-expandable-segments' | 'expandable-segments-on';

/**
 * Which moment the post-mortem's snapshot is: `error`, the snapshot taken when
 * the allocation failed; `cell-end`, the cell's own snapshot after it, for an
 * OOM known only from the cell's history (what the failing code held may have
 * been freed by then, so its free figures and holders are the cell's end);
 * `after-error`, a snapshot file whose trace goes on after its `oom` entry (it
 * was written later, e.g. after the exception was handled: its free figures
 * and holders are from then).
 */
export type OomSnapshotMoment = 'error' | 'cell-end' | 'after-error';

/** The figures of a post-mortem: what the views word, for a cell's report or a file's. */
export interface IOomFigures {
  readonly device: number;
  /** Bytes the failed allocation asked for; null where the file's `oom` entry does not say (no size, or 0). */
  readonly requestBytes: number | null;
  /** Free device memory outside PyTorch's segments (null when unknown). */
  readonly deviceFreeBytes: number | null;
  /** The largest free range inside one reserved segment of the device. */
  readonly largestFreeBlockBytes: number;
  /** Free bytes inside the device's reserved segments, all together. */
  readonly segmentFreeBytes: number;
  /** What the views say about the fragmentation; null without it. */
  readonly fragmentationAdvice: FragmentationAdvice | null;
  /**
   * How much more the request is than all the free memory together at the
   * error (the device's and the segments'): no defragmenting could have made
   * room, only freeing what filled the device or asking for less. 0 where it
   * would fit together; null where the request or the device's free memory
   * is unknown, or the segments' figures are of a later moment.
   */
  readonly shortBytes: number | null;
  /** Bytes this process's tensors held on the device then (its allocated blocks). */
  readonly heldBytes: number;
}

/**
 * What to do about an OOM, as the views word it: `fragmentation`, the
 * setting that helps (see FragmentationAdvice); `short`, the request was
 * `bytes` more than all the free memory together, and `beyondProcess` when
 * that is more than this process's tensors held (other processes, or memory
 * outside PyTorch's allocator, filled the device: freeing tensors here
 * cannot make room).
 */
export type OomVerdict =
  | { readonly kind: 'fragmentation'; readonly setting: FragmentationAdvice }
  | { readonly kind: 'short'; readonly bytes: number; readonly beyondProcess: boolean };

/** The verdict of a post-mortem's figures; null where they do not tell. */
export function oomVerdict(oom: IOomFigures): OomVerdict | null {
  if (oom.fragmentationAdvice) {
    return { kind: 'fragmentation', setting: oom.fragmentationAdvice };
  }
  if (oom.shortBytes) {
    return { kind: 'short', bytes: oom.shortBytes, beyondProcess: oom.shortBytes > oom.heldBytes };
  }
  return null;
}

/** Why an allocation failed, from one snapshot: what a file alone can tell. */
export interface IOomPostMortem extends IOomFigures {
  /**
   * True when no free block was big enough but the free space in segments
   * was: after defragmenting (`expandable_segments`) the request would fit.
   */
  readonly fragmentation: boolean;
  /** The allocated blocks of the device that ran out (not of the others): what filled it. */
  readonly held: readonly Block[];
  /** The snapshot the figures and the holders come from. */
  readonly atOom: Snapshot;
  /** Which moment `atOom` is. */
  readonly moment: OomSnapshotMoment;
}

/** Why a cell's allocation failed: the post-mortem, and what changed since the cell started. */
export interface IOomReport extends IOomPostMortem {
  /** What filled the device at that moment, against the cell's start (`atOom` against it). */
  readonly diff: SnapshotDiff;
}

/**
 * The post-mortem of an OOM snapshot against the cell's start. The request
 * and free memory come from the kernel's report or, in snapshot files, from
 * the history's newest `oom` entry (of the reported device, when one is);
 * null when neither says what was requested.
 */
export function oomReport(start: Snapshot, atOom: Snapshot, reported: IOomEvent = {}): IOomReport | null {
  const entry = oomEntry(atOom.traces, 'newest', reported.device);
  // The entry's size is the block's; the kernel's report, the segment size the allocator tried to map.
  const requestBytes = (entry ? knownRequest(entry.size) : null) ?? reported.alloc ?? entry?.size;
  if (requestBytes === undefined) {
    return null;
  }
  const event = {
    device: reported.device ?? entry?.device ?? 0,
    alloc: knownRequest(requestBytes),
    device_free: reported.device_free ?? entry?.deviceFree ?? undefined
  };
  return sinceCellStart(start, postMortem(atOom, event, 'error'));
}

/**
 * The post-mortem of one snapshot file (torch's `_dump_snapshot`, often
 * written from an OOM observer): its newest `oom` entry. A file has no cell
 * start, so nothing is diffed (against an empty device, the diff only
 * repeated the holders, and copied every block of a big file). Its moment is
 * `error` where the trace has nothing on that device after the entry (the
 * file holds the device as it was at the error), else `after-error`. Null
 * without an `oom` entry.
 */
export function fileOomReport(snapshot: Snapshot): IOomPostMortem | null {
  const entry = oomEntry(snapshot.traces, 'newest');
  if (!entry) {
    return null;
  }
  // The trace lists each device's entries in recording order.
  const at = snapshot.traces.indexOf(entry);
  const later = snapshot.traces.slice(at + 1).some(e => e.device === entry.device && e.action !== 'oom');
  const event = { device: entry.device, alloc: knownRequest(entry.size), device_free: entry.deviceFree ?? undefined };
  return postMortem(snapshot, event, later ? 'after-error' : 'error');
}

/**
 * The post-mortem of an OOM that only the cell's own history records (no
 * snapshot was taken at the error): the request and the device's free memory
 * from the cell's first `oom` entry, the segments' free space and the holders
 * from the cell's end snapshot, the best one there is (`moment: 'cell-end'`).
 * Null when the history between the two has no `oom` entry.
 */
export function oomFromHistory(start: Snapshot, end: Snapshot): IOomReport | null {
  if (!end.traces.some(e => e.action === 'oom')) {
    return null; // the common case, without building the history of every cell twice (its peak does too)
  }
  const history = historyBetween(start, end);
  // The first, as an OOM snapshot is of the cell's first OOM (the helper keeps one per cell).
  const entry = history ? oomEntry(history.entries, 'oldest') : null;
  if (!entry) {
    return null;
  }
  const event = { device: entry.device, alloc: knownRequest(entry.size), device_free: entry.deviceFree ?? undefined };
  return sinceCellStart(start, postMortem(end, event, 'cell-end'));
}

/** A request's bytes, or null: no allocation of 0 bytes reaches the allocator, so 0 is an entry without its size. */
function knownRequest(bytes: number): number | null {
  return bytes > 0 ? bytes : null;
}

/** A cell's post-mortem: what filled the device since `start`. */
function sinceCellStart(start: Snapshot, oom: IOomPostMortem): IOomReport {
  return { ...oom, diff: diffSnapshots(start, oom.atOom) };
}

/** The figures of one device in `snapshot`, against the request. */
function postMortem(
  snapshot: Snapshot,
  event: { device: number; alloc: number | null; device_free?: number },
  moment: OomSnapshotMoment
): IOomPostMortem {
  const { device, alloc: requestBytes } = event;
  const totals = snapshot.totals.find(t => t.device === device);
  const largestFreeBlockBytes = totals?.largestFreeBytes ?? 0;
  const segmentFreeBytes = totals?.inactiveBytes ?? 0;
  const fragmentation =
    requestBytes !== null && largestFreeBlockBytes < requestBytes && segmentFreeBytes >= requestBytes;
  const held = snapshot.blocks.filter(b => b.device === device && isAllocated(b));
  return {
    device,
    requestBytes,
    deviceFreeBytes: event.device_free ?? null,
    largestFreeBlockBytes,
    segmentFreeBytes,
    fragmentation,
    fragmentationAdvice: fragmentation ? fragmentationAdvice(snapshot, device) : null,
    // The segments' free space with the device's free memory of the same moment only: a snapshot taken
    // later (after the cell, or a file written after the error) may have released segments since.
    shortBytes:
      requestBytes === null || event.device_free === undefined || moment !== 'error'
        ? null
        : Math.max(0, requestBytes - event.device_free - segmentFreeBytes),
    heldBytes: held.reduce((n, b) => n + b.size, 0),
    held,
    atOom: snapshot,
    moment
  };
}

/**
 * Expandable segments are on when the device's segments are expandable:
 * torch marks each segment it maps under `expandable_segments:True` (the
 * kernel's wire carries the mark since its `expandable` column; an older
 * helper's snapshots say none is).
 */
function fragmentationAdvice(snapshot: Snapshot, device: number): FragmentationAdvice {
  return snapshot.segments.some(s => s.device === device && s.isExpandable)
    ? 'expandable-segments-on'
    : 'enable-expandable-segments';
}

/**
 * The newest or the oldest `oom` entry (of `device`, when given). The trace
 * list is ordered by device, not by time, so it is found by its time; entries
 * without one count as older than those with one, and among equal times the
 * later in the list is the newer.
 */
export function oomEntry(
  traces: readonly TraceEntry[],
  which: 'newest' | 'oldest',
  device?: number
): TraceEntry | null {
  const time = (e: TraceEntry) => e.timeUs ?? -Infinity;
  let found: TraceEntry | null = null;
  for (const e of traces) {
    if (e.action !== 'oom' || (device !== undefined && e.device !== device)) {
      continue;
    }
    if (found === null || (which === 'newest' ? time(e) >= time(found) : time(e) < time(found))) {
      found = e;
    }
  }
  return found;
}
