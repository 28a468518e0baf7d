/**
 * A name for a file or folder the export is about to write that nothing in
 * its folder has yet: `base`, then `base-2`, `base-3`... The folder is listed
 * once rather than each candidate asked for, since every request for a path
 * that is not there is a 404 (a red line in the browser console, a warning
 * in the server log) for what is no error.
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { Contents } from '@jupyterlab/services';

/**
 * The first of `base`, `base-2`, `base-3`... (each with `extension`) that
 * `taken` does not hold, told apart without case: on a disk that ignores it
 * (macOS, Windows) `Demo.pickle` is `demo.pickle`, and skipping a name costs
 * nothing.
 */
export function freeName(taken: ReadonlySet<string>, base: string, extension = ''): string {
  const names = new Set([...taken].map(name => name.toLowerCase()));
  for (let n = 1; ; n++) {
    const candidate = `${base}${n === 1 ? '' : `-${n}`}${extension}`;
    if (!names.has(candidate.toLowerCase())) {
      return candidate;
    }
  }
}

/** A path beside `base`'s folder's entries that none of them has (see freeName); `base` is a path. */
export async function freePath(contents: Contents.IManager, base: string, extension = ''): Promise<string> {
  const folder = PathExt.dirname(base);
  const listing = await contents.get(folder, { type: 'directory', content: true });
  const taken = new Set((listing.content as Contents.IModel[]).map(entry => entry.name));
  return PathExt.join(folder, freeName(taken, PathExt.basename(base), extension));
}
