/**
 * The messages between the page and the engine worker, and how an error
 * crosses: as its name and message, rebuilt on the page so that
 * `instanceof SnapshotError` still tells bad input from a bug.
 */
import { IDecodeLimits, LimitError } from '../engine/budget';
import { SnapshotError } from '../engine/errors';

/** Page to worker: run `op` on `payload`. */
export interface IWorkerRequest {
  readonly id: number;
  readonly op: string;
  readonly payload: unknown;
}

/** Worker to page: the result of request `id`, or why it failed. */
export type WorkerReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly name: string; readonly message: string; readonly over?: IOver };

/** A decode limit's refusal as data, so the page can say how to read the file there. */
interface IOver {
  readonly limit: keyof IDecodeLimits;
  readonly what: string;
  readonly value: number;
}

/** Worker to page, while request `id` runs: how far it has got (a handler's progress report). */
export interface IWorkerProgress {
  readonly id: number;
  readonly progress: unknown;
}

/** Anything the worker posts: a progress report or the final reply. */
export type WorkerMessage = IWorkerProgress | WorkerReply;

/** A handler's result that moves these buffers to the page instead of copying them. */
export class Transferring<T> {
  constructor(
    readonly value: T,
    readonly buffers: readonly ArrayBuffer[]
  ) {}
}

/** Return `value`, moving `buffers` (which it contains) to the page. */
export function transferring<T>(value: T, buffers: readonly ArrayBuffer[]): Transferring<T> {
  return new Transferring(value, buffers);
}

/** The reply for a failure. */
export function failure(id: number, reason: unknown): Extract<WorkerReply, { ok: false }> {
  const error = reason instanceof Error ? reason : new Error(String(reason));
  const over =
    reason instanceof LimitError ? { limit: reason.limit, what: reason.what, value: reason.value } : undefined;
  return { id, ok: false, name: error.name, message: error.message, ...(over ? { over } : {}) };
}

/** The page-side error for a failed reply. */
export function errorOf(reply: { name: string; message: string; over?: IOver }): Error {
  if (reply.over) {
    return new LimitError(reply.over.limit, reply.over.what, reply.over.value);
  }
  if (reply.name === 'SnapshotError') {
    return new SnapshotError(reply.message);
  }
  const error = new Error(reply.message);
  error.name = reply.name;
  return error;
}
