/**
 * A safe unpickler for PyTorch allocator snapshots.
 *
 * It builds plain data only (null, booleans, numbers, strings, bytes, arrays
 * and null-prototype objects) and refuses every opcode that would import or
 * call Python code, except a few harmless constructors that plain-data
 * pickles use (sets, OrderedDict, bytes under protocol 2). Memo and stack are
 * bounded, and so is every item a step copies out of a value already built,
 * so a hostile file fails with a `SnapshotError`, never a hang.
 */
import { checkCopiedItems, DEFAULT_DECODE_LIMITS, IDecodeLimits, LimitError } from './budget';
import { clip, SnapshotError } from './errors';
import { SharedFrames } from './pickleFrames';

/**
 * A Python dict as plain data: an ordinary object whose every key is an own
 * data property. `__proto__` is defined, never assigned, so no key reaches a
 * prototype; read keys with `ownValue` so inherited names never answer.
 * (Plain objects are measured 1.5x faster to build than null-prototype ones,
 * which V8 keeps as hash maps.)
 */
export interface PyDict {
  [key: string]: PyValue;
}

/** Plain data an allowed pickle can hold. Tuples and sets become arrays. */
export type PyValue = null | boolean | number | bigint | string | Uint8Array | PyValue[] | PyDict;

/** Limits that keep a hostile pickle from exhausting memory or time. */
export interface IUnpickleLimits {
  /** Most values on the unpickler stack at once. */
  maxStack: number;
  /** Most nested MARKs open at once. */
  maxMarks: number;
  /** Highest memo index accepted. */
  maxMemo: number;
}

/** Defaults: far above what a real snapshot needs (tens of stack items). */
export const DEFAULT_UNPICKLE_LIMITS: IUnpickleLimits = {
  maxStack: 1 << 20,
  maxMarks: 1 << 16,
  maxMemo: 1 << 26
};

/**
 * Decode a pickle (protocols 2 to 5, and the binary opcodes of 1) to plain
 * data, within the decode budget (integer length) and the machine's limits.
 */
export function unpickle(
  bytes: Uint8Array,
  budget: IDecodeLimits = DEFAULT_DECODE_LIMITS,
  limits: IUnpickleLimits = DEFAULT_UNPICKLE_LIMITS
): PyValue {
  return new Private.Unpickler(bytes, limits, budget).load();
}

/** An empty dict with an empty, null-rooted prototype (fast objects, nothing inherited). */
export function newDict(): PyDict {
  return {} as PyDict;
}

/** The value stored under `key` as the dict's own data, never an inherited property. */
export function ownValue(dict: PyDict, key: string): PyValue | undefined {
  return Object.prototype.hasOwnProperty.call(dict, key) ? dict[key] : undefined;
}

/** Turn a Python key into the string an object can hold, as Python would print it. */
export function pyKey(key: PyValue): string {
  return Private.keyString(key, 0, Private.UNCOUNTED);
}

namespace Private {
  /** Stands for a constructor a plain-data pickle may name; only REDUCE can use it. */
  export class AllowedGlobal {
    constructor(readonly qualifiedName: string) {}
  }

  /** The only globals a snapshot pickle may name, and what calling them builds. */
  const ALLOWED_GLOBALS = new Set([
    'collections OrderedDict',
    'builtins set',
    'builtins frozenset',
    '__builtin__ set',
    '__builtin__ frozenset',
    '_codecs encode'
  ]);

  const MARK = Symbol('mark');
  type StackItem = PyValue | AllowedGlobal | typeof MARK;

  const asciiDecoder = new TextDecoder('latin1');
  const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

  const OPCODE_NAMES: { [op: number]: string } = {
    0x63: 'GLOBAL',
    0x93: 'STACK_GLOBAL',
    0x52: 'REDUCE',
    0x69: 'INST',
    0x6f: 'OBJ',
    0x81: 'NEWOBJ',
    0x92: 'NEWOBJ_EX',
    0x62: 'BUILD',
    0x82: 'EXT1',
    0x83: 'EXT2',
    0x84: 'EXT4',
    0x50: 'PERSID',
    0x51: 'BINPERSID',
    0x97: 'NEXT_BUFFER',
    0x98: 'READONLY_BUFFER'
  };

  /** Counts items a step copies out of a value already built; throws past the budget. */
  export type CopyCounter = (items: number) => void;

  /** For keys outside a decode: nothing to bound. */
  export const UNCOUNTED: CopyCounter = () => undefined;

  /** Longest text of a tuple key: snapshot keys are short names, and each one is built anew. */
  const MAX_TUPLE_KEY_LENGTH = 4096;

  export function keyString(key: PyValue, depth: number, copy: CopyCounter): string {
    if (typeof key === 'string') {
      return key;
    }
    if (key === null) {
      return 'None';
    }
    if (typeof key === 'boolean') {
      return key ? 'True' : 'False';
    }
    if (typeof key === 'number' || typeof key === 'bigint') {
      return String(key);
    }
    if (Array.isArray(key) && depth < 8) {
      // A memoised tuple used as a key is walked each time it is used: count
      // its items, and stop the text before a tuple of long strings makes gigabytes.
      copy(key.length);
      const parts: string[] = [];
      let length = 2;
      for (let i = 0; i < key.length; i++) {
        const part = keyString(key[i], depth + 1, copy);
        length += part.length + 2;
        if (length > MAX_TUPLE_KEY_LENGTH) {
          throw new SnapshotError(
            `pickle has a tuple dict key longer than ${MAX_TUPLE_KEY_LENGTH.toLocaleString('en-US')} characters`
          );
        }
        parts.push(part);
      }
      return '(' + parts.join(', ') + ')';
    }
    throw new SnapshotError('pickle has a dict key that is not plain data');
  }

  export class Unpickler {
    constructor(bytes: Uint8Array, limits: IUnpickleLimits, budget: IDecodeLimits) {
      this._bytes = bytes;
      this._view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      this._limits = limits;
      this._budget = budget;
      this._maxIntegerBytes = budget.maxIntegerBytes;
    }

    load(): PyValue {
      const bytes = this._bytes;
      const end = bytes.length;
      if (end === 0) {
        throw new SnapshotError('empty input: no pickle data');
      }
      const stack = this._stack;
      const memo = this._memo;
      const maxStack = this._limits.maxStack;
      const view = this._view;
      // The opcodes a snapshot is made of are decoded here with local state,
      // so V8 keeps the loop tight; the rest go through _step.
      let pos = this._pos;
      while (pos < end) {
        if (stack.length >= maxStack) {
          throw new SnapshotError('pickle stack is too deep (stack limit)');
        }
        const op = bytes[pos++];
        if (op === 0x68 /* BINGET */ && pos < end) {
          const value = memo[bytes[pos++]];
          if (value === undefined) {
            throw new SnapshotError(`malformed pickle: memo ${bytes[pos - 1]} was never stored`);
          }
          stack.push(value);
        } else if (op === 0x94 /* MEMOIZE */) {
          const top = stack[stack.length - 1];
          if (stack.length === 0 || top === MARK) {
            throw new SnapshotError('malformed pickle: memoizing nothing or a MARK');
          }
          if (memo.length > this._limits.maxMemo) {
            throw new SnapshotError('pickle memo index is too large (memo limit)');
          }
          memo.push(top as PyValue);
        } else if (op === 0x8c /* SHORT_BINUNICODE */ && pos < end) {
          const n = bytes[pos];
          this._pos = pos + 1;
          stack.push(this._utf8(n));
          pos = this._pos;
        } else if (op === 0x7d /* EMPTY_DICT */) {
          stack.push(newDict());
        } else if (op === 0x28 /* MARK */) {
          if (this._marks.length >= this._limits.maxMarks) {
            throw new SnapshotError('pickle nests too deeply (MARK limit)');
          }
          this._marks.push(stack.length);
          this._markMemo.push(memo.length);
          stack.push(MARK);
        } else if (op === 0x4b /* BININT1 */ && pos < end) {
          stack.push(bytes[pos++]);
        } else if (op === 0x4d /* BININT2 */ && pos + 2 <= end) {
          stack.push(bytes[pos] | (bytes[pos + 1] << 8));
          pos += 2;
        } else if (op === 0x4a /* BININT */ && pos + 4 <= end) {
          stack.push(view.getInt32(pos, true));
          pos += 4;
        } else if (op === 0x5d /* EMPTY_LIST */) {
          stack.push([]);
        } else if (op === 0x72 /* LONG_BINPUT */ && pos + 4 <= end) {
          // Protocols 1 to 3 store every container and string with an explicit index.
          const index = view.getUint32(pos, true);
          pos += 4;
          const top = stack[stack.length - 1];
          if (stack.length === 0 || top === MARK || index > this._limits.maxMemo) {
            throw new SnapshotError('malformed pickle: bad LONG_BINPUT');
          }
          memo[index] = top as PyValue;
        } else if (op === 0x6a /* LONG_BINGET */ && pos + 4 <= end) {
          const value = memo[view.getUint32(pos, true)];
          if (value === undefined) {
            throw new SnapshotError(`malformed pickle: memo ${view.getUint32(pos, true)} was never stored`);
          }
          pos += 4;
          stack.push(value);
        } else if (op === 0x58 /* BINUNICODE */ && pos + 4 <= end) {
          const n = view.getUint32(pos, true);
          this._pos = pos + 4;
          stack.push(this._utf8(n));
          pos = this._pos;
        } else {
          this._pos = pos;
          if (this._step(op)) {
            return this._result as PyValue;
          }
          pos = this._pos;
        }
      }
      throw new SnapshotError('truncated pickle: data ends before STOP');
    }

    /** Decode one opcode (the cursor is past it); true on STOP. */
    private _step(op: number): boolean {
      switch (op) {
        case 0x80: {
          // PROTO
          const proto = this._u8();
          if (proto > 5) {
            throw new SnapshotError(`unsupported pickle protocol ${proto}`);
          }
          break;
        }
        case 0x95: // FRAME: a length hint only
          this._need(8);
          this._pos += 8;
          break;
        case 0x2e: {
          // STOP
          if (this._stack.length !== 1 || this._marks.length !== 0) {
            throw new SnapshotError('malformed pickle: STOP with an unbalanced stack');
          }
          const result = this._stack[0];
          if (result === MARK || result instanceof AllowedGlobal) {
            throw new SnapshotError('malformed pickle: STOP on a non-value');
          }
          this._result = result;
          return true;
        }
        // EMPTY_DICT, EMPTY_LIST, MARK and MEMOIZE never get here: load() decodes them.
        case 0x29: // EMPTY_TUPLE
        case 0x8f: // EMPTY_SET
          this._push([]);
          break;
        case 0x61: {
          // APPEND
          const value = this._popValue();
          this._list(this._top()).push(value);
          break;
        }
        case 0x65: {
          // APPENDS
          const at = this._markAt();
          const list = this._list(this._stack[at - 1]);
          const stack = this._stack;
          const filled = list.length === 0;
          for (let i = at + 1; i < stack.length; i++) {
            list.push(this._value(stack[i]));
          }
          stack.length = at;
          if (filled) {
            this._share(list, this._frames.stack(list), at - 1);
          }
          break;
        }
        case 0x90: {
          // ADDITEMS (sets are arrays)
          const items = this._popMark();
          const set = this._list(this._top());
          for (let i = 0; i < items.length; i++) {
            set.push(items[i]);
          }
          break;
        }
        case 0x73: {
          // SETITEM
          const value = this._popValue();
          const key = this._popValue();
          setItem(this._dict(this._top()), key, value, this._copy);
          break;
        }
        case 0x75: {
          // SETITEMS
          const at = this._markAt();
          const stack = this._stack;
          if ((stack.length - at - 1) % 2 !== 0) {
            throw new SnapshotError('malformed pickle: SETITEMS with an odd item count');
          }
          const dict = this._dict(stack[at - 1]);
          const pairs = (stack.length - at - 1) / 2;
          for (let i = at + 1; i < stack.length; i += 2) {
            setItem(dict, this._value(stack[i]), this._value(stack[i + 1]), this._copy);
          }
          stack.length = at;
          if (pairs === FRAME_KEYS) {
            this._share(dict, this._frames.frame(dict), at - 1);
          }
          break;
        }
        case 0x64: {
          // DICT
          const items = this._popMark();
          const dict = newDict();
          for (let i = 0; i + 1 < items.length; i += 2) {
            setItem(dict, items[i], items[i + 1], this._copy);
          }
          // Built whole here, so not memoized yet: the shared dict can stand in for it.
          this._push(items.length === 2 * FRAME_KEYS ? this._frames.frame(dict) : dict);
          break;
        }
        case 0x6c: // LIST (built whole, as DICT is)
          this._push(this._frames.stack(this._popMark()));
          break;
        case 0x74: // TUPLE
        case 0x91: // FROZENSET
          this._push(this._popMark());
          break;
        case 0x85: // TUPLE1
          this._push([this._popValue()]);
          break;
        case 0x86: {
          // TUPLE2
          const b = this._popValue();
          const a = this._popValue();
          this._push([a, b]);
          break;
        }
        case 0x87: {
          // TUPLE3
          const c = this._popValue();
          const b = this._popValue();
          const a = this._popValue();
          this._push([a, b, c]);
          break;
        }
        case 0x4e: // NONE
          this._push(null);
          break;
        case 0x88: // NEWTRUE
          this._push(true);
          break;
        case 0x89: // NEWFALSE
          this._push(false);
          break;
        case 0x4b: // BININT1
          this._push(this._u8());
          break;
        case 0x4d: // BININT2
          this._need(2);
          this._push(this._view.getUint16(this._pos, true));
          this._pos += 2;
          break;
        case 0x4a: // BININT
          this._need(4);
          this._push(this._view.getInt32(this._pos, true));
          this._pos += 4;
          break;
        case 0x8a: // LONG1
          this._push(this._long(this._u8()));
          break;
        case 0x8b: {
          // LONG4: the byte count is signed, as Python reads it
          const n = this._u32();
          if (n >= 0x80000000) {
            throw new SnapshotError('malformed pickle: LONG4 has a negative byte count');
          }
          this._push(this._long(n));
          break;
        }
        case 0x47: // BINFLOAT
          this._need(8);
          this._push(this._view.getFloat64(this._pos, false));
          this._pos += 8;
          break;
        case 0x8c: // SHORT_BINUNICODE
          this._push(this._utf8(this._u8()));
          break;
        case 0x58: // BINUNICODE
          this._push(this._utf8(this._u32()));
          break;
        case 0x8d: // BINUNICODE8
          this._push(this._utf8(this._u64()));
          break;
        case 0x55: // SHORT_BINSTRING (Python 2 str)
          this._push(this._latin1(this._u8()));
          break;
        case 0x54: // BINSTRING
          this._push(this._latin1(this._u32()));
          break;
        case 0x43: // SHORT_BINBYTES
          this._push(this._raw(this._u8()));
          break;
        case 0x42: // BINBYTES
          this._push(this._raw(this._u32()));
          break;
        case 0x8e: // BINBYTES8
        case 0x96: // BYTEARRAY8
          this._push(this._raw(this._u64()));
          break;
        case 0x71: // BINPUT
          this._put(this._u8());
          break;
        case 0x72: // LONG_BINPUT
          this._put(this._u32());
          break;
        case 0x68: // BINGET
          this._push(this._get(this._u8()));
          break;
        case 0x6a: // LONG_BINGET
          this._push(this._get(this._u32()));
          break;
        case 0x30: // POP
          if (this._stack.length && this._stack[this._stack.length - 1] === MARK) {
            this._popMark();
          } else {
            this._popAny();
          }
          break;
        case 0x31: // POP_MARK
          this._popMark();
          break;
        case 0x32: // DUP
          this._push(this._top());
          break;
        case 0x63: // GLOBAL
          this._global(this._line(), this._line());
          break;
        case 0x93: {
          // STACK_GLOBAL
          const name = this._popValue();
          const module = this._popValue();
          if (typeof name !== 'string' || typeof module !== 'string') {
            throw new SnapshotError('malformed pickle: STACK_GLOBAL needs two strings');
          }
          this._global(module, name);
          break;
        }
        case 0x52: {
          // REDUCE
          const args = this._popValue();
          const callable = this._popAny();
          if (!(callable instanceof AllowedGlobal)) {
            throw refused(op, this._pos - 1);
          }
          this._push(this._call(callable, args));
          break;
        }
        default:
          if (OPCODE_NAMES[op] !== undefined) {
            throw refused(op, this._pos - 1);
          }
          throw new SnapshotError(
            `not a supported pickle: unknown opcode 0x${op.toString(16)} at byte ${this._pos - 1}`
          );
      }
      return false;
    }

    private _global(module: string, name: string): void {
      const qualified = `${module} ${name}`;
      if (!ALLOWED_GLOBALS.has(qualified)) {
        throw new SnapshotError(
          `refused pickle: it imports ${clip(`${module}.${name}`)}, and a snapshot never needs code`
        );
      }
      this._push(new AllowedGlobal(qualified));
    }

    private _call(callable: AllowedGlobal, args: PyValue): PyValue {
      if (!Array.isArray(args)) {
        throw new SnapshotError('malformed pickle: REDUCE arguments are not a tuple');
      }
      switch (callable.qualifiedName) {
        case 'collections OrderedDict': {
          const dict = newDict();
          const pairs = args.length ? args[0] : [];
          if (Array.isArray(pairs)) {
            this._copy(pairs.length);
            for (const pair of pairs) {
              if (Array.isArray(pair) && pair.length === 2) {
                setItem(dict, pair[0], pair[1], this._copy);
              }
            }
          }
          return dict;
        }
        case '_codecs encode': {
          // Protocol 2 writes bytes as _codecs.encode(text, 'latin1').
          const text = args[0];
          if (typeof text !== 'string') {
            throw new SnapshotError('malformed pickle: _codecs.encode of a non-string');
          }
          // A memoised string encoded again and again builds bytes the file never held: they count as decoded bytes.
          this._builtBytes += text.length;
          if (this._bytes.length + this._builtBytes > this._budget.maxBytes) {
            throw new LimitError(
              'maxBytes',
              `the pickle's ${this._bytes.length.toLocaleString('en-US')} bytes build ` +
                `${this._builtBytes.toLocaleString('en-US')} more through _codecs.encode`,
              this._budget.maxBytes
            );
          }
          const out = new Uint8Array(text.length);
          for (let i = 0; i < text.length; i++) {
            out[i] = text.charCodeAt(i) & 0xff;
          }
          return out;
        }
        default: {
          // set / frozenset: an array of the items.
          const items = args.length ? args[0] : [];
          if (!Array.isArray(items)) {
            return [];
          }
          this._copy(items.length);
          return items.slice();
        }
      }
    }

    /**
     * Put `shared` (a frame or stack of the same content) in place of `built`
     * (just filled from the MARK _markAt popped, at `stack[at]`) on the stack
     * and in the memo, where a pickler stored it when empty: just before that
     * MARK. The copy left behind has the same items, so a reference to it
     * missed (a pickle memoizing it elsewhere too) still reads the same;
     * nothing else holds it, and it is collected.
     */
    private _share(built: PyDict | PyValue[], shared: PyDict | PyValue[], at: number): void {
      if (shared === built) {
        return;
      }
      this._stack[at] = shared;
      const memo = this._memo;
      const end = Math.min(this._markedMemo, memo.length);
      for (let i = end - 1; i >= 0 && i >= end - MEMO_SLACK; i--) {
        if (memo[i] === built) {
          memo[i] = shared;
          return;
        }
      }
    }

    /** Count items copied out of a value already built, before copying them (see checkCopiedItems). */
    private readonly _copy: CopyCounter = items => {
      this._copied += items;
      checkCopiedItems(this._copied, this._bytes.length, this._budget);
    };

    private _push(item: StackItem): void {
      if (this._stack.length >= this._limits.maxStack) {
        throw new SnapshotError('pickle stack is too deep (stack limit)');
      }
      this._stack.push(item);
    }

    private _popAny(): StackItem {
      if (this._stack.length === 0) {
        throw new SnapshotError('malformed pickle: pop from an empty stack');
      }
      return this._stack.pop() as StackItem;
    }

    private _popValue(): PyValue {
      const item = this._popAny();
      if (item === MARK || item instanceof AllowedGlobal) {
        throw new SnapshotError('malformed pickle: expected a value on the stack');
      }
      return item;
    }

    private _top(): StackItem {
      if (this._stack.length === 0) {
        throw new SnapshotError('malformed pickle: empty stack');
      }
      return this._stack[this._stack.length - 1];
    }

    private _popMark(): PyValue[] {
      const at = this._marks.pop();
      this._markMemo.pop();
      if (at === undefined) {
        throw new SnapshotError('malformed pickle: no MARK to pop to');
      }
      const items = this._stack.splice(at);
      items.shift();
      for (let i = 0; i < items.length; i++) {
        const item = items[i];
        if (item === MARK || item instanceof AllowedGlobal) {
          throw new SnapshotError('malformed pickle: non-value inside a MARK');
        }
      }
      return items as PyValue[];
    }

    /** Pop the innermost MARK and return where it stood; items above it stay for the caller. */
    private _markAt(): number {
      this._markedMemo = this._markMemo.pop() ?? 0;
      const at = this._marks.pop();
      if (at === undefined || at === 0) {
        throw new SnapshotError('malformed pickle: no MARK (or nothing under it) to pop to');
      }
      return at;
    }

    private _value(item: StackItem): PyValue {
      if (item === MARK || item instanceof AllowedGlobal) {
        throw new SnapshotError('malformed pickle: non-value inside a MARK');
      }
      return item;
    }

    private _list(item: StackItem): PyValue[] {
      if (!Array.isArray(item)) {
        throw new SnapshotError('malformed pickle: APPEND to something that is not a list');
      }
      if (Object.isFrozen(item)) {
        throw new SnapshotError(CHANGES_SHARED);
      }
      return item;
    }

    private _dict(item: StackItem): PyDict {
      if (
        item === null ||
        typeof item !== 'object' ||
        Array.isArray(item) ||
        item instanceof Uint8Array ||
        item instanceof AllowedGlobal
      ) {
        throw new SnapshotError('malformed pickle: SETITEM on something that is not a dict');
      }
      if (Object.isFrozen(item)) {
        throw new SnapshotError(CHANGES_SHARED);
      }
      return item as PyDict;
    }

    private _put(index: number): void {
      if (index > this._limits.maxMemo) {
        throw new SnapshotError('pickle memo index is too large (memo limit)');
      }
      const item = this._top();
      if (item === MARK) {
        throw new SnapshotError('malformed pickle: memoizing a MARK');
      }
      this._memo[index] = item as PyValue;
    }

    private _get(index: number): PyValue {
      const value = this._memo[index];
      if (value === undefined) {
        throw new SnapshotError(`malformed pickle: memo ${index} was never stored`);
      }
      return value;
    }

    private _need(n: number): void {
      if (this._pos + n > this._bytes.length) {
        throw new SnapshotError('truncated pickle: data ends inside an opcode');
      }
    }

    private _u8(): number {
      this._need(1);
      return this._bytes[this._pos++];
    }

    private _u32(): number {
      this._need(4);
      const v = this._view.getUint32(this._pos, true);
      this._pos += 4;
      return v;
    }

    private _u64(): number {
      this._need(8);
      const lo = this._view.getUint32(this._pos, true);
      const hi = this._view.getUint32(this._pos + 4, true);
      this._pos += 8;
      // Any length above the input size fails in _need; avoid unsafe integers first.
      return hi > 0x1fffff ? Number.MAX_SAFE_INTEGER : hi * 0x100000000 + lo;
    }

    private _long(n: number): number | bigint {
      // Checked before reading: a 400 KB integer is refused, not built.
      if (n > this._maxIntegerBytes) {
        throw new LimitError(
          'maxIntegerBytes',
          `the pickle holds a ${n.toLocaleString('en-US')}-byte integer`,
          this._maxIntegerBytes
        );
      }
      this._need(n);
      const bytes = this._bytes;
      const start = this._pos;
      this._pos += n;
      if (n === 0) {
        return 0;
      }
      if (n <= 6) {
        // Fast path: fits exactly in a double.
        let v = 0;
        for (let i = n - 1; i >= 0; i--) {
          v = v * 256 + bytes[start + i];
        }
        if (bytes[start + n - 1] & 0x80) {
          v -= Math.pow(2, 8 * n);
        }
        return v;
      }
      // One hex string, one BigInt: linear in n (shifting a BigInt per byte is quadratic).
      let hex = '0x';
      for (let i = n - 1; i >= 0; i--) {
        hex += HEX[bytes[start + i]];
      }
      let v = BigInt(hex);
      if (bytes[start + n - 1] & 0x80) {
        v -= BigInt(1) << BigInt(8 * n);
      }
      return Number.isSafeInteger(Number(v)) ? Number(v) : v;
    }

    private _utf8(n: number): string {
      this._need(n);
      const bytes = this._bytes;
      const start = this._pos;
      this._pos += n;
      if (n > 0 && n <= STRING_CACHE_MAX_LENGTH) {
        // Snapshots repeat the same names and paths hundreds of thousands of
        // times as separate strings: hand back one shared copy of each. The
        // slot comes from a few sampled bytes, so a hit costs one compare pass.
        const last = start + n - 1;
        const slot =
          (Math.imul(n ^ (bytes[start] << 8) ^ (bytes[last] << 16) ^ bytes[start + (n >> 1)], 0x9e3779b1) ^
            (bytes[last - (n >> 2)] << 4)) >>>
          (32 - STRING_CACHE_BITS);
        const cached = this._strings[slot];
        if (cached !== undefined && cached.length === n && sameAscii(cached, bytes, start)) {
          return cached;
        }
        let ascii = true;
        for (let i = start; i <= last; i++) {
          if (bytes[i] >= 0x80) {
            ascii = false;
            break;
          }
        }
        if (ascii) {
          const text = String.fromCharCode.apply(null, bytes.subarray(start, start + n) as unknown as number[]);
          this._strings[slot] = text;
          return text;
        }
      }
      try {
        return utf8Decoder.decode(bytes.subarray(start, start + n));
      } catch {
        // Python writes str with 'surrogatepass': a path it read with surrogateescape keeps its lone surrogates
        const text = surrogatePassUtf8(bytes, start, start + n);
        if (text === null) {
          throw new SnapshotError('malformed pickle: a string is not valid UTF-8');
        }
        return text;
      }
    }

    private _latin1(n: number): string {
      this._need(n);
      const s = asciiDecoder.decode(this._bytes.subarray(this._pos, this._pos + n));
      this._pos += n;
      return s;
    }

    private _raw(n: number): Uint8Array {
      this._need(n);
      const out = this._bytes.slice(this._pos, this._pos + n);
      this._pos += n;
      return out;
    }

    private _line(): string {
      const bytes = this._bytes;
      const start = this._pos;
      while (this._pos < bytes.length && bytes[this._pos] !== 0x0a) {
        this._pos++;
      }
      if (this._pos >= bytes.length) {
        throw new SnapshotError('truncated pickle: data ends inside a GLOBAL name');
      }
      const line = asciiDecoder.decode(bytes.subarray(start, this._pos));
      this._pos++;
      return line;
    }

    private readonly _bytes: Uint8Array;
    private readonly _view: DataView;
    private readonly _limits: IUnpickleLimits;
    private readonly _budget: IDecodeLimits;
    private readonly _maxIntegerBytes: number;
    private _copied = 0;
    private _builtBytes = 0;
    private _pos = 0;
    private readonly _stack: StackItem[] = [];
    private readonly _marks: number[] = [];
    /** The memo's length when each open MARK was pushed. */
    private readonly _markMemo: number[] = [];
    /** That length for the MARK _markAt popped last. */
    private _markedMemo = 0;
    private readonly _memo: PyValue[] = [];
    private _result: PyValue | undefined;
    private readonly _strings: (string | undefined)[] = new Array(STRING_CACHE_SIZE);
    private readonly _frames = new SharedFrames();
  }

  /** Items of a frame dict: name, filename, line. */
  const FRAME_KEYS = 3;
  /** Memo entries searched back from a MARK for the container filled from it (a pickler's is the one just before). */
  const MEMO_SLACK = 4;

  /** No pickler changes a frame or a stack once built: shared, the change would reach every copy. */
  const CHANGES_SHARED = 'malformed pickle: it changes a frame or a stack after building it';

  const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

  const STRING_CACHE_BITS = 14;
  const STRING_CACHE_SIZE = 1 << STRING_CACHE_BITS;
  const STRING_CACHE_MAX_LENGTH = 160;

  function sameAscii(text: string, bytes: Uint8Array, start: number): boolean {
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) !== bytes[start + i]) {
        return false;
      }
    }
    return true;
  }

  /**
   * UTF-8 as Python writes it with 'surrogatepass' (lone surrogates encoded
   * as three bytes, ED A0-BF xx); null where the bytes are not that either.
   */
  function surrogatePassUtf8(bytes: Uint8Array, start: number, end: number): string | null {
    const units: number[] = [];
    for (let i = start; i < end;) {
      const b = bytes[i];
      const need =
        b < 0x80 ? 0 : b >= 0xc2 && b < 0xe0 ? 1 : b >= 0xe0 && b < 0xf0 ? 2 : b >= 0xf0 && b < 0xf5 ? 3 : -1;
      if (need < 0 || i + need >= end) {
        return null;
      }
      let code = need === 0 ? b : b & (0x3f >> need);
      for (let k = 1; k <= need; k++) {
        const c = bytes[i + k];
        if ((c & 0xc0) !== 0x80) {
          return null;
        }
        code = (code << 6) | (c & 0x3f);
      }
      if ((need === 2 && code < 0x800) || (need === 3 && (code < 0x10000 || code > 0x10ffff))) {
        return null; // overlong, or past Unicode
      }
      if (code > 0xffff) {
        units.push(0xd800 + ((code - 0x10000) >> 10), 0xdc00 + ((code - 0x10000) & 0x3ff));
      } else {
        units.push(code);
      }
      i += need + 1;
    }
    let text = '';
    for (let k = 0; k < units.length; k += 8192) {
      text += String.fromCharCode(...units.slice(k, k + 8192));
    }
    return text;
  }

  function setItem(dict: PyDict, key: PyValue, value: PyValue, copy: CopyCounter): void {
    const k = typeof key === 'string' ? key : keyString(key, 0, copy);
    if (k === '__proto__') {
      // Assignment would set the prototype: define an own property instead.
      Object.defineProperty(dict, k, {
        value,
        enumerable: true,
        writable: true,
        configurable: true
      });
    } else {
      dict[k] = value;
    }
  }

  function refused(op: number, at: number): SnapshotError {
    return new SnapshotError(
      `refused pickle: opcode ${OPCODE_NAMES[op]} at byte ${at} would import or call code, and a snapshot never needs it`
    );
  }
}
