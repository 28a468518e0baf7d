// A store filled from the kernel helper's real messages replaying a recorded session (dump_replay.py), as a
// live session fills it: for tests of what the frontend makes of the wire.
import * as fs from 'fs';
import * as path from 'path';
import { IWireSnapshot, WireDecoder } from '../../engine';
import { helperMessages, TEST_DATA } from '../../engine/__tests__/data';
import { SnapshotStore } from '../store';

/**
 * The store after the helper replayed test-data/<under>/<name>, each message in order; with `kernels` above
 * 1, the kernel restarted after each replay and the new one replayed the recording again from its start.
 */
export function replayedStore(name: string, under = 'recordings', kernels = 1): SnapshotStore {
  const store = new SnapshotStore();
  const folder = path.join(TEST_DATA, under, name);
  const messages = helperMessages(folder) as IWireSnapshot[];
  // dump_replay.py runs stand-in code (`step_0 = 0`) that the helper sends as the runs' code; the frames are the
  // recorded code's, which a live run of the recording would send.
  const recorded: string[] = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8')).cells.map(
    (c: { source: string }) => c.source
  );
  for (let k = 0; k < kernels; k++) {
    if (k > 0) {
      store.newKernelSession();
    }
    addMessages(store, messages, recorded);
  }
  return store;
}

function addMessages(store: SnapshotStore, messages: readonly IWireSnapshot[], recorded: readonly string[]): void {
  // a new comm for each kernel process, as the session opens one: the frames are the store's
  const decoder = new WireDecoder(store.frames);
  for (const m of messages) {
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
      oom: m.oom,
      roles: m.roles
    });
  }
}
