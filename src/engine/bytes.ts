/**
 * Bytes that arrive in chunks (a gunzip's output, a response body), gathered
 * into one buffer that grows by doubling and never past a limit. A size the
 * source declares is allocated up front only where the source is trusted (a
 * server's Content-Length); otherwise `reserve` it once the data bears it out.
 */
export class GrowingBytes {
  /**
   * @param initial bytes to allocate at first (the size the source declares, when it does)
   * @param maxBytes the most bytes it may hold
   */
  constructor(initial: number, maxBytes: number) {
    this._maxBytes = maxBytes;
    this._buffer = new Uint8Array(Math.min(Math.max(initial, 0), maxBytes));
  }

  /** Bytes gathered so far. */
  get length(): number {
    return this._length;
  }

  /** Bytes the buffer holds room for. */
  get capacity(): number {
    return this._buffer.length;
  }

  /** Make room for `total` bytes in all (never past the limit), so data up to it arrives without regrowth. */
  reserve(total: number): void {
    const size = Math.min(total, this._maxBytes);
    if (size > this._buffer.length) {
      const grown = new Uint8Array(size);
      grown.set(this._buffer.subarray(0, this._length));
      this._buffer = grown;
    }
  }

  /** Append `chunk`; false (and nothing appended) when it would take the bytes past the limit. */
  push(chunk: Uint8Array): boolean {
    if (this._length + chunk.length > this._maxBytes) {
      return false;
    }
    if (this._length + chunk.length > this._buffer.length) {
      this.reserve(Math.max(this._buffer.length * 2, this._length + chunk.length));
    }
    this._buffer.set(chunk, this._length);
    this._length += chunk.length;
    return true;
  }

  /** The gathered bytes (the buffer itself when it is full, else a view of its start). */
  bytes(): Uint8Array {
    return this._length === this._buffer.length ? this._buffer : this._buffer.subarray(0, this._length);
  }

  private readonly _maxBytes: number;
  private _buffer: Uint8Array;
  private _length = 0;
}
