/**
 * Per-session lookups the leak rules share, each resolved once: a stack's
 * cell frames, allocation site and origin, a cell's source by its code name,
 * what the sources say about grad mode and hooks, and which blocks are
 * library workspaces rather than anything a cell made.
 */
import { BlockOrigin } from '../findings';
import { Block, Frame, FrameTable, Snapshot } from '../model';
import { isCellFilename, murmur2, parseCellFilename } from '../cells';
import { allocationSite, isNativeFrame } from '../frames';
import { holderKey, IBlockHolders } from '../holders';
import { IExecutionRetention } from '../retention';
import { callsMatmul, gradDisabledAt, hookTargets, registersHook, setsGradMode, storedNames } from '../source';
import { ILeakExecution } from './types';

/** A cell frame of a stack, with its source. */
export interface ICellFrame {
  readonly frame: Frame;
  readonly source: string | null;
}

/**
 * Sizes of the buffers cuBLAS and cuBLASLt keep per thread and stream once a
 * matmul has run: `CUBLAS_WORKSPACE_CONFIG`'s default `:4096:8` (32 MiB, on
 * Hopper and later) or `:4096:2:16:8` (8 MiB + 128 KiB), and cuBLASLt's
 * default 1 MiB. On the H200 the first matmul of a thread left 32 + 1 MiB.
 */
export const LIBRARY_WORKSPACE_BYTES: readonly number[] = [32 * 2 ** 20, 8 * 2 ** 20 + 128 * 2 ** 10, 2 ** 20];

// torch modules whose forward calls cuBLAS or cuDNN.
const LIBRARY_CALLER =
  /[\\/]torch[\\/](?:nn[\\/](?:modules[\\/](?:linear|conv|rnn|activation|transformer)\.py|functional\.py)|functional\.py)$/;

export class Context {
  constructor(
    readonly frames: FrameTable,
    readonly executions: readonly ILeakExecution[],
    readonly retention: readonly IExecutionRetention[],
    /** Per execution: its snapshot recorded allocation stacks (`recordsStacks`). */
    readonly stacksRecorded: readonly boolean[]
  ) {
    for (const e of executions) {
      if (e.source !== null) {
        this._sourceByHash.set(murmur2(e.source), e.source);
      }
    }
    this.hookTargets = executions.flatMap(e => (e.source !== null ? hookTargets(e.source) : []));
    this.hooks = this.hookTargets.length > 0 || executions.some(e => e.source !== null && registersHook(e.source));
    let off = false;
    this.gradOffGlobally = executions.map(e => {
      const was = off;
      off = (e.source !== null ? setsGradMode(e.source) : null) ?? off;
      return was || off;
    });
    this._findWorkspaces();
  }

  /** Per execution: autograd was turned off for the session (`torch.set_grad_enabled(False)`). */
  readonly gradOffGlobally: readonly boolean[];

  /** Containers the session's module hooks append to. */
  readonly hookTargets: readonly string[];

  /** True when some cell of the session registers a module hook. */
  readonly hooks: boolean;

  /** Source of a cell by its code name, when some execution ran it. */
  sourceOf(filename: string): string | null {
    const name = parseCellFilename(filename);
    if (!name) {
      return null;
    }
    if (name.kind === 'ipykernel') {
      return this._sourceByHash.get(name.hash) ?? null;
    }
    return this.executions.find(e => e.executionCount === name.executionCount)?.source ?? null;
  }

  /** Cell frames of a stack, innermost first. */
  cellFrames(stack: number): readonly ICellFrame[] {
    let frames = this._cellFrames.get(stack);
    if (!frames) {
      frames = this.frames
        .stack(stack)
        .map(id => this.frames.frame(id))
        .filter(f => isCellFilename(f.filename))
        .map(frame => ({ frame, source: this.sourceOf(frame.filename) }));
      this._cellFrames.set(stack, frames);
    }
    return frames;
  }

  /** Line of the executed cell's own frame (the outermost cell frame) of a stack, or null. */
  outerLine(stack: number): number | null {
    const frames = this.cellFrames(stack);
    return frames.length ? frames[frames.length - 1].frame.line : null;
  }

  /** Names the line that allocated a stack's blocks stores them in, read from `source` (the execution's). */
  storedNamesAt(stack: number, source: string): readonly string[] {
    const line = this.outerLine(stack);
    return line === null ? [] : storedNames(source, line);
  }

  /** True when every cell frame of the stack runs with autograd on (as far as the sources tell). */
  gradOnAt(stack: number): boolean {
    let on = this._gradOn.get(stack);
    if (on === undefined) {
      on = this.cellFrames(stack).every(c => c.source === null || !gradDisabledAt(c.source, c.frame.line));
      this._gradOn.set(stack, on);
    }
    return on;
  }

  /** The allocation site (frame id, -1 for none) a person sees for a stack. */
  site(stack: number): number {
    let site = this._sites.get(stack);
    if (site === undefined) {
      site = allocationSite(this.frames, stack);
      this._sites.set(stack, site);
    }
    return site;
  }

  /** What made the blocks of a stack (never `workspace`: that is per block, see `originOf`). */
  origin(stack: number): BlockOrigin {
    let origin = this._origins.get(stack);
    if (origin === undefined) {
      origin = classify(this.frames.stack(stack).map(id => this.frames.frame(id)));
      this._origins.set(stack, origin);
    }
    return origin;
  }

  /**
   * What made a block an execution left, workspaces told apart; null when
   * nothing says: its stack is empty and the execution's snapshot recorded no
   * stack at all. Only beside blocks with stacks does an empty one mean
   * autograd's backward thread (`gradient`).
   */
  originOf(b: Block, r: IExecutionRetention): BlockOrigin | null {
    if (this.isWorkspace(b, r.kernel)) {
      return 'workspace';
    }
    return b.stack === EMPTY_STACK && !this.stacksRecorded[r.execution] ? null : this.origin(b.stack);
  }

  /** True when a block of this kernel is a library workspace, not memory a cell made. */
  isWorkspace(b: Block, kernel: number): boolean {
    return this._workspaces.has(workspaceKey(kernel, b));
  }

  /**
   * True when a block an execution left can be leak evidence: neither a
   * gradient (state meant to stay) nor a library workspace. A block with no
   * stack recorded can: what made it is unknown.
   */
  canLeak(b: Block, r: IExecutionRetention): boolean {
    const origin = this.originOf(b, r);
    return origin !== 'gradient' && origin !== 'workspace';
  }

  /**
   * The kernel's answer settles what is a workspace among the latest
   * snapshot's blocks: a block no tensor lies in (`native`) is one, a block a
   * tensor holds is not, whatever its size.
   */
  applyHolders(holders: IBlockHolders, kernel: number, alive: readonly Block[]): void {
    for (const b of alive) {
      const list = holders.get(holderKey(b.device, b.address));
      if (!list?.length) {
        continue;
      }
      if (list.every(h => h.kind === 'native')) {
        this._workspaces.add(workspaceKey(kernel, b));
      } else {
        this._workspaces.delete(workspaceKey(kernel, b));
      }
    }
  }

  /**
   * Offline, a block is taken for a workspace when it has a workspace's size,
   * a matmul allocated it (in torch's linear/conv/rnn code, or a cell line
   * that multiplies), no other block the same execution left shares its stack
   * and size, and it stays to the end of its kernel: the library allocates it
   * at the first matmul of a thread and never frees it. One per size and
   * device per kernel.
   */
  private _findWorkspaces(): void {
    const taken = new Set<string>();
    for (const r of this.retention) {
      const sameStackAndSize = new Map<string, number>();
      for (const b of r.left) {
        if (LIBRARY_WORKSPACE_BYTES.includes(b.size)) {
          const key = `${b.stack}:${b.size}`;
          sameStackAndSize.set(key, (sameStackAndSize.get(key) ?? 0) + 1);
        }
      }
      r.left.forEach((b, j) => {
        const slot = `${r.kernel}:${b.device}:${b.size}`;
        if (
          !LIBRARY_WORKSPACE_BYTES.includes(b.size) ||
          r.freedAt[j] !== null ||
          taken.has(slot) ||
          sameStackAndSize.get(`${b.stack}:${b.size}`) !== 1 ||
          !this._matmulAt(b.stack)
        ) {
          return;
        }
        taken.add(slot);
        this._workspaces.add(workspaceKey(r.kernel, b));
      });
    }
  }

  /** True when the innermost Python frame of a stack runs a matmul (torch's library callers, or a cell line that multiplies). */
  private _matmulAt(stack: number): boolean {
    const origin = this.origin(stack);
    if (origin !== 'forward' && origin !== 'direct') {
      return false;
    }
    const python = this.frames
      .stack(stack)
      .map(id => this.frames.frame(id))
      .filter(f => !isNativeFrame(f));
    const inner = python[0];
    if (!inner) {
      return false;
    }
    if (LIBRARY_CALLER.test(inner.filename)) {
      return true;
    }
    const source = isCellFilename(inner.filename) ? this.sourceOf(inner.filename) : null;
    return source !== null && callsMatmul(source, inner.line);
  }

  private readonly _sourceByHash = new Map<number, string>();
  private readonly _origins = new Map<number, BlockOrigin>();
  private readonly _sites = new Map<number, number>();
  private readonly _gradOn = new Map<number, boolean>();
  private readonly _cellFrames = new Map<number, readonly ICellFrame[]>();
  private readonly _workspaces = new Set<string>();
}

/** The stack id of a block with no frames (`FrameTable` interns it first). */
const EMPTY_STACK = 0;

/**
 * True when a snapshot recorded allocation stacks: some block has one. With
 * allocation history off (or from a torch that keeps none) every block's is empty.
 */
export function recordsStacks(snapshot: Snapshot): boolean {
  return snapshot.blocks.some(b => b.stack !== EMPTY_STACK);
}

/** A block of a kernel: within one kernel a workspace is never freed, so its address names it. */
function workspaceKey(kernel: number, b: Block): string {
  return `${kernel}/${holderKey(b.device, b.address)}/${b.size}`;
}

const TORCH = /[\\/]torch[\\/]/;

function classify(stack: readonly Frame[]): BlockOrigin {
  const python = stack.filter(f => !isNativeFrame(f));
  if (!python.length) {
    // Autograd's backward thread allocates without Python frames: gradients.
    return 'gradient';
  }
  if (python.some(f => /[\\/]torch[\\/]optim[\\/]/.test(f.filename))) {
    return 'optimizer';
  }
  if (
    python.some(
      f =>
        /[\\/]torch[\\/]nn[\\/]init\.py$/.test(f.filename) ||
        (/[\\/]torch[\\/]nn[\\/]/.test(f.filename) &&
          /^(?:_apply|__init__|reset_parameters|flatten_parameters|load_state_dict|_load_from_state_dict|register_buffer|register_parameter)$/.test(
            f.name
          ))
    )
  ) {
    return 'parameters';
  }
  if (
    python.some(
      f =>
        (/[\\/]torch[\\/]nn[\\/]modules[\\/]/.test(f.filename) &&
          /^(?:_call_impl|forward|_conv_forward)$/.test(f.name)) ||
        /[\\/]torch[\\/]nn[\\/]functional\.py$/.test(f.filename)
    )
  ) {
    return 'forward';
  }
  return TORCH.test(python[0].filename) ? 'forward' : 'direct';
}

/** The executions' source key: identical sources are the same code (and the same code name). */
export function codeOf(e: ILeakExecution): string {
  return e.source ?? `cell:${e.cellId}`;
}

/** Bytes of blocks. */
export function total(blocks: readonly Block[]): number {
  let n = 0;
  for (const b of blocks) {
    n += b.size;
  }
  return n;
}
