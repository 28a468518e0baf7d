/**
 * The extension's public contract: ids that tests, tools and other
 * extensions may rely on, and the interfaces plugins share.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';
import type { SnapshotStore } from './capture/store';
import type { BlockQuery } from './capture/protocol';
import type { IHolderAnswer, Snapshot } from './engine';
import type { EngineOp, EnginePayload, EngineResult } from './worker/handlers';

/** The npm package name, the prefix of every plugin id. */
export const PACKAGE_NAME = 'jupyterlab-cuda-memdiff';

/** Id of the plugin whose schema (schema/plugin.json) holds every setting. */
export const SETTINGS_ID = `${PACKAGE_NAME}:plugin`;

/** Command ids, `cuda-memdiff:<verb-noun>`. */
export namespace CommandIDs {
  /** Open (and reveal) the snapshot diff side panel. */
  export const openPanel = 'cuda-memdiff:open-panel';
}

/** DOM id of the side panel, a stable hook for tests. */
export const PANEL_ID = 'cuda-memdiff-panel';

/** What the extension keeps for one notebook. */
export interface INotebookCapture {
  /** The notebook's snapshots. */
  readonly store: SnapshotStore;
  /** Ask the kernel who holds these blocks (rejects when it cannot answer). */
  requestHolders(blocks: readonly BlockQuery[]): Promise<IHolderAnswer>;
}

/** Finds the capture of a notebook panel; provided by the capture plugin. */
export interface ICaptureRegistry {
  /** The capture of a notebook panel, if it has one. */
  captureFor(panel: NotebookPanel): INotebookCapture | undefined;
  /** Emitted when a notebook's capture is created or disposed. */
  readonly changed: ISignal<ICaptureRegistry, NotebookPanel>;
}

/** The capture registry token. */
export const ICaptureRegistry = new Token<ICaptureRegistry>(
  'jupyterlab-cuda-memdiff:ICaptureRegistry',
  'Per-notebook GPU memory snapshots taken by the kernel helper.'
);

/** More command ids. */
export namespace CommandIDs {
  /** Open a notebook cell and put the cursor on a line (args: cellId, line). */
  export const revealCell = 'cuda-memdiff:reveal-cell';
  /** Write the active notebook's snapshots as a session folder next to it. */
  export const exportSession = 'cuda-memdiff:export-session';
  /** Save the snapshot shown in the panel as a pickle PyTorch's tools open. */
  export const saveSnapshot = 'cuda-memdiff:save-snapshot';
  /** Rank the active notebook's cells by leaked GPU memory, show why, and jump to the first. */
  export const findLeakingCell = 'cuda-memdiff:find-leaking-cell';
}

/** The diff panel, for plugins that bring it snapshots (files). */
export interface IDiffPanel {
  /**
   * Open a snapshot file in the panel, as bytes or already parsed (its server
   * path, when it has one, tells files of the same name apart); false, with a
   * message shown there, when it cannot be read.
   */
  addFile(name: string, source: Uint8Array | Snapshot, path?: string): boolean;
  /** Show the panel. */
  reveal(): void;
  /** The later snapshot of the panel's comparison, with a name for saving it. */
  shownSnapshot(): { name: string; snapshot: Snapshot } | null;
}

/** The diff panel token. */
export const IDiffPanel = new Token<IDiffPanel>(
  'jupyterlab-cuda-memdiff:IDiffPanel',
  'The CUDA memory diff side panel.'
);

/** File type of snapshot pickles (and their JSON form). */
export const SNAPSHOT_FILE_TYPE = 'cuda-memdiff-snapshot';

/**
 * Runs the engine's long work (parsing files, ranking leaks) off the page's
 * main thread; see src/worker/handlers.ts for the operations.
 */
export interface IEngineWorker {
  /** Run `op`; `transfer` lists buffers in the payload to move, not copy. */
  call<K extends EngineOp>(op: K, payload: EnginePayload<K>, transfer?: readonly ArrayBuffer[]): Promise<EngineResult<K>>;
  /** Whether the operations run in a worker rather than on the page. */
  readonly inWorker: boolean;
}

/** The engine worker token. */
export const IEngineWorker = new Token<IEngineWorker>(
  'jupyterlab-cuda-memdiff:IEngineWorker',
  'Runs snapshot parsing and leak ranking in a Web Worker.'
);
