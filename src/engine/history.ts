/**
 * What happened between two snapshots, from the allocation history they
 * carry: the trace entries recorded after the first and up to the second.
 * Block identity cannot see a block freed and allocated again at the same
 * address with the same size and stack (a re-run cell); these entries can.
 */
import { Snapshot, TraceEntry } from './model';

/** The trace entries between two snapshots, in order, and whether none are missing. */
export interface IHistoryBetween {
  readonly entries: readonly TraceEntry[];
  /** False when some entries in between were lost (the ring buffer wrapped). */
  readonly complete: boolean;
}

/**
 * The entries `after` recorded since `before` was taken, or null when the
 * two carry no history that links them (no traces; snapshots of the wire
 * that are not consecutive captures).
 *
 * A live snapshot says which stretch it covers (`Snapshot.history`): it
 * follows `before` when it starts where `before` ended. A snapshot file holds
 * the whole ring buffer, so per device the entries after `before`'s newest
 * one are new; when that entry is gone from `after`'s buffer, it wrapped, and
 * the entries newer than it are all there is. An empty `before` (the first
 * cell) is followed by everything `after` recorded.
 */
export function historyBetween(before: Snapshot, after: Snapshot): IHistoryBetween | null {
  if (after.history) {
    const linked = before.history
      ? before.history.untilUs === after.history.sinceUs
      : after.history.sinceUs === null && before.blocks.length === 0;
    return linked ? { entries: after.traces, complete: after.history.complete } : null;
  }
  if (!after.traces.length || !inRecordingOrder(before.traces) || !inRecordingOrder(after.traces)) {
    return null;
  }
  const newest = new Map<number, TraceEntry>();
  for (const e of before.traces) {
    newest.set(e.device, e);
  }
  const byDevice = new Map<number, TraceEntry[]>();
  for (const e of after.traces) {
    let list = byDevice.get(e.device);
    if (!list) {
      list = [];
      byDevice.set(e.device, list);
    }
    list.push(e);
  }
  const entries: TraceEntry[] = [];
  let complete = true;
  for (const [device, list] of byDevice) {
    const mark = newest.get(device);
    if (mark === undefined) {
      if (before.blocks.some(b => b.device === device)) {
        return null; // `before` had memory on this device but no history: nothing links the two
      }
      append(entries, list);
      continue;
    }
    if (mark.timeUs === null || list[0].timeUs === null) {
      // Without times an entry is only its action, address and size, which a re-run repeats: nothing says
      // which of the buffer's entries came after `before`.
      return null;
    }
    let start = lastIndexOf(list, mark, 0) + 1;
    if (start === 0) {
      start = lastIndexOf(list, mark, SAME_ENTRY_US) + 1;
    }
    if (start === 0) {
      complete = false;
      start = list.findIndex(e => (e.timeUs ?? 0) > (mark.timeUs ?? 0));
      if (start < 0) {
        continue;
      }
    }
    append(entries, list, start);
  }
  return { entries, complete };
}

/**
 * Whether each device's entries read as a ring buffer lists them: every one
 * with a time and none going back (176 buffers recorded on an H200 never
 * did), or none with a time. Entries out of that order cannot be placed
 * against another snapshot's: a file whose times were reversed or dropped
 * would otherwise pass old blocks off as re-born.
 */
function inRecordingOrder(entries: readonly TraceEntry[]): boolean {
  const last = new Map<number, number | null>();
  for (const e of entries) {
    const before = last.get(e.device);
    if (before !== undefined && (before === null) !== (e.timeUs === null)) {
      return false;
    }
    if (before !== undefined && before !== null && e.timeUs !== null && e.timeUs < before) {
      return false;
    }
    last.set(e.device, e.timeUs);
  }
  return true;
}

/** Append `items` from `start` to `to` (a loop: a spread of a ring buffer's 120,000 entries overflows the call stack). */
function append<T>(to: T[], items: readonly T[], start = 0): void {
  for (let k = start; k < items.length; k++) {
    to.push(items[k]);
  }
}

/**
 * How far apart one entry's times may be in two snapshots: torch converts
 * its clock to µs anew for each, and 10 of 138 pairs of consecutive H200
 * snapshots gave some entry a time 1 µs off.
 */
const SAME_ENTRY_US = 2;

/** The last index in `list` of the entry `mark` (times within `slack` µs), or -1. */
function lastIndexOf(list: readonly TraceEntry[], mark: TraceEntry, slack: number): number {
  for (let k = list.length - 1; k >= 0; k--) {
    const e = list[k];
    if (
      e.action === mark.action &&
      e.address === mark.address &&
      e.size === mark.size &&
      Math.abs(e.timeUs! - mark.timeUs!) <= slack
    ) {
      return k;
    }
  }
  return -1;
}

/** True for the entry that returns a block to the allocator (`free_requested`; `free` in older torch). */
export function isFree(e: TraceEntry): boolean {
  return e.action === 'free_requested' || e.action === 'free';
}

/**
 * Per device, address -> size of the blocks allocated in `entries` and
 * still allocated at their end: the blocks of the later snapshot that were
 * (re)born in between, whatever their identity says.
 */
export function allocatedIn(entries: readonly TraceEntry[]): Map<number, Map<number, number>> {
  const out = new Map<number, Map<number, number>>();
  for (const e of entries) {
    if (e.address === null || (e.action !== 'alloc' && !isFree(e))) {
      continue;
    }
    let device = out.get(e.device);
    if (!device) {
      device = new Map();
      out.set(e.device, device);
    }
    if (e.action === 'alloc') {
      device.set(e.address, e.size);
    } else {
      device.delete(e.address);
    }
  }
  return out;
}
