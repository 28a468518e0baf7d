// A store filled from the kernel helper's real messages replaying a recorded session (dump_replay.py), as a
// live session fills it: for tests of what the frontend makes of the wire.
import * as fs from 'fs';
import * as path from 'path';
import { IWireSnapshot, WireDecoder } from '../../engine';
import { helperMessages, TEST_DATA } from '../../engine/__tests__/data';
import { SnapshotStore } from '../store';

/** The store after the helper replayed test-data/<under>/<name>, each message in order. */
export function replayedStore(name: string, under = 'recordings'): SnapshotStore {
  const store = new SnapshotStore();
  const decoder = new WireDecoder(store.frames);
  const folder = path.join(TEST_DATA, under, name);
  // dump_replay.py runs stand-in code (`step_0 = 0`) that the helper sends as the runs' code; the frames are the
  // recorded code's, which a live run of the recording would send.
  const recorded: string[] = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8')).cells.map(
    (c: { source: string }) => c.source
  );
  for (const m of helperMessages(folder) as IWireSnapshot[]) {
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
      source: m.cell_id === null ? null : (recorded[Number(m.cell_id.replace('cell-', ''))] ?? null),
      replay: m.replay ?? null,
      oom: m.oom
    });
  }
  return store;
}
