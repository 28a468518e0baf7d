/**
 * The frontend side of the kernel helper's protocol. Version, comm target,
 * the helper's hash and the message schema come from kernel-helpers/
 * (embedded at build time), so both sides always agree; the snapshot
 * message type lives in the engine (engine/wire.ts).
 */
import helper from './helper.generated.json';
import { IWireSnapshot } from '../engine';
import type { CellNoteKind, HelperStatus, IHelperSettings } from '../engine/protocol.generated';

// Generated from protocol.py, with the statuses, holder kinds and settings (scripts/embed-helper.js).
export { COMM_TARGET, DEFAULT_HELPER_SETTINGS, HELPER_STATUSES, PROTOCOL_VERSION } from '../engine/protocol.generated';
export type { CellNoteKind, HelperStatus, IHelperSettings };

/** The message schema (kernel-helpers/cuda_memdiff_kernel/protocol.schema.json). */
export const MESSAGE_SCHEMA: Record<string, unknown> = helper.schema;

/**
 * What a replayed recording's manifest says of itself, each null where it
 * does not say it plainly: the notebook it ran (`scenario`) and its GPU.
 */
export interface IRecordingAbout {
  scenario: string | null;
  device: string | null;
  device_count: number | null;
}

/** A status message from the helper; `run` tells one kernel process from the next. */
export interface IStatusMessage {
  v: number;
  type: 'status';
  status: HelperStatus;
  message: string;
  run?: string;
  installs?: number;
  kept?: number;
  dropped?: number;
  peaks?: 'passive' | 'per-cell';
  history?: 'helper' | 'user' | 'off' | null;
  torch?: string;
  /** The folder of the recording a replay kernel serves. */
  replay?: string;
  /** What the replayed recording's manifest says of itself (see IRecordingAbout). */
  recording?: IRecordingAbout;
}

/** A word about one cell that has no snapshot. */
export interface ICellNoteMessage {
  v: number;
  type: 'cell-note';
  cell_id: string | null;
  execution_count?: number | null;
  note: CellNoteKind;
  message: string;
}

/** The helper's answer to a holders request (fields of engine/holders.ts's answer). */
export interface IHoldersMessage {
  v: number;
  type: 'holders';
  id: number | null;
  [field: string]: unknown;
}

/** A block the frontend asks about: [device, address, size]. */
export type BlockQuery = [number, number, number];

/** Any message the helper sends. */
export type HelperMessage = IStatusMessage | ICellNoteMessage | IWireSnapshot | IHoldersMessage;

/**
 * Python code that installs the embedded helper: run silently and without
 * history, it execs the bootstrap in a namespace of its own, so nothing
 * reaches the user's namespace, history or Out. A kernel already running
 * this very helper only takes the settings.
 */
export function injectionCode(settings: IHelperSettings): string {
  const payload = JSON.stringify({ modules: helper.modules, hash: helper.hash, settings });
  return (
    `exec(compile(${JSON.stringify(helper.bootstrap)}, "<cuda-memdiff-bootstrap>", "exec"), ` +
    `{"__name__": "_cuda_memdiff_boot", "_payload": ${JSON.stringify(payload)}})`
  );
}
