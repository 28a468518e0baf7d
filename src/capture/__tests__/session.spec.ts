// The session, the only code that talks to the kernel, against a real Jupyter
// server and real ipykernels: the helper is injected once per kernel process,
// follows the user's torch, and serves a second notebook on the same kernel.
import { SessionContext } from '@jupyterlab/apputils';
import { KernelAPI, ServiceManager } from '@jupyterlab/services';
import { JupyterServer } from '@jupyterlab/testing';
import * as fs from 'fs';
import * as path from 'path';
import { KernelComms } from '../comms';
import { CaptureSession } from '../session';
import { DEFAULT_CAPTURE_SETTINGS } from '../../plugins/settings';
import { SnapshotStore } from '../store';

const ROOT = path.resolve(__dirname, '../../..');
const DEMO = path.join(ROOT, 'test-data', 'recordings', 'gpu_memory_demo--python');
const manifest = JSON.parse(fs.readFileSync(path.join(DEMO, 'manifest.json'), 'utf-8'));
const PYTHON = fs.existsSync(path.join(ROOT, '.venv', 'bin', 'python'))
  ? path.join(ROOT, '.venv', 'bin', 'python')
  : 'python3';

const server = new JupyterServer();
let manager: ServiceManager;

beforeAll(async () => {
  await server.start({
    configData: { ServerApp: { allow_root: true } },
    additionalKernelSpecs: {
      replay: {
        argv: [PYTHON, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
        display_name: 'replay',
        language: 'python',
        env: { CUDA_MEMDIFF_REPLAY: DEMO }
      }
    }
  });
  manager = new ServiceManager({ standby: 'never' });
  await manager.ready;
}, 120000);

afterAll(async () => {
  manager?.dispose();
  await server.shutdown();
});

async function until(what: string, condition: () => boolean, timeoutMs = 60000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise(resolve => setTimeout(resolve, 50));
  }
}

async function open(name: string, kernel: { name: string } | { id: string }, comms: KernelComms) {
  const context = new SessionContext({
    sessionManager: manager.sessions,
    specsManager: manager.kernelspecs,
    path: `${name}.ipynb`,
    name,
    kernelPreference: 'id' in kernel ? { id: kernel.id } : { name: kernel.name }
  });
  const store = new SnapshotStore();
  const session = new CaptureSession({
    sessionContext: context,
    store,
    settings: () => DEFAULT_CAPTURE_SETTINGS.helper,
    comms
  });
  await context.initialize();
  return { context, store, session };
}

async function run(context: SessionContext, code: string): Promise<void> {
  await context.session!.kernel!.requestExecute({ code, store_history: true }).done;
}

describe('CaptureSession in a real kernel', () => {
  it('sends the helper ahead of a cell run at once after a restart, so the new kernel captures that cell', async () => {
    const comms = new KernelComms();
    const { context, store, session } = await open('early', { name: 'replay' }, comms);
    await until('the replaying kernel', () => store.helper.status === 'ready' && store.helper.replay !== null);
    expect(session.injections).toBe(1);
    const restarted = context.restartKernel();
    // As the notebook runs a cell: the session hears that it is scheduled, then its request goes.
    session.cellScheduled();
    const ran = run(context, manifest.cells[0].source);
    await restarted;
    await ran;
    const kernelSession = store.kernelSession;
    await until('the snapshot of the cell run at once', () =>
      store.records.some(r => r.kernelSession === kernelSession)
    );
    expect(session.injections).toBe(2); // once for the new process: sent early, not again when it went idle
    const record = store.records.find(r => r.kernelSession === kernelSession)!;
    expect(record.netBytes).toBe(manifest.cells[0].after.allocated - manifest.cells[0].before.allocated);
    session.dispose();
    context.dispose();
  }, 120000);

  // Two moments Run All's cells can go out after a restart: while it goes on (Shift+Enter on every cell at
  // once), and after it, while the helper's source is on its way (Restart & Run All: the notebook sends the
  // cells as soon as JupyterLab says the restart is done, and the attach that follows is sending the helper).
  it.each(['while the restart goes on', "while the helper's source is on its way"])(
    'hears each cell Run All sent %s as it ends, not once the last one has',
    async moment => {
      const comms = new KernelComms();
      const { context, store, session } = await open(`queued-${moment.length}`, { name: 'replay' }, comms);
      await until('the replaying kernel', () => store.helper.status === 'ready' && store.helper.replay !== null);
      const kernel = context.session!.kernel!;
      // As the notebook runs them: every cell is scheduled and sent at once, a long one behind the first.
      let first: Promise<unknown> | null = null;
      let slow: Promise<unknown> | null = null;
      let slowEnded = false;
      const send = kernel.requestExecute.bind(kernel);
      const runAll = () => {
        const cell = (code: string, cellId: string) => {
          session.cellScheduled();
          return send({ code, store_history: true }, true, { cellId }).done;
        };
        first = cell(manifest.cells[0].source, 'first');
        slow = cell('import time; time.sleep(8)', 'slow').then(() => (slowEnded = true));
      };
      if (moment === 'while the restart goes on') {
        const restarted = context.restartKernel();
        runAll();
        await restarted;
      } else {
        // The session's next silent request is the helper's source: the cells follow it, before its reply
        // (a page's code runs between the messages, never inside the session's own steps).
        (kernel as { requestExecute: typeof send }).requestExecute = (content, ...rest) => {
          const future = send(content, ...rest);
          if (content.silent && !first) {
            void Promise.resolve().then(runAll);
          }
          return future;
        };
        await context.restartKernel();
        await until("the helper's source", () => first !== null);
      }
      await first;
      await until('the first cell in the new kernel', () =>
        store.records.some(r => r.cellId === 'first' && r.kernelSession === store.kernelSession)
      );
      expect(slowEnded).toBe(false); // its snapshot came while the next cell ran
      await slow;
      // The long cell is not in the recording: its note comes as it ends too.
      await until('the long cell', () => store.noteForCell('slow') !== undefined, 5000);
      expect(store.noteForCell('slow')!.note).toBe('not-recorded');
      expect(session.injections).toBe(2);
      session.dispose();
      await context.shutdown();
      context.dispose();
    },
    120000
  );

  it("sees a restart made elsewhere by the new process's messages, and sends the helper at once", async () => {
    const comms = new KernelComms();
    const { context, store, session } = await open('elsewhere', { name: 'replay' }, comms);
    await until('the replaying kernel', () => store.helper.status === 'ready' && store.helper.replay !== null);
    await run(context, manifest.cells[0].source);
    await until('the first snapshot', () => store.records.length === 1);
    const kernelSession = store.kernelSession;
    // As another page or a script does: through the server, not this connection. The new process's first
    // status may be lost (sent before the server listened again); any status of it tells, such as a kernel
    // info request brings. That request may be lost too, while the server's channels reconnect to the new
    // process, and then its reply never comes: ask again, a few seconds apart, until one is heard.
    await KernelAPI.restartKernel(context.session!.kernel!.id, manager.serverSettings);
    for (let asked = 0; store.kernelSession <= kernelSession; asked++) {
      if (asked === 12) {
        throw new Error('timed out waiting for a new kernel session');
      }
      const heard = context.session!.kernel!.requestKernelInfo().catch(() => undefined);
      await Promise.race([heard, new Promise(resolve => setTimeout(resolve, 5000))]);
      await until('a new kernel session', () => store.kernelSession > kernelSession, 1000).catch(() => undefined);
    }
    await until('the helper in the new process', () => session.injections === 2 && store.helper.status === 'ready');
    // The new process replays the recording from its start: the first cell again, this kernel's.
    await run(context, manifest.cells[0].source);
    await until('the snapshot in the new process', () => store.records.some(r => r.kernelSession > kernelSession));
    expect(store.records.filter(r => r.kernelSession > kernelSession).map(r => r.netBytes)).toEqual([
      manifest.cells[0].after.allocated - manifest.cells[0].before.allocated
    ]);
    expect(session.injections).toBe(2);
    session.dispose();
    await context.shutdown();
    context.dispose();
  }, 120000);

  it('injects once per kernel process, waits for torch, and follows restarts and kernel changes', async () => {
    const comms = new KernelComms();
    const { context, store, session } = await open('cpu', { name: 'python3' }, comms);
    await until('the helper to wait for torch', () => store.helper.status === 'waiting-for-torch');
    expect(session.injections).toBe(1);
    expect(store.helper.installs).toBe(1);

    await run(context, 'import torch');
    await until('torch without CUDA', () => store.helper.status === 'no-cuda');
    expect(session.injections).toBe(1);

    await context.restartKernel();
    await until('the restarted kernel', () => store.helper.status === 'waiting-for-torch');
    expect(session.injections).toBe(2); // one per kernel process
    expect(store.helper.installs).toBe(1);

    await context.changeKernel({ name: 'replay' });
    await until('the replaying kernel', () => store.helper.status === 'ready' && store.helper.replay !== null);
    expect(session.injections).toBe(3);
    await run(context, manifest.cells[0].source);
    await until('the first snapshot', () => store.records.length === 1);
    const record = store.records[0];
    expect(record.netBytes).toBe(manifest.cells[0].after.allocated - manifest.cells[0].before.allocated);

    // A second notebook on the same kernel: JupyterLab gives its connection no comms,
    // so its comm goes through the first one's; it gets the kept snapshot and injects nothing new.
    const second = await open('second', { id: context.session!.kernel!.id }, comms);
    expect(second.context.session!.kernel!.handleComms).toBe(false);
    await until('the second notebook attached', () => second.store.records.length === 1);
    expect(second.store.records[0].netBytes).toBe(record.netBytes);
    expect(second.store.helper.installs).toBe(1);
    await run(context, manifest.cells[1].source);
    await until('the next snapshot in both', () => store.records.length === 2 && second.store.records.length === 2);
    expect(store.records[1].netBytes).toBe(manifest.cells[1].after.allocated - manifest.cells[1].before.allocated);
    expect(store.helper.status).toBe('ready');
    // Each run keeps the code its frames were compiled from, the attached second notebook's too.
    expect(store.records.map(r => r.source)).toEqual([manifest.cells[0].source, manifest.cells[1].source]);
    expect(second.store.records.map(r => r.source)).toEqual([manifest.cells[0].source, manifest.cells[1].source]);

    // Disposed: a pending holders request ends at once instead of waiting 30 s.
    const pending = second.session.requestHolders([[0, 1, 1]]);
    second.session.dispose();
    await expect(pending).rejects.toThrow('closed');
    second.context.dispose();
    session.dispose();
    await context.shutdown();
    context.dispose();
  }, 240000);
});
