/**
 * The request for a file's raw bytes, built on the page for the engine
 * worker to send: a worker has no `document`, so it cannot read the `_xsrf`
 * cookie, and it has no server settings. `ServerConnection.makeRequest`
 * builds the request here with a fetch that keeps it instead of sending it,
 * so the URL and the authorising headers (token, XSRF) are exactly what
 * JupyterLab would send, with no copy of its rules.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type { IFileRequest } from '../worker/fetch';

/** The request for `path` (relative to the server root) at the raw file endpoint. */
export async function fileRequest(path: string, settings: ServerConnection.ISettings): Promise<IFileRequest> {
  const url = URLExt.join(settings.baseUrl, 'files', URLExt.encodeParts(path));
  let kept: Request | null = null;
  const keep = (input: RequestInfo): Promise<Response> => {
    kept = typeof input === 'string' ? null : input;
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  await ServerConnection.makeRequest(url, { method: 'GET', cache: 'no-store' }, { ...settings, fetch: keep });
  const request = kept as Request | null;
  if (!request) {
    throw new Error(`could not build the request for ${path}`);
  }
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { path, url: request.url, headers };
}
