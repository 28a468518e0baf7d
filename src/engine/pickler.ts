/**
 * Writes plain data as a protocol-4 pickle, so snapshots the extension holds
 * can be saved in the format torch.cuda.memory._dump_snapshot() writes and
 * PyTorch's own tools (torch.cuda._memory_viz, pytorch.org/memory_viz) open.
 * Repeated strings (file names, function names) are written once and then
 * referred to through the memo, as Python's pickler does.
 */
import { PyDict, PyValue } from './pickle';

const BATCH = 1000;

/** Encode plain data (null, booleans, numbers, strings, arrays, dicts) as a pickle. */
export function pickle(value: PyValue): Uint8Array {
  return new Private.Pickler().dump(value);
}

namespace Private {
  const encoder = new TextEncoder();

  export class Pickler {
    dump(value: PyValue): Uint8Array {
      this._bytes(0x80, 4); // PROTO 4
      this._value(value);
      this._bytes(0x2e); // STOP
      return this._buffer.subarray(0, this._length);
    }

    private _value(value: PyValue): void {
      if (value === null) {
        this._bytes(0x4e);
      } else if (value === true) {
        this._bytes(0x88);
      } else if (value === false) {
        this._bytes(0x89);
      } else if (typeof value === 'number') {
        this._number(value);
      } else if (typeof value === 'bigint') {
        this._long(value);
      } else if (typeof value === 'string') {
        this._string(value);
      } else if (value instanceof Uint8Array) {
        this._bytes(0x8e); // BINBYTES8
        this._u64(value.length);
        this._raw(value);
      } else if (Array.isArray(value)) {
        this._bytes(0x5d); // EMPTY_LIST
        for (let i = 0; i < value.length; i += BATCH) {
          this._bytes(0x28); // MARK
          for (const item of value.slice(i, i + BATCH)) {
            this._value(item);
          }
          this._bytes(0x65); // APPENDS
        }
      } else {
        this._dict(value);
      }
    }

    private _dict(dict: PyDict): void {
      this._bytes(0x7d); // EMPTY_DICT
      const keys = Object.keys(dict);
      for (let i = 0; i < keys.length; i += BATCH) {
        this._bytes(0x28); // MARK
        for (const key of keys.slice(i, i + BATCH)) {
          this._string(key);
          this._value(dict[key]);
        }
        this._bytes(0x75); // SETITEMS
      }
    }

    private _number(value: number): void {
      if (Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff) {
        this._bytes(0x4a); // BININT
        this._i32(value);
      } else if (Number.isSafeInteger(value)) {
        this._long(BigInt(value));
      } else {
        this._bytes(0x47); // BINFLOAT, big-endian
        this._reserve(8);
        new DataView(this._buffer.buffer).setFloat64(this._length, value, false);
        this._length += 8;
      }
    }

    private _long(value: bigint): void {
      // LONG1: little-endian two's complement, as short as it can be.
      const out: number[] = [];
      let v = value;
      const zero = BigInt(0);
      const byte = BigInt(0xff);
      const eight = BigInt(8);
      do {
        out.push(Number(v & byte));
        v >>= eight;
      } while (!((v === zero && !(out[out.length - 1] & 0x80)) || (v === BigInt(-1) && out[out.length - 1] & 0x80)));
      this._bytes(0x8a, out.length);
      this._bytes(...out);
    }

    private _string(text: string): void {
      const known = this._memo.get(text);
      if (known !== undefined) {
        if (known < 256) {
          this._bytes(0x68, known); // BINGET
        } else {
          this._bytes(0x6a); // LONG_BINGET
          this._i32(known);
        }
        return;
      }
      const utf8 = encoder.encode(text);
      if (utf8.length < 256) {
        this._bytes(0x8c, utf8.length); // SHORT_BINUNICODE
      } else {
        this._bytes(0x58); // BINUNICODE
        this._i32(utf8.length);
      }
      this._raw(utf8);
      this._bytes(0x94); // MEMOIZE
      this._memo.set(text, this._memo.size);
    }

    private _reserve(n: number): void {
      if (this._length + n > this._buffer.length) {
        const next = new Uint8Array(Math.max(this._buffer.length * 2, this._length + n));
        next.set(this._buffer.subarray(0, this._length));
        this._buffer = next;
      }
    }

    private _bytes(...values: number[]): void {
      this._reserve(values.length);
      for (const v of values) {
        this._buffer[this._length++] = v;
      }
    }

    private _raw(data: Uint8Array): void {
      this._reserve(data.length);
      this._buffer.set(data, this._length);
      this._length += data.length;
    }

    private _i32(v: number): void {
      this._reserve(4);
      new DataView(this._buffer.buffer).setInt32(this._length, v, true);
      this._length += 4;
    }

    private _u64(v: number): void {
      this._reserve(8);
      const view = new DataView(this._buffer.buffer);
      view.setUint32(this._length, v % 0x100000000, true);
      view.setUint32(this._length + 4, Math.floor(v / 0x100000000), true);
      this._length += 8;
    }

    private _buffer = new Uint8Array(1 << 16);
    private _length = 0;
    private readonly _memo = new Map<string, number>();
  }
}
