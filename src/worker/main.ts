/**
 * The engine worker's entry point: runs each request's handler and posts the
 * result back, moving the buffers a handler asked to transfer.
 */
import { handlers, Transferring } from './handlers';
import { failure, IWorkerRequest, WorkerReply } from './wire';

interface IWorkerScope {
  onmessage: ((event: MessageEvent<IWorkerRequest>) => void) | null;
  postMessage(message: WorkerReply, transfer?: Transferable[]): void;
}

const scope = self as unknown as IWorkerScope;

scope.onmessage = event => {
  const { id, op, payload } = event.data;
  const handler = (handlers as Record<string, (payload: unknown) => unknown>)[op];
  Promise.resolve()
    .then(() => {
      if (!handler) {
        throw new Error(`unknown engine operation: ${op}`);
      }
      return handler(payload);
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
