/**
 * From bytes on disk or on the wire to the raw snapshot dict: detects gzip by
 * its magic bytes, then a pickle by its PROTO opcode or JSON by its first
 * character.
 */
import { gunzipSync } from 'fflate';
import { SnapshotError } from './errors';
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
}

/** Decode snapshot bytes (pickle or JSON, plain or gzip) to plain data. */
export function decodeSnapshotBytes(bytes: Uint8Array): IRawSnapshot {
  if (bytes.length === 0) {
    throw new SnapshotError('empty file: no snapshot data');
  }
  let data = bytes;
  const gzipped = bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1];
  if (gzipped) {
    try {
      data = gunzipSync(bytes);
    } catch (reason) {
      throw new SnapshotError(`corrupt gzip data: ${(reason as Error).message}`);
    }
    if (data.length === 0) {
      throw new SnapshotError('empty file: gzip holds no snapshot data');
    }
  }
  if (data[0] === PICKLE_PROTO) {
    return { value: unpickle(data), encoding: 'pickle', gzipped };
  }
  const first = firstNonSpace(data);
  if (first === 0x7b /* { */) {
    return { value: parseJson(data), encoding: 'json', gzipped };
  }
  throw new SnapshotError(
    'not a snapshot: expected a pickle (protocol 2 to 5), JSON, or either gzipped'
  );
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

function parseJson(data: Uint8Array): PyValue {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    throw new SnapshotError('not a snapshot: JSON text is not valid UTF-8');
  }
  try {
    // JSON.parse defines "__proto__" as an ordinary own property, never a prototype.
    return JSON.parse(text) as PyValue;
  } catch (reason) {
    throw new SnapshotError(`not a snapshot: invalid JSON (${(reason as Error).message})`);
  }
}
