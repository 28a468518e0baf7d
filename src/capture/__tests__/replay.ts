// A store filled from the kernel helper's real messages replaying a recorded session (dump_replay.py), as a
// live session fills it: for tests of what the frontend makes of the wire.
import * as path from 'path';
import { IWireSnapshot, WireDecoder } from '../../engine';
import { helperMessages, TEST_DATA } from '../../engine/__tests__/data';
import { SnapshotStore } from '../store';

/** The store after the helper replayed test-data/<under>/<name>, each message in order. */
export function replayedStore(name: string, under = 'recordings'): SnapshotStore {
  const store = new SnapshotStore();
  const decoder = new WireDecoder(store.frames);
  for (const m of helperMessages(path.join(TEST_DATA, under, name)) as IWireSnapshot[]) {
    if (m.type !== 'snapshot') {
      continue;
    }
    store.add({
      cellId: m.cell_id,
      executionCount: m.execution_count,
      reason: m.reason,
      seq: m.seq,
      snapshot: decoder.decode(m),
      devices: m.devices,
      before: m.before,
      peak: m.peak,
      error: m.error,
      source: m.source,
      replay: m.replay ?? null,
      oom: m.oom
    });
  }
  return store;
}
