/**
 * A file's bytes from the server's raw file endpoint (`/files/<path>`), read
 * as a stream. The engine worker runs this (files.ts), so the page
 * never holds a big file's bytes: streaming 1 GB on the page cost it a
 * 179 ms garbage collection. Raw bytes, not the contents API, whose base64
 * inside one JSON string breaks past what one JavaScript string can hold.
 *
 * No JupyterLab imports: this module is bundled into the worker. The page
 * builds the request (files/request.ts), with the headers that authorise it.
 */
import { checkSize, DEFAULT_DECODE_LIMITS, GrowingBytes, LimitError, SnapshotError } from '../engine';

/** What the worker needs to read a file: its URL and the headers that authorise the request. */
export interface IFileRequest {
  /** The file's path on the server, for messages (never the URL, which may carry a token). */
  readonly path: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** How far reading has got: bytes read, and the total when the server said it. */
export interface IReadProgress {
  readonly read: number;
  readonly total: number | null;
}

/** Least time between two progress reports, so 1 GB in 64 KiB chunks is not 16,000 messages. */
const PROGRESS_MS = 100;

/**
 * Read the file `request` names into one buffer. Refuses a file over the
 * decode budget's byte limit as soon as it passes it (no file that big can be
 * decoded), an HTTP error in one line, and stops when `signal` aborts.
 */
export async function readFileBytes(
  request: IFileRequest,
  options: {
    signal?: AbortSignal;
    maxBytes?: number;
    progress?: (progress: IReadProgress) => void;
  } = {}
): Promise<Uint8Array> {
  const maxBytes = options.maxBytes ?? DEFAULT_DECODE_LIMITS.maxBytes;
  const progress = options.progress ?? (() => undefined);
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: 'GET',
      headers: { ...request.headers },
      cache: 'no-store',
      credentials: 'same-origin',
      signal: options.signal
    });
  } catch (reason) {
    throw Private.failure(request, reason, options.signal);
  }
  if (!response.ok) {
    throw new Error(
      response.status === 404
        ? `${request.path} is not on the server (HTTP 404)`
        : `the server answered ${response.status} ${response.statusText} for ${request.path}`.trimEnd()
    );
  }
  const length = Number(response.headers.get('Content-Length'));
  const total = Number.isSafeInteger(length) && length > 0 ? length : null;
  if (total !== null) {
    checkSize(total, maxBytes);
  }
  // One buffer of the announced size (none announced, or a compressed
  // response: it grows); chunks are copied in as they arrive.
  const out = new GrowingBytes(total ?? 1 << 20, maxBytes);
  let reported = 0;
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      if (!out.push(value)) {
        throw new LimitError('maxBytes', `${request.path} holds more bytes`, maxBytes);
      }
      const now = Date.now();
      if (now - reported >= PROGRESS_MS) {
        reported = now;
        progress({ read: out.length, total });
      }
    }
  } catch (reason) {
    void reader.cancel().catch(() => undefined);
    throw reason instanceof SnapshotError ? reason : Private.failure(request, reason, options.signal);
  }
  progress({ read: out.length, total });
  return out.bytes();
}

namespace Private {
  /** One line for a request that failed before or while its body arrived. */
  export function failure(request: IFileRequest, reason: unknown, signal?: AbortSignal): Error {
    if (signal?.aborted) {
      return new Error(`reading ${request.path} was cancelled`);
    }
    const message = reason instanceof Error ? reason.message : String(reason);
    return new Error(`could not read ${request.path} from the server: ${message}`);
  }
}
