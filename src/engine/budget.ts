/**
 * One budget for a whole decode: how many bytes a file may decompress to, how
 * many blocks and trace entries it may describe, how many devices, how long an
 * integer may be. Snapshot files come from colleagues, bug reports and CI
 * artefacts, so every limit is checked before the work it bounds is done, and
 * a refusal is one line that names the limit and how to raise it.
 */
import { SnapshotError } from './errors';
import { MAX_SNAPSHOT_BYTES } from './protocol.generated';

/** The limits of one decode; every field can be raised for a real file. */
export interface IDecodeLimits {
  /** Most bytes of pickle or JSON, after gunzip. */
  readonly maxBytes: number;
  /** Most blocks plus trace entries, counted as memo references expand them. */
  readonly maxEntries: number;
  /** Most devices (a device index must be below it). */
  readonly maxDevices: number;
  /** Most bytes in one pickled integer (LONG1 / LONG4); an address needs 9. */
  readonly maxIntegerBytes: number;
}

/** What a real snapshot needs, with room: a 1 GB pickle fits twice over and holds a few million entries. */
export const DEFAULT_DECODE_LIMITS: IDecodeLimits = {
  maxBytes: MAX_SNAPSHOT_BYTES,
  maxEntries: 20_000_000,
  maxDevices: 1024,
  maxIntegerBytes: 16
};

/**
 * Fewest pickle bytes a real block or trace entry takes (a dict of five or
 * more keys is over 30). More entries than the decoded bytes allow at this
 * rate means memo references repeat one entry over and over: a 271-byte gzip
 * that expands to 18 million blocks. Checked unless maxEntries was raised.
 */
export const MIN_BYTES_PER_ENTRY = 16;

/** Entries any file may hold, however small, before the per-byte check applies. */
export const SMALL_FILE_ENTRIES = 100_000;

/** How each limit is named to people: the CLI flag and the environment variable. */
export const LIMIT_NAMES: { readonly [K in keyof IDecodeLimits]: { flag: string; env: string } } = {
  maxBytes: { flag: '--max-bytes', env: 'CUDA_MEMDIFF_MAX_BYTES' },
  maxEntries: { flag: '--max-entries', env: 'CUDA_MEMDIFF_MAX_ENTRIES' },
  maxDevices: { flag: '--max-devices', env: 'CUDA_MEMDIFF_MAX_DEVICES' },
  maxIntegerBytes: { flag: '--max-int-bytes', env: 'CUDA_MEMDIFF_MAX_INT_BYTES' }
};

/** A refusal because the input is over a decode limit; its message is one line. (It keeps the name SnapshotError, so it crosses the engine worker as one.) */
export class LimitError extends SnapshotError {
  constructor(
    readonly limit: keyof IDecodeLimits,
    /** What is over the limit, in words ("the snapshot holds 30,000,000 blocks and trace entries"). */
    readonly what: string,
    /** The limit's value. */
    readonly value: number
  ) {
    const names = LIMIT_NAMES[limit];
    super(
      `${what}, over the decode limit ${names.flag} ${value.toLocaleString('en-US')}; ` +
        `if the file is real, raise it with ${names.flag} N or ${names.env}=N`
    );
  }
}

/** Limits with the given fields changed, each checked to be a positive safe integer. */
export function decodeLimits(overrides: Partial<IDecodeLimits> = {}): IDecodeLimits {
  const limits = { ...DEFAULT_DECODE_LIMITS, ...overrides };
  for (const key of Object.keys(LIMIT_NAMES) as (keyof IDecodeLimits)[]) {
    const v = limits[key];
    if (!Number.isSafeInteger(v) || v <= 0) {
      throw new SnapshotError(`${LIMIT_NAMES[key].flag} must be a positive integer, not ${String(v)}`);
    }
  }
  return limits;
}

/**
 * Refuse more items copied out of values already built than the entries
 * budget allows: `bytes` is the size of the decoded pickle. An item read off
 * the unpickler's stack cost the file a byte or more, but set(), OrderedDict()
 * or a tuple key copy a whole memoised list for a 5-byte memo reference, so a
 * 256 KB file repeating one took 4 GB. Each copy is held to the same rule as
 * blocks and trace entries, with the same flag to raise it.
 */
export function checkCopiedItems(count: number, bytes: number, limits: IDecodeLimits): void {
  const allowed =
    limits.maxEntries === DEFAULT_DECODE_LIMITS.maxEntries
      ? Math.min(limits.maxEntries, Math.max(SMALL_FILE_ENTRIES, Math.floor(bytes / MIN_BYTES_PER_ENTRY)))
      : limits.maxEntries;
  if (count > allowed) {
    throw new LimitError(
      'maxEntries',
      `the pickle's ${bytes.toLocaleString('en-US')} bytes make the decoder copy ${count.toLocaleString('en-US')} ` +
        'items (set(), OrderedDict() or a tuple key repeating a memoised list)',
      allowed
    );
  }
}

/**
 * Refuse more blocks and trace entries than the budget allows, counted before
 * any is built: `bytes` is the size of the decoded pickle or JSON.
 */
export function checkEntryCount(count: number, bytes: number, limits: IDecodeLimits): void {
  if (count > limits.maxEntries) {
    throw new LimitError(
      'maxEntries',
      `the snapshot holds ${count.toLocaleString('en-US')} blocks and trace entries`,
      limits.maxEntries
    );
  }
  // Only the default limit guards against amplification: a user who raised
  // maxEntries has looked at the file.
  const byBytes = Math.max(SMALL_FILE_ENTRIES, Math.floor(bytes / MIN_BYTES_PER_ENTRY));
  if (limits.maxEntries === DEFAULT_DECODE_LIMITS.maxEntries && count > byBytes) {
    throw new LimitError(
      'maxEntries',
      `the snapshot's ${bytes.toLocaleString('en-US')} bytes describe ${count.toLocaleString('en-US')} blocks and ` +
        `trace entries (memo references repeat entries; a real one takes ${MIN_BYTES_PER_ENTRY}+ bytes)`,
      byBytes
    );
  }
}
