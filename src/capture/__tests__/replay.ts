// A store filled from the kernel helper's real messages replaying a recorded session (dump_replay.py), as a
// live session fills it: for tests of what the frontend makes of the wire.
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { IWireSnapshot, WireDecoder } from '../../engine';
import { SnapshotStore } from '../store';

export const ROOT = path.resolve(__dirname, '../../..');
const VENV_PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const PYTHON = process.env.PYTHON ?? (fs.existsSync(VENV_PYTHON) ? VENV_PYTHON : 'python3');

/** The store after the helper replayed test-data/<under>/<name>, each message in order. */
export function replayedStore(name: string, under = 'recordings'): SnapshotStore {
  const folder = path.join(ROOT, 'test-data', under, name);
  const out = execFileSync(PYTHON, [path.join(ROOT, 'kernel-helpers', 'tests', 'dump_replay.py'), folder], {
    encoding: 'utf-8',
    env: { ...process.env, PYTHONPATH: path.join(ROOT, 'kernel-helpers') },
    maxBuffer: 1 << 30
  });
  const store = new SnapshotStore();
  const decoder = new WireDecoder(store.frames);
  for (const line of out.trim().split('\n')) {
    const m = JSON.parse(line) as IWireSnapshot;
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
      replay: m.replay ?? null,
      oom: m.oom
    });
  }
  return store;
}
