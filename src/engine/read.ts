/**
 * From bytes on disk or on the wire to the raw snapshot dict: detects gzip by
 * its magic bytes, then a pickle by its PROTO opcode or JSON by its first
 * character. Gunzip is streamed and stops as soon as the output passes the
 * budget's byte limit, so a gzip bomb costs the limit, not what it declares,
 * and a lying size in the gzip trailer costs nothing.
 */
import { Gunzip } from 'fflate';
import { DEFAULT_DECODE_LIMITS, IDecodeLimits, LimitError } from './budget';
import { GrowingBytes } from './bytes';
import { isTextTooLong, SnapshotError, textTooLong } from './errors';
import { PyValue, unpickle } from './pickle';

const GZIP_MAGIC = [0x1f, 0x8b];
const PICKLE_PROTO = 0x80;

/** What the bytes were, for messages and tools. */
export type SnapshotEncoding = 'pickle' | 'json';

/** The raw snapshot value and how it was encoded. */
export interface IRawSnapshot {
  value: PyValue;
  encoding: SnapshotEncoding;
  gzipped: boolean;
  /** Size of the pickle or JSON text, after gunzip. */
  decodedBytes: number;
}

/** What gzip data that is not a gzip stream says, before fflate's words. */
const CORRUPT_GZIP = 'corrupt gzip data';
/** What a gzip file that stops before its end says. */
const GZIP_CUT_SHORT = 'the gzip data is cut short (the file is truncated)';
/** The fewest bytes of a whole gzip stream of nothing: a 10-byte header, an empty deflate block, an 8-byte trailer. */
const GZIP_EMPTY_BYTES = 20;

/** Decode snapshot bytes (pickle or JSON, plain or gzip) to plain data. */
export function decodeSnapshotBytes(bytes: Uint8Array, limits: IDecodeLimits = DEFAULT_DECODE_LIMITS): IRawSnapshot {
  if (bytes.length === 0) {
    throw new SnapshotError('empty file: no snapshot data');
  }
  let data = bytes;
  const gzipped = bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
  if (gzipped) {
    data = gunzipSnapshot(bytes, limits.maxBytes);
    if (data.length === 0) {
      // An empty stream, whole, ends in a trailer of zeros (its CRC and length); else the file stopped in its header.
      const whole = bytes.length >= GZIP_EMPTY_BYTES && bytes.subarray(bytes.length - 8).every(b => b === 0);
      throw new SnapshotError(whole ? 'empty file: gzip holds no snapshot data' : GZIP_CUT_SHORT);
    }
  } else {
    checkSize(bytes.length, limits.maxBytes);
  }
  const decodedBytes = data.length;
  if (data[0] === PICKLE_PROTO) {
    return { value: unpickle(data, limits), encoding: 'pickle', gzipped, decodedBytes };
  }
  const first = firstNonSpace(data);
  if (first === 0x7b /* { */) {
    return { value: parseJson(data), encoding: 'json', gzipped, decodedBytes };
  }
  throw new SnapshotError(NOT_A_SNAPSHOT);
}

/** Refuse input over the byte limit, before reading it (the CLI checks a file's size with this). */
export function checkSize(size: number, maxBytes: number): void {
  if (size > maxBytes) {
    throw new LimitError('maxBytes', `the snapshot is ${size.toLocaleString('en-US')} bytes`, maxBytes);
  }
}

/** Input is fed to gunzip in slices this big, so output past the limit is noticed within one slice's worth. */
const GUNZIP_SLICE = 1 << 16;
/** The first slice is small: its output is enough to tell a snapshot from a bomb of zeros. */
const GUNZIP_FIRST_SLICE = 1 << 10;
/** Output room before any data has arrived. */
const GUNZIP_FIRST_ROOM = 1 << 16;

/**
 * Gunzip, refusing output past `maxBytes`, and stopping at the first bytes
 * when they cannot start a snapshot. The output grows as data arrives. The
 * gzip trailer's size (ISIZE, the size modulo 2^32, written by whoever made
 * the file) is only a hint: allocated up front, a trailer claiming 2 GiB cost
 * 2 GiB for a few bytes of JSON. It is reserved once the data inflated so far
 * reaches half of it, so a real file still ends in a buffer of its exact size.
 */
export function gunzipSnapshot(bytes: Uint8Array, maxBytes: number): Uint8Array {
  try {
    return gunzipStream(bytes, maxBytes);
  } catch (reason) {
    // Zero bytes after the gzip stream are padding (a block device, a fixed-size upload) that gzip and Python
    // skip. The stream ends where the zeros start, or up to 4 bytes later: its length field may end in zeros.
    const zeros = Private.paddingStart(bytes);
    if (zeros < 0 || !(reason instanceof SnapshotError) || !reason.message.startsWith(CORRUPT_GZIP)) {
      throw reason;
    }
    for (let end = zeros; end <= Math.min(bytes.length - 1, zeros + 4); end++) {
      try {
        return gunzipStream(bytes.subarray(0, end), maxBytes);
      } catch {
        // not the stream's end: the next byte may be
      }
    }
    throw reason;
  }
}

/** gunzipSnapshot without padding: the bytes are the gzip stream (or its members) and nothing else. */
function gunzipStream(bytes: Uint8Array, maxBytes: number): Uint8Array {
  const n = bytes.length;
  const declared =
    n >= 18 ? (bytes[n - 4] | (bytes[n - 3] << 8) | (bytes[n - 2] << 16) | (bytes[n - 1] << 24)) >>> 0 : 0;
  const out = new GrowingBytes(GUNZIP_FIRST_ROOM, maxBytes);
  let stop: 'over' | 'not a snapshot' | null = null;
  const gunzip = new Gunzip(chunk => {
    if (stop !== null || chunk.length === 0) {
      return;
    }
    if (out.length === 0 && !canStartSnapshot(chunk)) {
      stop = 'not a snapshot';
      return;
    }
    if (!out.push(chunk)) {
      stop = 'over';
    }
  });
  try {
    for (let at = 0; at < n && stop === null;) {
      const end = Math.min(n, at + (at === 0 ? GUNZIP_FIRST_SLICE : GUNZIP_SLICE));
      gunzip.push(bytes.subarray(at, end), end >= n);
      at = end;
      // Believed once the data reaches half of it (never more than doubling would take), and only while
      // more is to come: an estimate from the ratio so far let 1 MiB of input reserve the whole limit.
      if (declared > out.capacity && at < n && 2 * out.length >= declared) {
        out.reserve(declared);
      }
    }
  } catch (reason) {
    // fflate's words for a stream that stops before its end: the file was cut short (a copy or a write that stopped)
    const cut = /unexpected EOF/i.test((reason as Error).message);
    throw new SnapshotError(cut ? GZIP_CUT_SHORT : `${CORRUPT_GZIP}: ${(reason as Error).message}`);
  }
  if (stop === 'over') {
    throw new LimitError('maxBytes', 'the gzip data decompresses to more bytes than allowed', maxBytes);
  }
  if (stop === 'not a snapshot') {
    throw new SnapshotError(NOT_A_SNAPSHOT);
  }
  return out.bytes();
}

const NOT_A_SNAPSHOT = 'not a snapshot: expected a pickle (protocol 2 to 5), JSON, or either gzipped';

/** True when data starting with these bytes may be a pickle or JSON (whitespace or a BOM may come first). */
function canStartSnapshot(head: Uint8Array): boolean {
  const first = firstNonSpace(head);
  return head[0] === PICKLE_PROTO || first === 0x7b || (first === -1 && head.length < 1024);
}

function firstNonSpace(data: Uint8Array): number {
  for (let i = 0; i < data.length && i < 1024; i++) {
    const c = data[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0xef && c !== 0xbb && c !== 0xbf) {
      return c;
    }
  }
  return -1;
}

/** A text file's bytes (a manifest, an index) as text; refused by `file`'s name past the longest string. */
export function decodeText(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder().decode(bytes);
  } catch (reason) {
    if (isTextTooLong(reason)) {
      throw new SnapshotError(`${file}: ${textTooLong(bytes.length)}`);
    }
    throw reason;
  }
}

function parseJson(data: Uint8Array): PyValue {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch (reason) {
    if (isTextTooLong(reason)) {
      throw new SnapshotError(
        `not readable as JSON: ${textTooLong(data.length)}; save the snapshot as a pickle (torch.cuda.memory._dump_snapshot) instead`
      );
    }
    throw new SnapshotError('not a snapshot: JSON text is not valid UTF-8');
  }
  try {
    // JSON.parse defines "__proto__" as an ordinary own property, never a prototype.
    return JSON.parse(text) as PyValue;
  } catch (reason) {
    throw new SnapshotError(`not a snapshot: invalid JSON (${(reason as Error).message})`);
  }
}

namespace Private {
  /** Zero bytes at the end of a gzip file may be padding: where the last run of zeros starts, or -1. */
  export function paddingStart(bytes: Uint8Array): number {
    let at = bytes.length;
    while (at > 0 && bytes[at - 1] === 0) {
      at--;
    }
    // a stream is at least a header, an empty block and a trailer long
    return at < bytes.length && at >= GZIP_EMPTY_BYTES - 4 ? at : -1;
  }
}
