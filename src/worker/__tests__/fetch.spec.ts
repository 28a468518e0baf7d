// The worker's fetch of an opened file, against a real local HTTP server
// that serves a real H200 recording (clean_training cell04, with its
// allocation history) in small chunks, slowly, and only to a request that
// carries the token and the XSRF header the page's request builder adds
// (as JupyterLab's ServerConnection would): the bytes arrive in pieces with progress reports, the
// parse is the one the file's own bytes give, and an HTTP error, a missing
// file, a cancelled opening and a hostile size each end in one line.
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { ServerConnection } from '@jupyterlab/services';
import { unreadableReason } from '../../components/unreadable';
import { readSnapshot, toTransfer, totalBytes } from '../../engine';
import { readBytes, RECORDINGS } from '../../engine/__tests__/data';
import { IFileRequest, readFileBytes } from '../fetch';
import { fileRequest } from '../../files/request';
import { EngineWorker } from '../client';
import { closeSnapshotFile, fetchSnapshotFile, OpeningProgress } from '../files';

const FILE = path.join(RECORDINGS, 'clean_training--python', 'cell04.pickle.gz');
const BYTES = readBytes(FILE);
const TOKEN = 'secret-for-the-test';
const XSRF = 'xsrf-for-the-test';
const CHUNK = 2048;
const CHUNK_DELAY_MS = 20;

let server: http.Server;
let base: string;
/** Request paths the server saw, with the Authorization header it got. */
const seen: [string, string | undefined][] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push([req.url ?? '', req.headers.authorization]);
    if (req.headers.authorization !== `token ${TOKEN}` || req.headers['x-xsrftoken'] !== XSRF) {
      res.writeHead(403, 'Forbidden').end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/lab/files/runs/cell04.pickle.gz') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': BYTES.length });
      let at = 0;
      const next = () => {
        if (res.destroyed) {
          return;
        }
        if (at >= BYTES.length) {
          res.end();
          return;
        }
        res.write(BYTES.subarray(at, at + CHUNK));
        at += CHUNK;
        setTimeout(next, CHUNK_DELAY_MS);
      };
      next();
    } else if (url.pathname === '/lab/files/runs/huge.pickle') {
      // Says it is 3 GiB: refused before a byte of it is read.
      res.writeHead(200, { 'Content-Length': String(3 * 2 ** 30) });
      res.write(new Uint8Array(CHUNK));
    } else if (url.pathname === '/lab/files/runs/endless.pickle') {
      // No size announced, and more bytes than allowed: refused once they pass the limit.
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(new Uint8Array(CHUNK))), 5);
    } else {
      res.writeHead(404, 'Not Found').end();
    }
  });
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise(resolve => server.close(resolve));
});

/** The request the page builds for `runs/<name>`, as the file view does. */
async function request(name: string): Promise<IFileRequest> {
  document.cookie = `_xsrf=${XSRF}`;
  const settings = ServerConnection.makeSettings({ baseUrl: `${base}/lab/`, token: TOKEN });
  return fileRequest(`runs/${name}`, settings);
}

describe('fileRequest', () => {
  it('carries what ServerConnection.makeRequest would send: the raw file URL, the token and the XSRF header', async () => {
    const r = await request('cell04.pickle.gz');
    expect(r.path).toBe('runs/cell04.pickle.gz');
    expect(r.url).toMatch(new RegExp(`^${base}/lab/files/runs/cell04\\.pickle\\.gz\\?\\d+$`));
    expect(r.headers).toMatchObject({ authorization: `token ${TOKEN}`, 'x-xsrftoken': XSRF });
  });
});

describe('fetchSnapshotFile in the engine worker', () => {
  it('reads the file in chunks with progress, and parses what the file holds', async () => {
    const reports: OpeningProgress[] = [];
    const { value: opened } = await fetchSnapshotFile(
      { id: 41, request: await request('cell04.pickle.gz'), width: 800 },
      p => reports.push(p)
    );
    const direct = readSnapshot(BYTES);
    expect(opened.traceEntries).toBe(3681);
    expect(Array.from(opened.snapshot.blocks)).toEqual(Array.from(toTransfer(direct).blocks));
    expect(opened.snapshot.totals.map(t => t.allocatedBytes)).toEqual([totalBytes(direct, 'allocatedBytes')]);
    expect(opened.timeline).not.toBeNull();
    // Reading: several reports, growing, of the announced total; then parsing, of all the bytes.
    const readingReports = reports.filter(r => r.phase === 'reading');
    expect(readingReports.length).toBeGreaterThan(1);
    expect(readingReports.every(r => r.total === BYTES.length)).toBe(true);
    const reads = readingReports.map(r => r.read);
    expect(reads).toEqual([...reads].sort((a, b) => a - b));
    expect(reads[0]).toBeLessThan(BYTES.length);
    expect(reads[reads.length - 1]).toBe(BYTES.length);
    expect(reports[reports.length - 1]).toEqual({ read: BYTES.length, total: BYTES.length, phase: 'parsing' });
    // Kept under its id until closed, as an opened file is.
    expect(closeSnapshotFile({ id: 41 })).toBe(true);
    expect(closeSnapshotFile({ id: 41 })).toBe(false);
  });

  it('says in one line that a file is not on the server (HTTP 404), naming its path and not its URL', async () => {
    const opening = fetchSnapshotFile({ id: 42, request: await request('gone.pickle'), width: 800 });
    await expect(opening).rejects.toThrow(/^runs\/gone\.pickle is not on the server \(HTTP 404\)$/);
    expect(closeSnapshotFile({ id: 42 })).toBe(false);
  });

  it('sends only the headers the page gave it: without them the server refuses, in one line', async () => {
    const bare = { ...(await request('cell04.pickle.gz')), headers: {} };
    await expect(fetchSnapshotFile({ id: 43, request: bare, width: 800 })).rejects.toThrow(
      /^the server answered 403 Forbidden for runs\/cell04\.pickle\.gz$/
    );
    expect(seen.map(([, auth]) => auth)).toContain(undefined);
  });

  it('stops reading when the view closes the file, in one line', async () => {
    const reports: OpeningProgress[] = [];
    const opening = fetchSnapshotFile({ id: 44, request: await request('cell04.pickle.gz'), width: 800 }, p =>
      reports.push(p)
    );
    await new Promise(resolve => setTimeout(resolve, 150));
    expect(closeSnapshotFile({ id: 44 })).toBe(true);
    await expect(opening).rejects.toThrow(/^reading runs\/cell04\.pickle\.gz was cancelled$/);
    expect(reports.some(r => r.phase === 'parsing')).toBe(false);
    // Nothing kept under the id.
    expect(closeSnapshotFile({ id: 44 })).toBe(false);
  });

  it('refuses a file over the decode budget before reading it, saying how to raise the limit', async () => {
    const started = Date.now();
    const refused = await readFileBytes(await request('huge.pickle')).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(
      /^the snapshot is 3,221,225,472 bytes, over the decode limit --max-bytes [\d,]+; if the file is real, raise it with --max-bytes N or CUDA_MEMDIFF_MAX_BYTES=N$/
    );
    expect(Date.now() - started).toBeLessThan(5000);
    // The panel says it in its own terms: its limit, and the command that reads the file.
    expect(unreadableReason(refused)).toBe(
      "the snapshot is 3,221,225,472 bytes, over the panel's limit of 2.00 GiB; " +
        'if the file is real, read it with the command line: npx cuda-memdiff summary FILE --max-bytes N'
    );
  });

  it('refuses a file that passes the limit while it arrives, with no size announced', async () => {
    await expect(readFileBytes(await request('endless.pickle'), { maxBytes: 10_000 })).rejects.toThrow(
      /^runs\/endless\.pickle holds more bytes, over the decode limit --max-bytes 10,000; if the file is real, raise it/
    );
  });

  it("reaches the caller's onProgress through the engine client, in-process where no worker runs", async () => {
    const engine = new EngineWorker();
    const reports: OpeningProgress[] = [];
    const opened = await engine.call(
      'fetchSnapshotFile',
      { id: 45, request: await request('cell04.pickle.gz'), width: 800 },
      [],
      p => reports.push(p)
    );
    expect(opened.traceEntries).toBe(3681);
    expect(reports.filter(r => r.phase === 'reading').length).toBeGreaterThan(1);
    await expect(engine.call('closeSnapshotFile', { id: 45 })).resolves.toBe(true);
  });
});
