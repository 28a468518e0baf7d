/**
 * Frames and stacks shared by content while unpickling. Torch writes a new
 * `{name, filename, line}` dict for every frame of every stack, and a new list
 * for every stack: a real recording's 364,500 frame dicts hold 11 distinct
 * frames, and a 190 MB snapshot's 9.6 million dicts and 400,000 lists took
 * 700 MB of the decoded graph. The unpickler hands back one dict per distinct
 * frame and one list per distinct stack instead, as it does one string per
 * distinct name. What is shared is frozen: a pickle that changed it after
 * building it would change every frame or stack of that content.
 */
import { FrameTable } from './model';
import type { PyDict, PyValue } from './pickle';

/** Stacks at least this long are not shared: a pickler appends this many items at a time, so more may follow. */
const PICKLER_BATCH = 1000;

/** Distinct stacks kept under one hash; past it a stack is not shared (real ones collide rarely). */
const MAX_BUCKET = 8;

/** Frame dicts and stacks of them seen so far in one decode. */
export class SharedFrames {
  /**
   * The dict already seen with the same content as `dict`, or `dict` itself
   * (now the one shared) when it is a frame seen first; anything that is not
   * exactly a frame (three keys: string name and filename, number line) comes
   * back as it is.
   */
  frame(dict: PyDict): PyDict {
    const name = dict.name;
    const filename = dict.filename;
    const line = dict.line;
    // Object.prototype has none of these names: a value here is the dict's own.
    if (typeof name !== 'string' || typeof filename !== 'string' || typeof line !== 'number' || !hasThreeKeys(dict)) {
      return dict;
    }
    // The frame table's id of the content says which dict stands for it.
    const id = this._table.internFrame(name, filename, line);
    const shared = this._dicts[id];
    if (shared !== undefined) {
      return shared;
    }
    this._dicts[id] = Object.freeze(dict);
    this._frameIds.set(dict, id);
    return dict;
  }

  /**
   * The list already seen holding the same shared frames as `list`, or `list`
   * itself (now the one shared) when it is such a stack seen first; a list of
   * anything else, or too long to be complete, comes back as it is.
   */
  stack(list: PyValue[]): PyValue[] {
    const n = list.length;
    if (n < 2 || n >= PICKLER_BATCH) {
      return list;
    }
    let hash = n;
    for (let i = 0; i < n; i++) {
      const id = this._frameIds.get(list[i] as PyDict);
      if (id === undefined) {
        return list;
      }
      hash = Math.imul(hash ^ id, 0x9e3779b1);
    }
    // Hashed by its frames, compared item by item: no key string built per stack.
    const bucket = this._stacks.get(hash);
    for (const known of bucket ?? []) {
      if (sameItems(known, list)) {
        return known;
      }
    }
    // Past MAX_BUCKET not shared: a crafted pickle's many stacks of one hash would make each lookup compare them all.
    if (!bucket || bucket.length < MAX_BUCKET) {
      Object.freeze(list);
      if (bucket) {
        bucket.push(list);
      } else {
        this._stacks.set(hash, [list]);
      }
    }
    return list;
  }

  private readonly _table = new FrameTable();
  /** The shared dict of each frame, by its id in `_table`. */
  private readonly _dicts: PyDict[] = [];
  private readonly _frameIds = new Map<PyDict, number>();
  private readonly _stacks = new Map<number, PyValue[][]>();
}

function hasThreeKeys(dict: PyDict): boolean {
  let count = 0;
  for (const key in dict) {
    if (Object.prototype.hasOwnProperty.call(dict, key)) {
      count++;
    }
  }
  return count === 3;
}

function sameItems(a: readonly PyValue[], b: readonly PyValue[]): boolean {
  if (a.length !== b.length) {
    return false;
  }
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) {
      return false;
    }
  }
  return true;
}
