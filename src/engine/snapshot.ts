/**
 * Reading a snapshot in one call: bytes (pickle or JSON, plain or gzip) to the
 * normalized model.
 */
import { DEFAULT_DECODE_LIMITS, IDecodeLimits } from './budget';
import { FrameTable, Snapshot } from './model';
import { normalizeSnapshot } from './normalize';
import { decodeSnapshotBytes } from './read';

/**
 * Decode and normalize snapshot bytes within one decode budget; pass `frames`
 * to share interning across snapshots.
 */
export function readSnapshot(
  bytes: Uint8Array,
  frames?: FrameTable,
  limits: IDecodeLimits = DEFAULT_DECODE_LIMITS
): Snapshot {
  const raw = decodeSnapshotBytes(bytes, limits);
  // Let the file's buffer go before the model is built (when the caller keeps
  // no reference): peak memory is then the decoded tree and the model, not the file too.
  bytes = NO_BYTES;
  return normalizeSnapshot(raw.value, frames, limits, raw.decodedBytes);
}

const NO_BYTES = new Uint8Array(0);

/** A snapshot with nothing allocated: what the device held before the first cell. */
export function emptySnapshot(frames = new FrameTable(), deviceCount = 0): Snapshot {
  return normalizeSnapshot({ segments: [], device_traces: new Array(deviceCount).fill([]) }, frames);
}
