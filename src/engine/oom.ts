/**
 * The out-of-memory post-mortem: the request that failed against what the
 * device had free, whether fragmentation is to blame, and what filled the
 * device at that moment, from the snapshot taken when the allocation failed.
 */
import { diffSnapshots, SnapshotDiff } from './diff';
import { Snapshot } from './model';

/** What the kernel reported about the failed allocation (the wire's `oom` field). */
export interface IOomEvent {
  readonly device?: number;
  /** Bytes requested. */
  readonly alloc?: number;
  /** Bytes the device had free, as the driver said. */
  readonly device_free?: number;
}

/** Why an allocation failed. */
export interface IOomReport {
  readonly device: number;
  readonly requestBytes: number;
  /** Free device memory outside PyTorch's segments (null when unknown). */
  readonly deviceFreeBytes: number | null;
  /** The largest free range inside one reserved segment. */
  readonly largestFreeBlockBytes: number;
  /** Free bytes inside reserved segments, all together. */
  readonly segmentFreeBytes: number;
  /**
   * True when no free block was big enough but the free space in segments
   * was: after defragmenting (`expandable_segments`) the request would fit.
   */
  readonly fragmentation: boolean;
  /** What filled the device at that moment, against the cell's start. */
  readonly diff: SnapshotDiff;
  /** The snapshot taken when the allocation failed. */
  readonly atOom: Snapshot;
}

/**
 * The post-mortem of an OOM snapshot against the cell's start. The request
 * and free memory come from the kernel's report or, in snapshot files, from
 * the history's `oom` entry; null when neither says what was requested.
 */
export function oomReport(start: Snapshot, atOom: Snapshot, reported: IOomEvent = {}): IOomReport | null {
  let entry = null;
  for (const e of atOom.traces) {
    if (e.action === 'oom') {
      entry = e;
    }
  }
  const requestBytes = reported.alloc ?? entry?.size;
  if (requestBytes === undefined) {
    return null;
  }
  const device = reported.device ?? entry?.device ?? 0;
  const totals = atOom.totals.find(t => t.device === device);
  const largestFreeBlockBytes = totals?.largestFreeBytes ?? 0;
  const segmentFreeBytes = totals?.inactiveBytes ?? 0;
  return {
    device,
    requestBytes,
    deviceFreeBytes: reported.device_free ?? entry?.deviceFree ?? null,
    largestFreeBlockBytes,
    segmentFreeBytes,
    fragmentation: largestFreeBlockBytes < requestBytes && segmentFreeBytes >= requestBytes,
    diff: diffSnapshots(start, atOom),
    atOom
  };
}
