/**
 * Reading the CLI's input from disk under the byte limit, with what went
 * wrong said as one line that names the path: a Node error's own message
 * ("EISDIR: illegal operation on a directory, read") names neither.
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  checkSize,
  decodeText,
  IDecodeLimits,
  ISessionManifest,
  LimitError,
  parseManifest,
  SnapshotError
} from '../engine';

/** A device or pipe is read this much at a time, so the byte limit stops it within one chunk. */
const STREAM_CHUNK = 1 << 20;

/** What a file system error means, in words. */
const PROBLEMS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a folder, not a file',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files'
};

/** A Node file system error (it has a code), as opposed to a bug. */
export function isFileSystemError(reason: unknown): reason is NodeJS.ErrnoException {
  return reason instanceof Error && typeof (reason as NodeJS.ErrnoException).code === 'string';
}

/** `path: what is wrong` for a file system error. */
export function fileProblem(file: string, reason: unknown): SnapshotError {
  const code = isFileSystemError(reason) ? reason.code! : '';
  return new SnapshotError(`${file}: ${PROBLEMS[code] ?? (reason as Error).message}`);
}

/** True for a folder (a dangling symbolic link, or anything that cannot be looked at, is not one). */
export function isFolder(file: string): boolean {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}

/**
 * A Buffer's bytes as a plain Uint8Array, without copying them: `new
 * Uint8Array(buffer)` copied the whole file (a 190 MB snapshot held twice),
 * and a Buffer's own `slice` would share memory where the engine expects a copy.
 */
function plainBytes(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** Everything a device or pipe gives, refused once it passes `maxBytes`. */
function readStream(file: string, maxBytes: number): Uint8Array {
  const fd = fs.openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    const chunk = Buffer.allocUnsafe(STREAM_CHUNK);
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) {
        return plainBytes(Buffer.concat(chunks, total));
      }
      total += n;
      if (total > maxBytes) {
        throw new LimitError('maxBytes', `${file} gives more than ${maxBytes.toLocaleString('en-US')} bytes`, maxBytes);
      }
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A file's bytes, at most `limits.maxBytes` of them. A regular file over the
 * limit is refused before it is read; anything else given on the command
 * line (`/dev/zero`, a pipe such as `<(zcat snap.pickle.gz)`) has no size to
 * check, so it is read in chunks until it ends or passes it. A file a
 * session folder names must be a regular one (`inFolder`): a pipe there would
 * wait for a writer that never comes.
 */
export function readBytes(file: string, limits: IDecodeLimits, inFolder = false): Uint8Array {
  try {
    const stat = fs.statSync(file);
    if (stat.isDirectory()) {
      throw new SnapshotError(`${file}: is a folder, not a file`);
    }
    if (!stat.isFile()) {
      if (inFolder) {
        throw new SnapshotError(`${file}: is ${Private.kindOf(stat)}, not a file`);
      }
      return readStream(file, limits.maxBytes);
    }
    // Gzip cannot shrink on decompression, so the file's own size is checked first.
    checkSize(stat.size, limits.maxBytes);
    return plainBytes(fs.readFileSync(file));
  } catch (reason) {
    if (reason instanceof SnapshotError) {
      throw reason;
    }
    throw fileProblem(file, reason);
  }
}

/** A file a session folder holds (a snapshot, a holders or roles file), as readBytes reads it. */
export function readFolderFile(file: string, limits: IDecodeLimits): Uint8Array {
  return readBytes(file, limits, true);
}

/** A session folder's text file (a manifest, an index) under the same limit. */
export function readText(file: string, limits: IDecodeLimits): string {
  return decodeText(readFolderFile(file, limits), file);
}

/** The manifest of the session folder a snapshot file lies in, or null where the folder has none. */
export function manifestBeside(file: string, limits: IDecodeLimits): ISessionManifest | null {
  const manifestPath = path.join(path.dirname(file), 'manifest.json');
  if (!fs.existsSync(manifestPath)) {
    return null;
  }
  const text = readText(manifestPath, limits);
  // "manifest.json cells[2] ..." names no folder; the snapshot given may be far from the working one.
  return inFolder(path.dirname(manifestPath), () => parseManifest(text), 'a file inside');
}

/** Reads the manifest beside a snapshot file (manifestBeside), once per folder. */
export type ManifestsBeside = (file: string) => ISessionManifest | null;

/**
 * `manifestBeside` for one command that asks for a folder's manifest more
 * than once (diff's cell names, then each file's roles): each folder's is read
 * and parsed once, and a read that failed fails again without reading.
 */
export function manifestsBeside(limits: IDecodeLimits): ManifestsBeside {
  const read = new Map<string, { manifest: ISessionManifest | null } | { error: unknown }>();
  return file => {
    const folder = path.resolve(path.dirname(file));
    let got = read.get(folder);
    if (!got) {
      try {
        got = { manifest: manifestBeside(file, limits) };
      } catch (error) {
        got = { error };
      }
      read.set(folder, got);
    }
    if ('error' in got) {
      throw got.error;
    }
    return got.manifest;
  };
}

/**
 * Whether a message already names `place` (a file or folder) as what it is
 * about: it starts with the place, then a path separator or ':'. A bare
 * prefix is not enough: `/a/run1` is no prefix of a message about
 * `/a/run10/...`, nor the folder `rank` of `rank 0 has no capture point 9`.
 */
export function namesPlace(message: string, place: string): boolean {
  const bare = place.replace(/[\\/]+$/, '');
  // Paths the CLI builds under it (path.join) come normalized: `./rank` reads `rank/rank0/...`.
  return [bare, path.normalize(bare)].some(p => message.startsWith(p) && /^[\\/:]/.test(message.slice(p.length)));
}

/**
 * `fn`'s result, with a refusal from the engine put under the folder it is
 * about, as every other refusal of the folder is. The engine names what it
 * read inside the folder (`ranks.json is not valid JSON`, `rank1: no
 * manifest.json`): with `names` 'a file inside' that becomes the file's path
 * (`DIR/ranks.json ...`); a refusal about the folder as a whole (`no rank 5`)
 * reads `DIR: no rank 5`. One that names the folder already is left as it is.
 */
export function inFolder<T>(dir: string, fn: () => T, names: 'a file inside' | 'the folder'): T {
  try {
    return fn();
  } catch (reason) {
    if (reason instanceof SnapshotError && !namesPlace(reason.message, dir)) {
      const bare = dir.replace(/[\\/]+$/, '');
      throw new SnapshotError(`${bare}${names === 'a file inside' ? path.sep : ': '}${reason.message}`);
    }
    throw reason;
  }
}

namespace Private {
  /** What a file that is not a regular one is, in words. */
  export function kindOf(stat: fs.Stats): string {
    if (stat.isFIFO()) {
      return 'a pipe';
    }
    if (stat.isSocket()) {
      return 'a socket';
    }
    return stat.isCharacterDevice() || stat.isBlockDevice() ? 'a device' : 'not a regular file';
  }
}
