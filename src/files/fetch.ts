/**
 * A file's bytes from the server's raw file endpoint (`/files/<path>`),
 * read from the response body as a stream. The contents API would send the
 * bytes as base64 inside one JSON string, which breaks past what one
 * JavaScript string can hold (a 408 MB pickle); raw bytes have no such limit.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** Longest stretch of reading before the page gets a turn. */
const YIELD_MS = 30;

/** Read `path` (relative to the server root) as bytes; `progress` gets bytes read and the total when known. */
export async function fetchFileBytes(
  path: string,
  settings: ServerConnection.ISettings,
  progress: (read: number, total: number | null) => void = () => undefined
): Promise<Uint8Array> {
  const url = URLExt.join(settings.baseUrl, 'files', URLExt.encodeParts(path));
  const response = await ServerConnection.makeRequest(url, { method: 'GET', cache: 'no-store' }, settings);
  if (!response.ok) {
    throw new Error(`the server answered ${response.status} ${response.statusText} for ${path}`);
  }
  const length = Number(response.headers.get('Content-Length'));
  const total = Number.isSafeInteger(length) && length > 0 ? length : null;
  if (!response.body) {
    return new Uint8Array(await response.arrayBuffer());
  }
  // One buffer of the announced size; chunks are copied in as they arrive.
  let out = new Uint8Array(total ?? 1 << 20);
  let read = 0;
  const reader = response.body.getReader();
  let slice = performance.now();
  for (;;) {
    // Buffered chunks resolve as microtasks, which never yield: give the
    // page a turn every few milliseconds so reading 400 MB is no frozen page.
    if (performance.now() - slice > YIELD_MS) {
      await new Promise(resolve => setTimeout(resolve, 0));
      slice = performance.now();
    }
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    if (read + value.length > out.length) {
      const grown = new Uint8Array(Math.max(out.length * 2, read + value.length));
      grown.set(out.subarray(0, read));
      out = grown;
    }
    out.set(value, read);
    read += value.length;
    progress(read, total);
  }
  return read === out.length ? out : out.slice(0, read);
}
