/**
 * The engine worker's client where there is no browser worker: the same
 * handlers run in-process, errors keep their kind, and a disposed client
 * refuses work at once. (The browser worker itself is exercised by Galata.)
 */
import { SnapshotError } from '../../engine/errors';
import { EngineWorker } from '../client';
import { errorOf, failure } from '../wire';

describe('EngineWorker without a browser worker', () => {
  it('runs the handler in-process and says so', async () => {
    const engine = new EngineWorker();
    expect(engine.inWorker).toBe(false);
    await expect(engine.call('where', undefined)).resolves.toEqual({ worker: false });
  });

  it('answers after the caller has returned, as a worker would', async () => {
    const engine = new EngineWorker();
    let settled = false;
    const done = engine.call('where', undefined).then(() => (settled = true));
    expect(settled).toBe(false);
    await done;
    expect(settled).toBe(true);
  });

  it('rejects an unknown operation', async () => {
    const engine = new EngineWorker();
    await expect(engine.call('no-such-op' as 'where', undefined)).rejects.toThrow();
  });

  it('refuses work once disposed', async () => {
    const engine = new EngineWorker();
    engine.dispose();
    expect(engine.isDisposed).toBe(true);
    await expect(engine.call('where', undefined)).rejects.toThrow('disposed');
  });

  it('falls back to the page when the worker cannot start', async () => {
    const engine = new EngineWorker(() => {
      throw new Error('Worker is not defined');
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await expect(engine.call('where', undefined)).resolves.toEqual({ worker: false });
    expect(engine.inWorker).toBe(false);
    warn.mockRestore();
  });
});

describe('errors crossing from the worker', () => {
  it('keeps a SnapshotError a SnapshotError, with its message', () => {
    const error = errorOf(
      failure(1, new SnapshotError('not a snapshot: bad magic')) as { name: string; message: string }
    );
    expect(error).toBeInstanceOf(SnapshotError);
    expect(error.message).toBe('not a snapshot: bad magic');
  });

  it('keeps other errors as errors with their name', () => {
    const error = errorOf(failure(2, new RangeError('too deep')) as { name: string; message: string });
    expect(error).not.toBeInstanceOf(SnapshotError);
    expect(error.name).toBe('RangeError');
    expect(error.message).toBe('too deep');
  });
});
