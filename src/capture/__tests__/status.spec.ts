// The notebook toolbar's status line, from a real store: what it says for the
// helper's statuses, and that a kernel's word never reaches an object's prototype.
import { nullTranslator } from '@jupyterlab/translation';
import { IHelperState, SnapshotStore } from '../store';
import { CaptureStatus } from '../status';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

/** A status line showing what a helper said (a kernel may send any word: the type does not hold it back). */
function statusOf(helper: { status: string; message?: string; replay?: string; recording?: unknown }): CaptureStatus {
  const store = new SnapshotStore();
  const status = new CaptureStatus(trans, store);
  store.setHelper({ message: '', replay: null, ...helper } as unknown as IHelperState);
  return status;
}

describe('CaptureStatus', () => {
  it('says what the helper found, and that a recorded session is replayed', () => {
    expect(statusOf({ status: 'waiting-for-cuda' }).node.textContent).toBe('GPU memory: waiting for CUDA');
    // Said as the recording says it was made, not by its folder (before: "(gpu_memory_demo--holders)")
    const replaying = statusOf({
      status: 'ready',
      replay: 'gpu_memory_demo--holders',
      recording: { scenario: 'gpu_memory_demo', device: 'NVIDIA H200', device_count: 1 }
    });
    expect(replaying.node.textContent).toBe('GPU memory: replaying a recorded session (NVIDIA H200)');
    // the folder, where the files are found, in the tooltip
    expect(replaying.node.title).toBe(
      'GPU memory: replaying a recorded session (NVIDIA H200)\nRecording: gpu_memory_demo (folder gpu_memory_demo--holders)'
    );
    const twoGpus = { scenario: null, device: 'NVIDIA H200', device_count: 2 };
    expect(statusOf({ status: 'ready', replay: 'split', recording: twoGpus }).node.textContent).toBe(
      'GPU memory: replaying a recorded session (2 × NVIDIA H200)'
    );
    // an older helper sends the folder only
    const older = statusOf({ status: 'ready', replay: 'demo' });
    expect(older.node.textContent).toBe('GPU memory: replaying a recorded session');
    expect(older.node.title).toMatch(/\nRecording: folder demo$/);
    const error = statusOf({ status: 'error', message: 'ImportError: no module named x' });
    expect(error.node.textContent).toBe('GPU memory: helper error');
    expect(error.node.title).toBe('ImportError: no module named x');
  });

  it("reads a kernel's unknown status as unknown, even a name Object.prototype has", () => {
    for (const word of ['constructor', '__proto__', 'toString', 'no-torch']) {
      const status = statusOf({ status: word });
      expect(status.node.textContent).toBe('GPU memory: unknown status');
      expect(status.isHidden).toBe(false);
    }
  });

  it('hides itself for a non-Python kernel and until its notebook has a store', () => {
    expect(statusOf({ status: 'not-python' }).isHidden).toBe(true);
    const status = new CaptureStatus(trans);
    expect(status.isHidden).toBe(true);
    const store = new SnapshotStore();
    status.store = store;
    expect(status.isHidden).toBe(false);
    expect(status.node.textContent).toBe('GPU memory: connecting…');
    status.dispose();
    const shown = status.node.textContent;
    store.setHelper({ status: 'ready', message: '', replay: null });
    expect(status.node.textContent).toBe(shown); // disconnected: no longer follows the store
  });

  it('counts the oldest snapshots dropped in one sentence', () => {
    const store = new SnapshotStore();
    const status = new CaptureStatus(trans, store);
    store.setHelper({ status: 'ready', message: '', replay: null });
    Object.defineProperty(store, 'droppedCount', { value: 3 });
    store.setHelper({ status: 'ready', message: '', replay: null });
    expect(status.node.textContent).toBe('GPU memory: capturing (3 oldest snapshots dropped)');
  });
});

describe('SnapshotStore.dispose', () => {
  it('is idempotent and silences the store', () => {
    const store = new SnapshotStore();
    let heard = 0;
    store.changed.connect(() => heard++);
    store.dispose();
    store.dispose();
    expect(store.isDisposed).toBe(true);
    store.setHelper({ status: 'ready', message: '', replay: null });
    expect(heard).toBe(0);
  });
});
