/**
 * Whether two snapshots can be one run's before and after.
 *
 * A diff reads AFTER as what BEFORE became. Given snapshots of two processes
 * (another session, another GPU, another rank), it counts every block of one
 * as freed and every block of the other as born, which reads as a leak. A
 * snapshot names no process, so what tells is what one process keeps from one
 * snapshot to the next: its segments (until emptied), its device count, and
 * its allocation history, a ring buffer whose entries a later snapshot shares
 * wherever their times overlap. Anything shared is taken as one run; only
 * where nothing is shared and something differs are the runs called apart.
 */
import { Snapshot, TraceEntry } from './model';

/** One thing two snapshots disagree on that one process would not. */
export type RunEvidence =
  /** The processes saw different numbers of devices (CUDA_VISIBLE_DEVICES, another machine). */
  | { readonly code: 'device-count'; readonly before: number; readonly after: number }
  /** Both histories cover a stretch of time on `device` but share no entry: two clocks, two processes. */
  | { readonly code: 'history-apart'; readonly device: number }
  /** Both hold segments and share none (none at one address with one size), so no block either. */
  | { readonly code: 'segments-apart'; readonly beforeSegments: number; readonly afterSegments: number };

/** Why two snapshots look like they come from different runs. */
export interface IRunMismatch {
  /** What disagrees, in the order above; never empty. */
  readonly evidence: readonly RunEvidence[];
}

/**
 * Time two histories must overlap by before sharing no entry counts: one
 * process's threads stamp entries out of order by microseconds, so a history
 * that wrapped right after BEFORE can start a hair before BEFORE's newest entry.
 */
export const HISTORY_OVERLAP_SLACK_US = 1000;

/**
 * Why `before` and `after` look like snapshots of different runs; null when
 * something they share says one run (a segment or a history entry),
 * or nothing they carry says otherwise (an empty device, no history).
 */
export function runMismatch(before: Snapshot, after: Snapshot): IRunMismatch | null {
  if (Private.shareSegment(before, after)) {
    return null;
  }
  const apart: RunEvidence[] = [];
  for (const device of Private.devicesOf(before.traces)) {
    const shared = Private.historyShared(before.traces, after.traces, device);
    if (shared === 'shared') {
      return null;
    }
    if (shared === 'apart') {
      apart.push({ code: 'history-apart', device });
    }
  }
  const evidence: RunEvidence[] = [];
  if (before.deviceCount !== undefined && after.deviceCount !== undefined && before.deviceCount !== after.deviceCount) {
    evidence.push({ code: 'device-count', before: before.deviceCount, after: after.deviceCount });
  }
  evidence.push(...apart);
  // An empty device shares nothing with anything: only two that hold memory can hold it apart.
  if (before.segments.length && after.segments.length) {
    evidence.push({
      code: 'segments-apart',
      beforeSegments: before.segments.length,
      afterSegments: after.segments.length
    });
  }
  return evidence.length ? { evidence } : null;
}

namespace Private {
  /**
   * A segment in both: at one address, of one size. Another process on the
   * same GPU reserves at the same addresses (the H200's ranks and recordings
   * do), but rarely the same sizes there; only an expandable segment grows in place.
   */
  export function shareSegment(a: Snapshot, b: Snapshot): boolean {
    const xs = a.segments;
    const ys = b.segments;
    let i = 0;
    let j = 0;
    while (i < xs.length && j < ys.length) {
      const [x, y] = [xs[i], ys[j]];
      const order = x.device - y.device || x.address - y.address;
      if (order === 0 && (x.totalSize === y.totalSize || x.isExpandable || y.isExpandable)) {
        return true;
      }
      if (order <= 0) {
        i++;
      } else {
        j++;
      }
    }
    return false;
  }

  /** The devices with timed history entries. */
  export function devicesOf(traces: readonly TraceEntry[]): number[] {
    return [...new Set(traces.filter(e => e.timeUs !== null).map(e => e.device))];
  }

  /**
   * What two histories say on one device: `shared` when they hold an entry
   * in common; `apart` when their times overlap (by more than the slack) and
   * they hold none, which one process's ring buffer cannot do; `silent` else
   * (one has none, or one ends before the other starts: a ring that wrapped
   * looks the same as a later process).
   */
  export function historyShared(
    a: readonly TraceEntry[],
    b: readonly TraceEntry[],
    device: number
  ): 'shared' | 'apart' | 'silent' {
    const timed = (t: readonly TraceEntry[]) => t.filter(e => e.device === device && e.timeUs !== null);
    const xs = timed(a);
    const ys = timed(b);
    if (!xs.length || !ys.length) {
      return 'silent';
    }
    // A loop, not Math.min(...): a history of millions of entries overflows the call's arguments.
    const span = (t: TraceEntry[]) => {
      let lo = Infinity;
      let hi = -Infinity;
      for (const e of t) {
        lo = Math.min(lo, e.timeUs!);
        hi = Math.max(hi, e.timeUs!);
      }
      return [lo, hi];
    };
    const [x0, x1] = span(xs);
    const [y0, y1] = span(ys);
    const from = Math.max(x0, y0);
    const to = Math.min(x1, y1);
    if (from > to) {
      return 'silent';
    }
    // Entries of one stamp, by what the allocator wrote: one process writes the same entry into both.
    const byTime = new Map<number, TraceEntry[]>();
    for (const e of ys) {
      if (e.timeUs! >= from && e.timeUs! <= to) {
        const at = byTime.get(e.timeUs!) ?? [];
        at.push(e);
        byTime.set(e.timeUs!, at);
      }
    }
    const alike = (e: TraceEntry, f: TraceEntry) =>
      e.action === f.action && e.address === f.address && e.size === f.size && e.stream === f.stream;
    if (xs.some(e => byTime.get(e.timeUs!)?.some(f => alike(e, f)))) {
      return 'shared';
    }
    return to - from > HISTORY_OVERLAP_SLACK_US ? 'apart' : 'silent';
  }
}
