/**
 * Which execution allocated each live block, and what became of it: the facts
 * the leak finder ranks. A block belongs to the execution between whose
 * snapshots it first appeared (same device, address, size and stack) and
 * stays attributed while it remains in every later snapshot.
 *
 * Identity alone cannot see a block freed and allocated again at the same
 * address by the same line (a re-run cell rebuilding its tensors). When the
 * snapshots carry the allocation history between them (`historyBetween`),
 * a live block allocated there is reborn in the execution that closes it.
 *
 * A kernel restart (or kernel change) is a boundary: the new process starts
 * from an empty device, its first execution is compared with nothing, and
 * what the old process still held at its last snapshot ended with it. That
 * memory was not freed by any execution, and no block of one kernel is ever
 * matched with a block of another, however alike they look (the same source
 * gets the same code name in every process, and a new process may be handed
 * addresses the old one used).
 */
import { diffSnapshots } from './diff';
import { Block, isAllocated, Snapshot } from './model';
import { emptySnapshot } from './snapshot';

/** What one execution's allocations became. */
export interface IExecutionRetention {
  /** Position of the execution (its snapshot) in the sequence. */
  readonly execution: number;
  /** Blocks born during the execution and alive when it ended (in its own snapshot). */
  readonly left: readonly Block[];
  readonly leftBytes: number;
  /** Of the blocks left, bytes still alive in the last snapshot. */
  readonly aliveBytes: number;
  /** Of the blocks left, bytes freed by later executions. */
  readonly freedLaterBytes: number;
  /** The blocks still alive in the last snapshot. */
  readonly alive: readonly Block[];
  /** Bytes of the blocks left that each later execution freed (execution -> bytes). */
  readonly freedBy: ReadonlyMap<number, number>;
  /** Per block of `left`, the execution that freed it, or null when it outlived its kernel's last snapshot. */
  readonly freedAt: readonly (number | null)[];
  /** Position of the execution's kernel among the session's kernels (0 for the first). */
  readonly kernel: number;
  /** The last execution of the same kernel: `alive` is judged at its snapshot. */
  readonly lastOfKernel: number;
  /** True when the kernel restarted (or changed) after `lastOfKernel`: what was alive then ended with the process. */
  readonly endedByRestart: boolean;
}

/**
 * Each execution's kernel as a position among the session's kernels, from
 * the kernel session ids the frontend or the manifest gives (a change means
 * a restart). A missing id continues the kernel before it; none at all is
 * one kernel.
 */
export function kernelPositions(ids: readonly (number | null | undefined)[]): number[] {
  let position = 0;
  let current: number | null = null;
  return ids.map(id => {
    if (id !== null && id !== undefined) {
      if (current !== null && id !== current) {
        position++;
      }
      current = id;
    }
    return position;
  });
}

/**
 * Each execution's kernel numbered 1, 2, ... in the order the kernels ran,
 * as the views name them (`kernel 2`) and the export writes `kernel_session`:
 * the frontend's own ids count every restart and kernel change, so only
 * their changes mean anything (see kernelPositions).
 */
export function kernelsInOrder(ids: readonly (number | null | undefined)[]): number[] {
  return kernelPositions(ids).map(position => position + 1);
}

/**
 * Retention per execution for snapshots taken after consecutive executions
 * (all sharing one FrameTable); the first of each kernel is compared with an
 * empty device. `kernels` gives each execution's kernel position
 * (`kernelPositions`); without it the session is one kernel.
 */
export function retentionByExecution(
  snapshots: readonly Snapshot[],
  kernels?: readonly number[]
): IExecutionRetention[] {
  if (kernels && kernels.length !== snapshots.length) {
    throw new Error(`retentionByExecution: ${snapshots.length} snapshots for ${kernels.length} kernel positions`);
  }
  const out: IExecutionRetention[] = [];
  let start = 0;
  while (start < snapshots.length) {
    let end = start + 1;
    while (end < snapshots.length && (kernels?.[end] ?? 0) === (kernels?.[start] ?? 0)) {
      end++;
    }
    out.push(...retentionInKernel(snapshots.slice(start, end), start, kernels?.[start] ?? 0, end < snapshots.length));
    start = end;
  }
  return out;
}

/** Retention within one kernel whose executions start at `offset` in the session. */
function retentionInKernel(
  snapshots: readonly Snapshot[],
  offset: number,
  kernel: number,
  endedByRestart: boolean
): IExecutionRetention[] {
  const owner = new BlockOwners();
  const left = snapshots.map((): Block[] => []);
  const freedAt = snapshots.map((): (number | null)[] => []);
  const freedBy = snapshots.map(() => new Map<number, number>());
  const release = (b: Block, k: number) => {
    const o = owner.take(b);
    if (o !== undefined) {
      freedBy[o.execution].set(offset + k, (freedBy[o.execution].get(offset + k) ?? 0) + b.size);
      freedAt[o.execution][o.index] = offset + k;
    }
  };
  let previous = emptySnapshot(snapshots[0].frames);
  snapshots.forEach((snapshot, k) => {
    // Only what the diff says changed is touched (with history, a block allocated again is freed
    // and born anew): kept blocks keep their owner.
    const diff = diffSnapshots(previous, snapshot);
    for (const b of diff.freed) {
      release(b, k);
    }
    const adopt = (b: Block) => {
      owner.set(b, k, left[k].length);
      left[k].push(b);
      freedAt[k].push(null);
    };
    diff.born.forEach(adopt);
    previous = snapshot;
  });
  const alive = snapshots.map((): Block[] => []);
  for (const b of previous.blocks) {
    const o = isAllocated(b) ? owner.get(b) : undefined;
    if (o !== undefined) {
      alive[o.execution].push(b);
    }
  }
  return snapshots.map((_, k) => {
    const leftBytes = sizeOf(left[k]);
    const aliveBytes = sizeOf(alive[k]);
    return {
      execution: offset + k,
      left: left[k],
      leftBytes,
      aliveBytes,
      freedLaterBytes: leftBytes - aliveBytes,
      alive: alive[k],
      freedBy: freedBy[k],
      freedAt: freedAt[k],
      kernel,
      lastOfKernel: offset + snapshots.length - 1,
      endedByRestart
    };
  });
}

/** Bytes of a retention's blocks still alive after execution `at` (at >= its own execution). */
export function aliveBytesAt(retention: IExecutionRetention, at: number): number {
  let freed = 0;
  for (const [k, bytes] of retention.freedBy) {
    if (k <= at) {
      freed += bytes;
    }
  }
  return retention.leftBytes - freed;
}

/**
 * Which execution owns each live block, by identity (device, address, size,
 * stack), and where the block is in that execution's `left`. Keyed by
 * numbers, not strings: it is updated for every block born or freed in a
 * session.
 */
class BlockOwners {
  /** The owner of a block with this identity, if any. */
  get(b: Block): IOwner | undefined {
    const e = this._byDevice.get(b.device)?.get(b.address);
    return e && e.size === b.size && e.stack === b.stack ? e : undefined;
  }

  set(b: Block, execution: number, index: number): void {
    let device = this._byDevice.get(b.device);
    if (!device) {
      device = new Map();
      this._byDevice.set(b.device, device);
    }
    device.set(b.address, { size: b.size, stack: b.stack, execution, index });
  }

  /** Remove the block's entry and return its owner, if it had one. */
  take(b: Block): IOwner | undefined {
    const o = this.get(b);
    if (o !== undefined) {
      this._byDevice.get(b.device)!.delete(b.address);
    }
    return o;
  }

  private readonly _byDevice = new Map<number, Map<number, IOwner & { size: number; stack: number }>>();
}

/** An execution owning a block, and the block's position in its `left`. */
interface IOwner {
  readonly execution: number;
  readonly index: number;
}

function sizeOf(blocks: readonly Block[]): number {
  return blocks.reduce((n, b) => n + b.size, 0);
}
