/**
 * The extension's public contract: ids that tests, tools and other
 * extensions may rely on, and the interfaces plugins share.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { Token } from '@lumino/coreutils';
import { ISignal } from '@lumino/signaling';
import type { BlockQuery } from './capture/protocol';
import type { CellRecord, ICellNote, IHelperState } from './capture/store';
import type {
  Block,
  BlockRoles,
  CellCodeNames,
  FrameTable,
  ICellSource,
  IHolderAnswer,
  IOomReport,
  IPeakAnatomy,
  Snapshot
} from './engine';
import type { IFileOom } from './worker/files';
import type { EngineOp, EnginePayload, EngineProgress, EngineResult } from './worker/handlers';

/** The npm package name, the prefix of every plugin id. */
export const PACKAGE_NAME = 'jupyterlab-cuda-memdiff';

/** Id of the capture plugin, whose schema (schema/plugin.json) holds the settings it reads. */
export const SETTINGS_ID = `${PACKAGE_NAME}:plugin`;

/** Command ids, `cuda-memdiff:<verb-noun>`. */
export namespace CommandIDs {
  /** Open (and reveal) the snapshot diff side panel. */
  export const openPanel = 'cuda-memdiff:open-panel';
  /** Open a notebook cell and put the cursor on a line (args: cellId, line). */
  export const revealCell = 'cuda-memdiff:reveal-cell';
  /** Write the active notebook's snapshots as a session folder next to it. */
  export const exportSession = 'cuda-memdiff:export-session';
  /** Save the snapshot shown in the panel as a pickle PyTorch's tools open. */
  export const saveSnapshot = 'cuda-memdiff:save-snapshot';
  /** Rank the active notebook's cells by leaked GPU memory, show why, and jump to the first. */
  export const findLeakingCell = 'cuda-memdiff:find-leaking-cell';
  /** Open the panel on a cell's diff, what its latest run left against the cell before (args: cellId). */
  export const showCellDiff = 'cuda-memdiff:show-cell-diff';
}

/** DOM id of the side panel, a stable hook for tests. */
export const PANEL_ID = 'cuda-memdiff-panel';

/** A notebook's snapshots as views read them (the capture's SnapshotStore). */
export interface ISnapshotStore {
  /** Every record kept, in execution order. */
  readonly records: readonly CellRecord[];
  /** The records of cells' runs, in execution order (an OOM record is a moment inside a run). */
  readonly cellRuns: readonly CellRecord[];
  /** Frames shared by every snapshot of the notebook. */
  readonly frames: FrameTable;
  /** What the helper said last about the kernel. */
  readonly helper: IHelperState;
  /** The current kernel session (rises at each restart or kernel change). */
  readonly kernelSession: number;
  /** Records dropped beyond the snapshots kept. */
  readonly droppedCount: number;
  /** The session's peak allocated bytes as the kernel last reported it. */
  readonly sessionPeakBytes: number;
  /** Emitted when records, notes or the helper's state change. */
  readonly changed: ISignal<unknown, void>;
  /** The latest record of a cell. */
  latestForCell(cellId: string): CellRecord | undefined;
  /** The record whose figures the cell's badge shows: its latest, unless it ran since in a kernel that gave none. */
  shownForCell(cellId: string): CellRecord | undefined;
  /** Why a cell has no snapshot, when the kernel said. */
  noteForCell(cellId: string): ICellNote | undefined;
  /** Whether the record's execution ran out of memory. */
  hadOom(record: CellRecord): boolean;
  /** The post-mortem of the record's execution's out-of-memory error; null when it had none. */
  oomOf(record: CellRecord): IOomReport | null;
  /** What was alive at the record's peak, from its allocation history; null without one. */
  peakOf(record: CellRecord): IPeakAnatomy | null;
  /** The folders (`/tmp/ipykernel_<pid>/`) of the cell code the notebook's kernels ran, as their snapshots name it. */
  readonly cellCodeFolders: ReadonlySet<string>;
  /** The cell (its id) whose run allocated each block alive at the record's peak; null where unknown. */
  runsAtPeak(record: CellRecord): (b: Block) => string | null;
  /** The cell (its id) whose run allocated each block alive at the record's out-of-memory error; null where unknown. */
  runsAtOom(record: CellRecord): (b: Block) => string | null;
  /** Each allocated block's role in a record's snapshot; null when the kernel sent none. */
  blockRolesOf(record: CellRecord): BlockRoles | null;
  /** The kernel's answer about who held the blocks after a record, where it was asked then; else null. */
  holdersOf(record: CellRecord): IHolderAnswer | null;
  /** Keep the kernel's answer given when `record` was the latest (the newest few are kept). */
  keepHolders(record: CellRecord, answer: IHolderAnswer): void;
}

/** What the extension keeps for one notebook. */
export interface INotebookCapture {
  /** The notebook's snapshots. */
  readonly store: ISnapshotStore;
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

/** A notebook as the side panel needs it: its snapshots and its cells' sources. */
export interface IFollowedNotebook {
  readonly title: string;
  readonly store: ISnapshotStore;
  /** The code cells as they are now (id, source and place), in notebook order. */
  cells(): ICellSource[];
  /** Emitted when cells are added, moved or deleted: the places that name cells which have not run move. */
  readonly cellsChanged?: ISignal<unknown, unknown>;
  /** Emitted as the cells' contents change, typing included: an edit changes how its cell's earlier frames read. */
  readonly contentChanged?: ISignal<unknown, unknown>;
  /** Ask the kernel who holds these blocks; absent where no kernel can answer. */
  requestHolders?(blocks: readonly BlockQuery[]): Promise<IHolderAnswer>;
}

/** The diff panel, for plugins that bring it snapshots (files). */
export interface IDiffPanel {
  /**
   * Show a snapshot file in the panel, parsed in the engine worker (its
   * server path, when it has one, tells files of the same name apart), on
   * its out-of-memory post-mortem where the worker found one.
   */
  addFile(name: string, snapshot: Snapshot, path?: string, oom?: IFileOom | null): void;
  /** Say in the panel that a file dropped there could not be read, and why (one line); all else stays. */
  fileUnreadable(name: string, reason: string): void;
  /** Files the user dropped on the panel (the panel plugin opens them through the engine worker). */
  readonly filesDropped: ISignal<unknown, readonly File[]>;
  /** Show the panel. */
  reveal(): void;
  /**
   * The later snapshot of the panel's comparison, with a name for saving it;
   * null where it is a file's, which is on disk already with all it holds (the
   * panel has its blocks, not its allocation history).
   */
  shownSnapshot(): { name: string; snapshot: Snapshot } | null;
  /** The followed notebook's cells by the code names their frames carry: a file's views name frames as the panel does. */
  cellNames(): CellCodeNames;
}

/** A namespace for the diff panel's types. */
export namespace IDiffPanel {
  /** What the panel's sections (the diff, the leak finder) read of its state. */
  export interface IModel {
    /** The notebook the panel follows, if any. */
    readonly notebook: IFollowedNotebook | null;
    /** The followed notebook's cell snapshots, in execution order. */
    readonly records: readonly CellRecord[];
    /** Emitted when the notebook, its snapshots or the selection change. */
    readonly changed: ISignal<unknown, void>;
  }
}

/** The diff panel token. */
export const IDiffPanel = new Token<IDiffPanel>('jupyterlab-cuda-memdiff:IDiffPanel', 'The CUDA Memory side panel.');

/** File type of snapshot pickles (and their JSON form). */
export const SNAPSHOT_FILE_TYPE = 'cuda-memdiff-snapshot';

/**
 * Runs the engine's long work (parsing files, ranking leaks) off the page's
 * main thread; see src/worker/handlers.ts for the operations.
 */
export interface IEngineWorker {
  /** Run `op`; `transfer` lists buffers in the payload to move, not copy; `onProgress` gets its progress reports. */
  call<K extends EngineOp>(
    op: K,
    payload: EnginePayload<K>,
    transfer?: readonly ArrayBuffer[],
    onProgress?: (progress: EngineProgress<K>) => void
  ): Promise<EngineResult<K>>;
  /** Whether the operations run in a worker rather than on the page. */
  readonly inWorker: boolean;
}

/** The engine worker token. */
export const IEngineWorker = new Token<IEngineWorker>(
  'jupyterlab-cuda-memdiff:IEngineWorker',
  'Runs snapshot parsing and leak ranking in a Web Worker.'
);
