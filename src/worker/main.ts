/**
 * The engine worker's entry point: runs each request's handler and posts the
 * result back, moving the buffers a handler asked to transfer; a handler's
 * progress reports are posted as they come, under the request's id.
 */
import { handlers, Transferring } from './handlers';
import { failure, IWorkerRequest, WorkerMessage } from './wire';

interface IWorkerScope {
  onmessage: ((event: MessageEvent<IWorkerRequest>) => void) | null;
  postMessage(message: WorkerMessage, transfer?: Transferable[]): void;
}

const scope = self as unknown as IWorkerScope;

scope.onmessage = event => {
  const { id, op, payload } = event.data;
  const handler = (handlers as Record<string, (payload: unknown, report: (p: unknown) => void) => unknown>)[op];
  const report = (progress: unknown) => scope.postMessage({ id, progress });
  Promise.resolve()
    .then(() => {
      if (!handler) {
        throw new Error(`unknown engine operation: ${op}`);
      }
      return handler(payload, report);
    })
    .then(
      result => {
        if (result instanceof Transferring) {
          scope.postMessage({ id, ok: true, value: result.value }, [...result.buffers]);
        } else {
          scope.postMessage({ id, ok: true, value: result });
        }
      },
      reason => scope.postMessage(failure(id, reason))
    );
};
