/**
 * Which kernel connection in this page may open our comm. JupyterLab lets
 * only one connection per kernel handle comms (a second notebook on the same
 * kernel gets `handleComms: false`), so a session whose connection cannot
 * opens its comm on one that can: the helper then answers each notebook on
 * its own comm all the same.
 */
import { Kernel } from '@jupyterlab/services';

/** The page's kernel connections that handle comms, by kernel id. */
export class KernelComms {
  /** Remember a connection the capture uses. */
  add(kernel: Kernel.IKernelConnection): void {
    const known = this._byId.get(kernel.id) ?? new Set<Kernel.IKernelConnection>();
    known.add(kernel);
    this._byId.set(kernel.id, known);
  }

  /** A live connection to the same kernel that may open comms, or null. */
  connectionFor(kernel: Kernel.IKernelConnection): Kernel.IKernelConnection | null {
    if (kernel.handleComms) {
      return kernel;
    }
    const known = this._byId.get(kernel.id);
    for (const k of known ?? []) {
      if (k.isDisposed) {
        known!.delete(k);
      } else if (k.handleComms) {
        return k;
      }
    }
    return null;
  }

  private readonly _byId = new Map<string, Set<Kernel.IKernelConnection>>();
}
