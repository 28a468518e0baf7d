/**
 * The one road a snapshot file takes to the diff panel, whether it was
 * opened from the file browser or dropped on the panel: the engine worker
 * reads an opened file from the server itself (the page never holds its
 * bytes), a dropped file's bytes move (not copied) to it, and it parses them
 * once under the engine's decode budget; the page gets the blocks as one
 * array of numbers and hands them to the panel a step a task, so no step
 * holds the page long.
 */
import { unreadableReason } from '../components/unreadable';
import { fromTransfer } from '../engine';
import { IDiffPanel, IEngineWorker } from '../tokens';
import type { IOpenedFile, OpeningProgress } from '../worker/files';
import type { IFileRequest } from '../worker/fetch';

/** Ids the worker keeps parsed files under, one per opening. */
let lastFileId = 0;

/** A new id for a file the worker is to parse. */
export function nextFileId(): number {
  return ++lastFileId;
}

/**
 * Parse `bytes` in the engine worker; their buffer moves there, so the page
 * keeps no copy of the file. With `keep` (an opened file's view asks about
 * its timeline) the worker keeps the parse under `id` until
 * `closeSnapshotFile`; without it, the worker keeps nothing.
 */
export function parseInWorker(
  worker: IEngineWorker,
  bytes: Uint8Array,
  options: { id: number; width: number; keep: boolean }
): Promise<IOpenedFile> {
  return worker.call('openSnapshotFile', { ...options, bytes }, [bytes.buffer as ArrayBuffer]);
}

/**
 * Have the engine worker read the file `request` names from the server and
 * parse it, kept under `id` until `closeSnapshotFile` (which also stops the
 * reading); `progress` hears how far it has got. Where no worker runs (Node,
 * jest, a browser that refused it) the same operation reads on the page.
 */
export function fetchInWorker(
  worker: IEngineWorker,
  request: IFileRequest,
  options: { id: number; width: number },
  progress: (value: OpeningProgress) => void
): Promise<IOpenedFile> {
  return worker.call('fetchSnapshotFile', { ...options, request }, [], progress);
}

/**
 * Give a parsed file to the diff panel, one step a task: the blocks decoded
 * into objects; the panel shown (the shell's layout); the file added with
 * its post-mortem, which the panel renders in slices. False when `alive`
 * says the opening was abandoned (its view closed) between steps.
 */
export async function handToPanel(
  panel: IDiffPanel,
  name: string,
  opened: IOpenedFile,
  path: string | null,
  alive: () => boolean = () => true
): Promise<boolean> {
  const snapshot = fromTransfer(opened.snapshot);
  await Private.nextTask();
  if (!alive()) {
    return false;
  }
  panel.reveal();
  await Private.nextTask();
  if (!alive()) {
    return false;
  }
  panel.addFile(name, snapshot, path ?? undefined, opened.oom);
  return true;
}

/**
 * Open files dropped on the panel, one after the other, as opened files are
 * opened: a file that cannot be read is named in the panel with its reason,
 * and what the panel already shows stays.
 */
export async function openDroppedFiles(
  files: readonly File[],
  panel: IDiffPanel,
  worker: IEngineWorker
): Promise<void> {
  for (const file of files) {
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const opened = await parseInWorker(worker, bytes, { id: nextFileId(), width: 0, keep: false });
      await handToPanel(panel, file.name, opened, null);
    } catch (reason) {
      panel.fileUnreadable(file.name, unreadableReason(reason));
    }
  }
}

namespace Private {
  /** Resolves in a task of its own, once the page has had its turn. */
  export function nextTask(): Promise<void> {
    return new Promise(resolve => setTimeout(resolve, 0));
  }
}
