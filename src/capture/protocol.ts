/**
 * The frontend side of the kernel helper's protocol. Version and comm target
 * come from kernel-helpers/ (embedded at build time), so both sides always
 * agree; the snapshot message type lives in the engine (engine/wire.ts).
 */
import helper from './helper.generated.json';
import { IWireSnapshot } from '../engine';

/** Protocol version both sides speak; messages of another version are refused. */
export const PROTOCOL_VERSION: number = helper.protocolVersion;

/** Comm target the frontend registers and the helper opens. */
export const COMM_TARGET: string = helper.commTarget;

/** What the helper found in the kernel. */
export type HelperStatus = 'ready' | 'no-torch' | 'no-cuda' | 'torch-too-old' | 'capture-off' | 'error';

/** A status message from the helper. */
export interface IStatusMessage {
  v: number;
  type: 'status';
  status: HelperStatus;
  message: string;
  torch?: string;
  replay?: string;
  device_count?: number;
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
export type HelperMessage = IStatusMessage | IWireSnapshot | IHoldersMessage | { v: number; type: 'open' };

/** Settings the helper takes (kernel-helpers/.../capture.py DEFAULT_SETTINGS). */
export interface IHelperSettings {
  capture: boolean;
  history: 'all' | 'state' | 'off';
  stacks: 'python' | 'all';
  max_entries: number;
  include_traces: boolean;
}

/**
 * Python code that installs the embedded helper: run silently and without
 * history, it execs the bootstrap in a namespace of its own, so nothing
 * reaches the user's namespace, history or Out.
 */
export function injectionCode(settings: IHelperSettings): string {
  const payload = JSON.stringify({ modules: helper.modules, settings });
  return (
    `exec(compile(${JSON.stringify(helper.bootstrap)}, "<cuda-memdiff-bootstrap>", "exec"), ` +
    `{"__name__": "_cuda_memdiff_boot", "_payload": ${JSON.stringify(payload)}})`
  );
}
