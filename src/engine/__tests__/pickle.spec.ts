/**
 * @jest-environment node
 */
// The unpickler against crafted hostile pickles: nothing is imported or
// called, no prototype is reached, and every bad input ends in SnapshotError.
import * as path from 'path';
import { gunzipSync, gzipSync } from 'fflate';
import { decodeLimits, decodeSnapshotBytes, gunzipSnapshot, readSnapshot, SnapshotError, unpickle } from '..';
import { FIXTURES, readBytes, RECORDINGS } from './data';
import { HOSTILE, PickleWriter } from './hostile';

/** Bytes from opcodes: numbers are bytes, strings are latin1 text. */
function pk(...parts: (number | string)[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'number') {
      out.push(p);
    } else {
      for (const ch of p) {
        out.push(ch.charCodeAt(0));
      }
    }
  }
  return new Uint8Array(out);
}

/** SHORT_BINUNICODE of an ASCII string. */
const str = (s: string) => [0x8c, s.length, s] as const;
const PROTO4 = [0x80, 4] as const;

function expectSnapshotError(bytes: Uint8Array, pattern: RegExp): void {
  let caught: unknown;
  try {
    decodeSnapshotBytes(bytes);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(SnapshotError);
  expect((caught as Error).message).toMatch(pattern);
}

describe('unpickle refuses code', () => {
  it('refuses os.system through GLOBAL and REDUCE', () => {
    // pickle.dumps of a __reduce__ returning (os.system, ('echo pwned',)), protocol 2
    const bytes = pk(0x80, 2, 'cposix\nsystem\n', 'X', 10, 0, 0, 0, 'echo pwned', 0x85, 'R', '.');
    expectSnapshotError(bytes, /refused pickle: it imports posix\.system/);
  });

  it('refuses builtins.eval through STACK_GLOBAL', () => {
    const bytes = pk(...PROTO4, ...str('builtins'), ...str('eval'), 0x93, ...str('1+1'), 0x85, 'R', '.');
    expectSnapshotError(bytes, /refused pickle: it imports builtins\.eval/);
  });

  it('quotes a long imported name cut to 80 characters, with its length', () => {
    const module = 'x'.repeat(10_000);
    const bytes = pk(0x80, 2, `c${module}\nsystem\n`, '.');
    expectSnapshotError(
      bytes,
      /^refused pickle: it imports x{80}…\(10,007 characters\), and a snapshot never needs code$/
    );
  });

  it('refuses REDUCE on anything but an allowed constructor', () => {
    const bytes = pk(...PROTO4, 0x5d, 0x29, 'R', '.');
    expectSnapshotError(bytes, /refused pickle: opcode REDUCE/);
  });

  it.each([
    ['INST', pk(0x80, 2, '(', 'iposix\nsystem\n', '.')],
    ['OBJ', pk(0x80, 2, '(', ']', 'o', '.')],
    ['NEWOBJ', pk(0x80, 2, ']', ')', 0x81, '.')],
    ['BUILD', pk(0x80, 2, '}', '}', 'b', '.')],
    ['BINPERSID', pk(0x80, 2, 'K', 1, 'Q', '.')],
    ['EXT1', pk(0x80, 2, 0x82, 1, '.')]
  ])('refuses %s', (name, bytes) => {
    expectSnapshotError(bytes, new RegExp(`refused pickle: opcode ${name}`));
  });

  it('builds the harmless constructors a plain-data pickle uses', () => {
    const value = decodeSnapshotBytes(readBytes(path.join(FIXTURES, 'plain_data.proto2.pickle'))).value as any;
    expect(value.od).toEqual({ a: 1, b: 2 });
    expect(value.tags).toEqual(['x']);
    expect(Array.from(value.raw)).toEqual([0, 255]);
    expect(value.big).toBe(BigInt(1) << BigInt(70));
    expect(value.neg).toBe(-5);
  });
});

describe('unpickle keeps keys as data', () => {
  it('stores __proto__, constructor and prototype as own keys', () => {
    const bytes = pk(
      ...PROTO4,
      '}',
      '(',
      ...str('__proto__'),
      '}',
      ...str('polluted'),
      'K',
      1,
      's',
      ...str('constructor'),
      'K',
      2,
      ...str('prototype'),
      'K',
      3,
      'u',
      '.'
    );
    const value = unpickle(bytes) as any;
    expect(Object.keys(value)).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(value.constructor).toBe(2);
    expect(({} as any).polluted).toBeUndefined();
    expect((Object.prototype as any).polluted).toBeUndefined();
  });

  it('does not read inherited names as snapshot fields', () => {
    // A segment dict without 'blocks' must not find Object.prototype members.
    const bytes = pk(...PROTO4, '}', ...str('segments'), ']', '}', ...str('address'), 'K', 0, 's', 'a', 's', '.');
    expect(() => readSnapshot(bytes)).toThrow(/segment 0 total_size is missing/);
  });
});

describe('unpickle bounds hostile input', () => {
  it('stops deep MARK nesting with an error', () => {
    const bytes = new Uint8Array(200003).fill(0x28); // MARK
    bytes.set([0x80, 4]);
    bytes[bytes.length - 1] = 0x2e;
    expectSnapshotError(bytes, /nests too deeply/);
  });

  it('stops a stack flood with an error', () => {
    const bytes = new Uint8Array((1 << 20) + 4).fill(0x4e); // NONE
    bytes.set([0x80, 4]);
    bytes[bytes.length - 1] = 0x2e;
    expectSnapshotError(bytes, /stack is too deep/);
  });

  it('survives lists nested a million deep through the memo, then rejects the shape', () => {
    const depth = 1000000;
    const bytes = new Uint8Array(4 + depth * 9);
    bytes.set([0x80, 4, 0x5d, 0x94]);
    const view = new DataView(bytes.buffer);
    for (let i = 0, at = 4; i < depth; i++, at += 9) {
      // fetch list i, append a new memoized list to it, drop list i again
      bytes[at] = 0x6a;
      view.setUint32(at + 1, i, true);
      bytes.set([0x5d, 0x94, 0x61, 0x30], at + 5);
    }
    expect(() => unpickle(bytes)).toThrow(/truncated pickle: data ends before STOP/);
    const stop = new Uint8Array(bytes.length + 1);
    stop.set(bytes);
    stop[bytes.length] = 0x2e;
    expect(() => readSnapshot(stop)).toThrow(/segment 0 is not a dict/);
  });

  it('rejects a memo index that was never stored', () => {
    expectSnapshotError(pk(...PROTO4, 'h', 7, '.'), /memo 7 was never stored/);
  });

  it('rejects a LONG4 with a negative byte count, as Python does', () => {
    expectSnapshotError(pk(...PROTO4, 0x8b, 0xfb, 0xff, 0xff, 0xff, '.'), /LONG4 has a negative byte count/);
  });

  it("reads lone surrogates as Python's surrogatepass writes them (a path read with surrogateescape)", () => {
    // pickle.dumps('a\udcff') with protocol 4: SHORT_BINUNICODE 'a', ED B3 BF
    expect(unpickle(pk(...PROTO4, 0x8c, 4, 'a', 0xed, 0xb3, 0xbf, '.'))).toBe('a\udcff');
    expect(unpickle(pk(...PROTO4, 0x8c, 5, 'a', 0xf0, 0x9f, 0x98, 0x80, '.'))).toBe('a\u{1f600}');
    expectSnapshotError(pk(...PROTO4, 0x8c, 2, 0xc0, 0x80, '.'), /a string is not valid UTF-8/); // overlong
    expectSnapshotError(pk(...PROTO4, 0x8c, 2, 0xed, 0xb3, '.'), /a string is not valid UTF-8/); // cut short
  });

  it('rejects a string length past the end', () => {
    expectSnapshotError(pk(...PROTO4, 0x8d, 255, 255, 255, 255, 255, 255, 255, 127, '.'), /truncated pickle/);
  });

  it('rejects every truncation of a real snapshot with SnapshotError', () => {
    const full = gunzipSync(readBytes(path.join(RECORDINGS, 'oom--python', 'cell01.pickle.gz')));
    for (let cut = 0; cut < full.length; cut += Math.max(1, Math.floor(full.length / 397))) {
      expect(() => readSnapshot(full.subarray(0, cut))).toThrow(SnapshotError);
    }
  });

  it('answers corrupted bytes with a snapshot or SnapshotError, never another error', () => {
    const full = gunzipSync(readBytes(path.join(RECORDINGS, 'eval_without_no_grad--python', 'cell02.pickle.gz')));
    let seed = 12345;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (let trial = 0; trial < 300; trial++) {
      const bytes = full.slice();
      for (let k = 0; k < 4; k++) {
        bytes[2 + Math.floor(rand() * (bytes.length - 2))] = Math.floor(rand() * 256);
      }
      try {
        readSnapshot(bytes);
      } catch (e) {
        expect(e).toBeInstanceOf(SnapshotError);
      }
    }
  });
});

describe('unpickle counts what a step copies against the entries budget', () => {
  const zero = (w: PickleWriter) => w.int(0);
  const pair = (w: PickleWriter) => w.int(0).int(0).raw(0x86); // TUPLE2

  it('refuses set() repeated on a memoised list at the first call past the limit', () => {
    // 200 calls would copy 200,000 items; the 101st passes the 100,000 a small file may copy.
    expectSnapshotError(
      HOSTILE.memoisedCalls('builtins', 'set', 1000, zero, 200),
      /the pickle's [\d,]+ bytes make the decoder copy 101,000 items .*over the decode limit --max-entries 100,000/
    );
  });

  it('refuses OrderedDict() repeated on a memoised list of pairs', () => {
    expectSnapshotError(
      HOSTILE.memoisedCalls('collections', 'OrderedDict', 1000, pair, 200),
      /copy 101,000 items .*--max-entries 100,000/
    );
  });

  it('refuses a memoised tuple key used over and over, and one whose text would be huge', () => {
    expectSnapshotError(HOSTILE.memoisedTupleKey(1000, zero, 200), /copy 101,000 items .*--max-entries/);
    const long = (w: PickleWriter) => w.str('x'.repeat(1000));
    expectSnapshotError(HOSTILE.memoisedTupleKey(100, long, 1), /tuple dict key longer than 4,096 characters/);
  });

  it('reads the same copies when --max-entries is raised, and small ones under the default', () => {
    const bytes = HOSTILE.memoisedCalls('builtins', 'set', 1000, zero, 200);
    const sets = decodeSnapshotBytes(bytes, decodeLimits({ maxEntries: 300_000 })).value as number[][];
    expect(sets).toHaveLength(200);
    expect(sets[199]).toHaveLength(1000);
    expect(decodeSnapshotBytes(HOSTILE.memoisedCalls('builtins', 'set', 1000, zero, 100)).value).toHaveLength(100);
  });

  it('counts bytes that _codecs.encode builds from a memoised string against the byte limit', () => {
    const text = (w: PickleWriter) => w.str('x'.repeat(60_000));
    const bytes = PickleWriter.pickle(w => {
      w.str('_codecs').str('encode').raw(0x93);
      const encode = w.memoize();
      w.raw(0x30);
      text(w);
      w.str('latin1').raw(0x86); // TUPLE2 (text, 'latin1')
      const args = w.memoize();
      w.raw(0x30, 0x5d);
      for (let k = 0; k < 100; k++) {
        w.get(encode).get(args).raw(0x52, 0x61); // REDUCE, APPEND
      }
    });
    expect(() => decodeSnapshotBytes(bytes, decodeLimits({ maxBytes: 2 ** 20 }))).toThrow(
      /build [\d,]+ more through _codecs\.encode, over the decode limit --max-bytes 1,048,576/
    );
    expect(decodeSnapshotBytes(bytes).value).toHaveLength(100);
  });
});

describe('decodeSnapshotBytes', () => {
  it('rejects an empty file', () => {
    expectSnapshotError(new Uint8Array(0), /empty file/);
  });

  it('says a gzip file cut inside its header is truncated, and one of nothing is empty', () => {
    // Python's gzip writes the file's name in the header: a copy stopped in it held no data yet
    const recorded = readBytes(path.join(RECORDINGS, 'clean_training--python', 'cell01.pickle.gz'));
    for (const n of [12, 16, 20]) {
      expectSnapshotError(recorded.slice(0, n), /^the gzip data is cut short \(the file is truncated\)$/);
    }
    expectSnapshotError(gzipSync(new Uint8Array(0)), /^empty file: gzip holds no snapshot data$/);
  });

  it('says a gzip file cut short is truncated, and rejects corrupt gzip', () => {
    const gz = gzipSync(new TextEncoder().encode('{"segments": []}'));
    expectSnapshotError(gz.slice(0, 12), /^the gzip data is cut short \(the file is truncated\)$/);
    const corrupt = gz.slice();
    corrupt[10] = 0xff; // the deflate stream's first block header: an invalid block type
    expectSnapshotError(corrupt, /^corrupt gzip data: /);
  });

  it('reads a gzip file padded with zero bytes, as gzip and Python do; other bytes after it stay corrupt', () => {
    // helper-73: a recording padded to a block size was "corrupt gzip data: invalid gzip data" here only.
    const recorded = readBytes(path.join(RECORDINGS, 'clean_training--python', 'cell01.pickle.gz'));
    const whole = decodeSnapshotBytes(recorded).value;
    for (const padding of [1, 3, 4096]) {
      const padded = new Uint8Array(recorded.length + padding);
      padded.set(recorded);
      expect(decodeSnapshotBytes(padded).value).toEqual(whole);
    }
    // a length field that ends in zeros, then padding: the stream's end is found inside the zeros
    const small = gzipSync(new Uint8Array(200).fill(0x20).map((b, i) => (i === 0 ? 0x7b : i === 199 ? 0x7d : b)));
    expect(small.subarray(small.length - 3)).toEqual(new Uint8Array(3));
    const paddedSmall = new Uint8Array(small.length + 100);
    paddedSmall.set(small);
    expect(decodeSnapshotBytes(paddedSmall).value).toEqual({});
    const garbage = new Uint8Array(recorded.length + 8).fill(7);
    garbage.set(recorded);
    expectSnapshotError(garbage, /^corrupt gzip data: /);
    expectSnapshotError(recorded.slice(0, recorded.length - 100), /^the gzip data is cut short/);
  });

  it('rejects bytes that are neither pickle nor JSON', () => {
    expectSnapshotError(new TextEncoder().encode('hello'), /not a snapshot/);
  });

  it('rejects a pickle that is not a snapshot', () => {
    const expected = /not a snapshot: expected a dict with a 'segments' list/;
    expect(() => readSnapshot(pk(...PROTO4, 'K', 1, '.'))).toThrow(expected);
    expect(() => readSnapshot(pk(...PROTO4, '}', ...str('blocks'), ']', 's', '.'))).toThrow(expected);
  });

  it('reads gzip JSON and every pickle protocol to the same model', () => {
    const shapes = [
      'torch_2_11.proto2.pickle',
      'torch_2_11.proto3.pickle',
      'torch_2_11.proto4.pickle',
      'torch_2_11.proto5.pickle',
      'torch_2_11.json.gz'
    ].map(f => readSnapshot(readBytes(path.join(FIXTURES, f))));
    for (const s of shapes) {
      expect(s.blocks.map(b => [b.address, b.size, b.state])).toEqual(
        shapes[0].blocks.map(b => [b.address, b.size, b.state])
      );
      expect(s.totals).toEqual(shapes[0].totals);
      expect(s.traces.map(t => t.action)).toEqual(['segment_alloc', 'alloc', 'oom']);
    }
  });
});

describe("gunzip does not trust the gzip trailer's size", () => {
  /** A JSON snapshot of one segment of `count` blocks (about 100 bytes each), and its gzip. */
  function jsonSnapshot(count: number): { json: Uint8Array; gz: Uint8Array } {
    const blocks = Array.from({ length: count }, (_, i) => ({
      address: i * 512,
      size: 512,
      requested_size: 500,
      state: 'active_allocated',
      frames: [{ name: `f${i % 97}`, filename: 'train.py', line: i % 13 }]
    }));
    const segments = [{ device: 0, address: 0, total_size: count * 512, stream: 0, blocks }];
    const json = new TextEncoder().encode(JSON.stringify({ segments, device_traces: [[]] }));
    return { json, gz: gzipSync(json) };
  }

  /** The gzip with its trailer's ISIZE (the last four bytes) replaced. */
  function withTrailerSize(gz: Uint8Array, size: number): Uint8Array {
    const out = gz.slice();
    new DataView(out.buffer).setUint32(out.length - 4, size, true);
    return out;
  }

  it('reads a gzip whose trailer claims 2 GiB, allocating room for what it holds only', () => {
    const { json, gz } = jsonSnapshot(2000);
    const lying = withTrailerSize(gz, 2 ** 31);
    const out = gunzipSnapshot(lying, decodeLimits().maxBytes);
    expect(Buffer.from(out).equals(json)).toBe(true);
    // grown by doubling as data came: at most twice the data (the trailer once sized it 2 GiB)
    expect(out.buffer.byteLength).toBeLessThanOrEqual(2 * json.length);
    expect(decodeSnapshotBytes(lying).value).toEqual(decodeSnapshotBytes(gz).value);
  });

  it('reads a gzip whose trailer claims too little', () => {
    const { json, gz } = jsonSnapshot(2000);
    expect(Buffer.from(gunzipSnapshot(withTrailerSize(gz, 10), decodeLimits().maxBytes)).equals(json)).toBe(true);
  });

  it('still ends a real file in one buffer of its size, once the data bears the trailer out', () => {
    const { json, gz } = jsonSnapshot(4000);
    expect(json.length).toBeGreaterThan(4 * 65536);
    expect(gunzipSnapshot(gz, decodeLimits().maxBytes).buffer.byteLength).toBe(json.length);
  });

  it('refuses data over the byte limit with the limit named, whatever the trailer says', () => {
    const { json, gz } = jsonSnapshot(2000);
    const limits = decodeLimits({ maxBytes: Math.floor(json.length / 2) });
    const limit = limits.maxBytes.toLocaleString('en-US');
    for (const bytes of [gz, withTrailerSize(gz, 10), withTrailerSize(gz, 2 ** 31)]) {
      expect(() => decodeSnapshotBytes(bytes, limits)).toThrow(
        `the gzip data decompresses to more bytes than allowed, over the decode limit --max-bytes ${limit}; ` +
          'if the file is real, raise it with --max-bytes N or CUDA_MEMDIFF_MAX_BYTES=N'
      );
    }
  });
});
