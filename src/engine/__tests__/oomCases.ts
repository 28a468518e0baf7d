/**
 * Out-of-memory cases built from the H200 recordings, as the adversarial run
 * built them (/work/adv/geno.py): the recording's snapshot with `oom` entries
 * added to its history, and its segments marked expandable where asked.
 */
import { FrameTable, Snapshot, TraceEntry } from '..';
import { recordedSnapshot } from './data';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

/** An `oom` entry as torch records it: no address, the request and the device's free bytes. */
export function oomEntry(device: number, size: number, deviceFree: number, timeUs: number): TraceEntry {
  return { device, action: 'oom', address: null, size, stream: 0, timeUs, stack: 0, userMetadata: '', deviceFree };
}

/** The snapshot with `entry` at `position` among its device's entries (the end by default), still ordered by device. */
export function withEntry(snapshot: Snapshot, entry: TraceEntry, position?: number): Snapshot {
  const devices = [...new Set([...snapshot.traces.map(e => e.device), entry.device])].sort((p, q) => p - q);
  const traces = devices.flatMap(device => {
    const own = snapshot.traces.filter(e => e.device === device);
    if (device === entry.device) {
      own.splice(position ?? own.length, 0, entry);
    }
    return own;
  });
  return { ...snapshot, traces };
}

/**
 * multi_gpu_split--python, cell 3 [4], with two OOMs: a 10 GiB request on
 * cuda:0 with 5 GiB free, the newest entry of all, and an older 999 MiB one
 * on cuda:1 (123 MiB free) in the middle of its device's history, so that it
 * comes last in the list, which is ordered by device.
 */
export function twoDeviceOom(frames = new FrameTable()): { start: Snapshot; atOom: Snapshot } {
  const name = 'multi_gpu_split--python';
  const start = recordedSnapshot(name, 'cell02.pickle.gz', frames);
  const end = recordedSnapshot(name, 'cell03.pickle.gz', frames);
  const times = (device: number) => end.traces.filter(e => e.device === device).map(e => e.timeUs ?? 0);
  const newest = Math.max(...times(0), ...times(1));
  const middle = Math.floor(times(1).length / 2);
  const older = oomEntry(1, 999 * MiB, 123 * MiB, times(1)[middle - 1] + 1);
  const atOom = withEntry(withEntry(end, oomEntry(0, 10 * GiB, 5 * GiB, newest + 10)), older, middle);
  return { start, atOom };
}

/**
 * eval_without_no_grad--python, cell 2 [3], failing a 16.5 MiB request with
 * nothing free on the device: its segments have 17.0 MiB free, but the
 * largest free block is 16.0 MiB. `expandable` marks every segment expandable,
 * as torch does under `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
 */
export function fragmentedOom(expandable: boolean, frames = new FrameTable()): { start: Snapshot; atOom: Snapshot } {
  const name = 'eval_without_no_grad--python';
  const start = recordedSnapshot(name, 'cell01.pickle.gz', frames);
  const end = recordedSnapshot(name, 'cell02.pickle.gz', frames);
  const last = end.traces[end.traces.length - 1];
  const atOom = withEntry(end, oomEntry(0, 16.5 * MiB, 0, (last.timeUs ?? 0) + 10));
  return {
    start,
    atOom: expandable ? { ...atOom, segments: atOom.segments.map(s => ({ ...s, isExpandable: true })) } : atOom
  };
}
