/**
 * A generator of hostile snapshot files, built in code so the repository holds
 * no bombs: each function returns the bytes of one shape that used to hang,
 * exhaust memory, overflow the stack or reach the terminal raw. The pickles
 * are written opcode by opcode (protocol 4), as small as the shape allows.
 */
import { gzipSync } from 'fflate';

/** Opcode bytes, and helpers that emit common sequences. */
export class PickleWriter {
  /** Append raw bytes. */
  raw(...bytes: number[]): this {
    for (const b of bytes) {
      this._push(b);
    }
    return this;
  }

  /** A short ASCII string (SHORT_BINUNICODE) or a longer one (BINUNICODE). */
  str(text: string): this {
    const data = new TextEncoder().encode(text);
    if (data.length < 256) {
      this.raw(0x8c, data.length);
    } else {
      this.raw(0x58, ...u32(data.length));
    }
    for (const b of data) {
      this._push(b);
    }
    return this;
  }

  /** A small non-negative integer (BININT1 / BININT). */
  int(value: number): this {
    return value < 256 ? this.raw(0x4b, value) : this.raw(0x4a, ...u32(value));
  }

  /** A Python float (BINFLOAT, big-endian). */
  float(value: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, value, false);
    return this.raw(0x47, ...b);
  }

  /** Store the top of the stack in the memo (MEMOIZE); returns the memo index. */
  memoize(): number {
    this.raw(0x94);
    return this._memo++;
  }

  /** Push a memo entry (BINGET / LONG_BINGET). */
  get(index: number): this {
    return index < 256 ? this.raw(0x68, index) : this.raw(0x6a, ...u32(index));
  }

  /** Push the memo entry `count` times and append them to the list under them, in batches. */
  appendRefs(index: number, count: number, batch = 1000): this {
    for (let done = 0; done < count; done += batch) {
      this.raw(0x28); // MARK
      for (let k = 0; k < Math.min(batch, count - done); k++) {
        this.get(index);
      }
      this.raw(0x65); // APPENDS
    }
    return this;
  }

  /** A dict of the given keys and values written by `values` (each writes one value). */
  dict(entries: [string, (w: PickleWriter) => void][]): this {
    this.raw(0x7d, 0x28); // EMPTY_DICT, MARK
    for (const [key, write] of entries) {
      this.str(key);
      write(this);
    }
    return this.raw(0x75); // SETITEMS
  }

  /** PROTO 4, the body, STOP. */
  static pickle(body: (w: PickleWriter) => void): Uint8Array {
    const w = new PickleWriter().raw(0x80, 4);
    body(w);
    w.raw(0x2e);
    return w.bytes();
  }

  bytes(): Uint8Array {
    return this._buf.slice(0, this._len);
  }

  private _push(b: number): void {
    if (this._len === this._buf.length) {
      const grown = new Uint8Array(this._buf.length * 2);
      grown.set(this._buf);
      this._buf = grown;
    }
    this._buf[this._len++] = b;
  }

  private _buf = new Uint8Array(1024);
  private _len = 0;
  private _memo = 0;
}

function u32(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}

const BLOCK = (w: PickleWriter, address: number, size = 512) =>
  w.dict([
    ['address', x => x.int(address)],
    ['size', x => x.int(size)],
    ['requested_size', x => x.int(size)],
    ['state', x => x.str('active_allocated')],
    ['frames', x => x.raw(0x5d)]
  ]);

/** A snapshot dict whose segments and traces the callers write. */
function snapshot(segments: (w: PickleWriter) => void, traces: (w: PickleWriter) => void): Uint8Array {
  return PickleWriter.pickle(w =>
    w.dict([
      ['segments', segments],
      ['device_traces', traces]
    ])
  );
}

function segment(
  w: PickleWriter,
  address: number,
  blocks: (x: PickleWriter) => void,
  fields: [string, (x: PickleWriter) => void][] = []
) {
  w.dict([
    ['device', x => x.int(0)],
    ['address', x => x.int(address)],
    ['total_size', x => x.int(2 ** 20)],
    ['stream', x => x.int(0)],
    ['segment_type', x => x.str('large')],
    ...fields,
    ['blocks', blocks]
  ]);
}

/** A snapshot of one segment holding one block with these fields. */
function oneBlock(fields: [string, (w: PickleWriter) => void][]): Uint8Array {
  return snapshot(
    w => {
      w.raw(0x5d, 0x28);
      segment(w, 0, x => {
        x.raw(0x5d, 0x28);
        x.dict(fields);
        x.raw(0x65);
      });
      w.raw(0x65);
    },
    w => w.raw(0x5d)
  );
}

/** The hostile shapes, by name: bytes on disk, each a few KB at most. */
export const HOSTILE = {
  /** A 400 KB integer (LONG4): built byte by byte as a BigInt it took minutes. */
  longInteger(): Uint8Array {
    const n = 400_000;
    const w = new PickleWriter().raw(0x80, 4, 0x8b, ...u32(n));
    const bytes = new Uint8Array(n).fill(0x7f);
    return gzipSync(concat(w.bytes(), bytes, Uint8Array.of(0x2e)));
  },

  /** One segment dict of 2,000 blocks referenced 9,000 times: 18 million blocks from a few hundred bytes. */
  sharedSegment(): Uint8Array {
    const bytes = snapshot(
      w => {
        w.raw(0x5d); // EMPTY_LIST (segments)
        let seg = 0;
        w.raw(0x28); // MARK
        segment(w, 0, x => {
          x.raw(0x5d);
          for (let k = 0; k < 2000; k++) {
            x.raw(0x28);
            BLOCK(x, k * 512);
            x.raw(0x65);
          }
        });
        seg = w.memoize();
        w.raw(0x65);
        w.appendRefs(seg, 8999);
      },
      w => w.raw(0x5d)
    );
    return gzipSync(bytes, { level: 9 });
  },

  /** One trace entry referenced 5 million times. */
  sharedTraceEntry(): Uint8Array {
    const bytes = snapshot(
      w => w.raw(0x5d),
      w => {
        w.raw(0x5d, 0x5d); // device_traces = [ [ ... ] ]
        w.dict([
          ['action', x => x.str('alloc')],
          ['addr', x => x.int(4096)],
          ['size', x => x.int(512)],
          ['stream', x => x.int(0)],
          ['frames', x => x.raw(0x5d)]
        ]);
        const entry = w.memoize();
        w.raw(0x61); // APPEND
        w.appendRefs(entry, 5_000_000 - 1);
        w.raw(0x61); // APPEND the device list to device_traces
      }
    );
    return gzipSync(bytes, { level: 9 });
  },

  /** 1 GiB of zeros as 1,024 gzip members of 1 MiB each (a multi-member stream is valid gzip). */
  gzipBomb(): Uint8Array {
    const member = gzipSync(new Uint8Array(2 ** 20), { level: 9 });
    const out = new Uint8Array(member.length * 1024);
    for (let k = 0; k < 1024; k++) {
      out.set(member, k * member.length);
    }
    return out;
  },

  /** A pickle that starts well and then pushes None 64 Mi times: a bomb that sniffing cannot catch. */
  pickleBomb(): Uint8Array {
    const body = new Uint8Array(64 * 2 ** 20).fill(0x4e);
    body.set([0x80, 4, 0x5d, 0x28]);
    return gzipSync(body, { level: 9 });
  },

  /** device_traces with 3 million (shared, empty) lists: one per device. */
  manyDevices(): Uint8Array {
    const bytes = snapshot(
      w => w.raw(0x5d),
      w => {
        w.raw(0x5d, 0x5d);
        const empty = w.memoize();
        w.raw(0x61);
        w.appendRefs(empty, 3_000_000 - 1);
      }
    );
    return gzipSync(bytes, { level: 9 });
  },

  /** A segment on device 2,000,000,000. */
  hugeDeviceIndex(): Uint8Array {
    return snapshot(
      w => {
        w.raw(0x5d, 0x28);
        w.dict([
          ['device', x => x.int(2_000_000_000)],
          ['address', x => x.int(0)],
          ['total_size', x => x.int(512)],
          ['blocks', x => x.raw(0x5d)]
        ]);
        w.raw(0x65);
      },
      w => w.raw(0x5d)
    );
  },

  /** A block whose size is given by `write` (a negative integer, 1e300, ...). */
  blockSize(write: (w: PickleWriter) => void): Uint8Array {
    return oneBlock([
      ['address', y => y.int(0)],
      ['size', write],
      ['state', y => y.str('active_allocated')]
    ]);
  },

  /** A block whose state is a 5 MB string: an error that quoted it whole was a 5 MB line. */
  longState(): Uint8Array {
    return oneBlock([
      ['address', y => y.int(0)],
      ['size', y => y.int(512)],
      ['state', y => y.str('z'.repeat(5_000_000))]
    ]);
  },

  /** Tuples nested a million deep, as a segment's frames. */
  deepNesting(): Uint8Array {
    return gzipSync(nestedTuplesIn('frames', 1_000_000), { level: 9 });
  },

  /** A segment whose segment_pool_id is tuples nested 200,000 deep: joined as text, it overflowed the stack. */
  deepPoolId(): Uint8Array {
    return nestedTuplesIn('segment_pool_id', 200_000);
  },

  /** A block allocated by a frame whose name and file carry terminal escape sequences. */
  escapeSequences(): Uint8Array {
    return oneBlock([
      ['address', y => y.int(0)],
      ['size', y => y.int(4096)],
      ['state', y => y.str('active_allocated')],
      [
        'frames',
        y => {
          y.raw(0x5d, 0x28);
          y.dict([
            ['name', z => z.str('\x1b[2J\x1b]0;pwned\x07evil')],
            ['filename', z => z.str('/tmp/\x1b[31mred\r\nforged line.py')],
            ['line', z => z.int(3)]
          ]);
          y.raw(0x65);
        }
      ]
    ]);
  },

  /**
   * `module.name` (set, OrderedDict) called `calls` times on one memoised list
   * of `items` items written by `item`, the results kept in a list: each call
   * is 5 bytes, each copies the whole list.
   */
  memoisedCalls(
    module: string,
    name: string,
    items: number,
    item: (w: PickleWriter) => void,
    calls: number
  ): Uint8Array {
    return PickleWriter.pickle(w => {
      w.str(module).str(name).raw(0x93); // STACK_GLOBAL
      const callable = w.memoize();
      w.raw(0x30, 0x5d); // POP, EMPTY_LIST
      const list = w.memoize();
      w.raw(0x28);
      for (let k = 0; k < items; k++) {
        item(w);
      }
      w.raw(0x65, 0x30, 0x5d); // APPENDS, POP, EMPTY_LIST (the results)
      for (let k = 0; k < calls; k++) {
        w.get(callable).get(list).raw(0x85, 0x52, 0x61); // TUPLE1, REDUCE, APPEND
      }
    });
  },

  /** One memoised tuple of `items` strings written by `item`, used as a dict key `uses` times. */
  memoisedTupleKey(items: number, item: (w: PickleWriter) => void, uses: number): Uint8Array {
    return PickleWriter.pickle(w => {
      w.raw(0x28);
      for (let k = 0; k < items; k++) {
        item(w);
      }
      w.raw(0x74); // TUPLE
      const key = w.memoize();
      w.raw(0x30, 0x7d, 0x28); // POP, EMPTY_DICT, MARK
      for (let k = 0; k < uses; k++) {
        w.get(key).int(k);
      }
      w.raw(0x75); // SETITEMS
    });
  },

  /** os.system('touch MARKER') through GLOBAL and REDUCE (protocol 2): must never run. */
  systemCall(marker: string): Uint8Array {
    const w = new PickleWriter().raw(0x80, 2);
    const text = (s: string) => [...s].map(c => c.charCodeAt(0));
    w.raw(0x63, ...text('posix\nsystem\n')); // GLOBAL
    w.raw(0x58, ...u32(`touch ${marker}`.length), ...text(`touch ${marker}`));
    w.raw(0x85, 0x52, 0x2e); // TUPLE1, REDUCE, STOP
    return w.bytes();
  }
};

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A snapshot of one segment whose `field` is an empty tuple inside `depth` one-item tuples. */
function nestedTuplesIn(field: string, depth: number): Uint8Array {
  return snapshot(
    w => {
      w.raw(0x5d, 0x28);
      segment(w, 0, x => x.raw(0x5d), [
        [
          field,
          x => {
            x.raw(0x29); // EMPTY_TUPLE
            for (let k = 0; k < depth; k++) {
              x.raw(0x85); // TUPLE1
            }
          }
        ]
      ]);
      w.raw(0x65);
    },
    w => w.raw(0x5d)
  );
}
