/**
 * Frame dicts shared by content while unpickling. Torch writes a new
 * `{name, filename, line}` dict for every frame of every stack: a real
 * recording's 364,500 frame dicts hold 11 distinct frames, and a 190 MB
 * snapshot's 9.6 million took 600 MB of the decoded graph. The unpickler
 * hands back one dict per distinct frame instead, as it does one string per
 * distinct name.
 */
import type { PyDict } from './pickle';

/** Frame dicts seen so far in one decode, by filename, name and line. */
export class SharedFrameDicts {
  /**
   * The dict already seen with the same content as `dict`, or `dict` itself
   * (now the one shared) when it is a frame seen first; anything that is not
   * exactly a frame (three keys: string name and filename, number line) comes
   * back as it is.
   */
  share(dict: PyDict): PyDict {
    const name = dict.name;
    const filename = dict.filename;
    const line = dict.line;
    // Object.prototype has none of these names: a value here is the dict's own.
    if (typeof name !== 'string' || typeof filename !== 'string' || typeof line !== 'number' || !hasThreeKeys(dict)) {
      return dict;
    }
    // Nested maps, as FrameTable does: the strings are shared objects whose hashes V8 caches.
    let byName = this._byFile.get(filename);
    if (byName === undefined) {
      byName = new Map();
      this._byFile.set(filename, byName);
    }
    let byLine = byName.get(name);
    if (byLine === undefined) {
      byLine = new Map();
      byName.set(name, byLine);
    }
    const shared = byLine.get(line);
    if (shared !== undefined) {
      return shared;
    }
    byLine.set(line, dict);
    return dict;
  }

  private readonly _byFile = new Map<string, Map<string, Map<number, PyDict>>>();
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
