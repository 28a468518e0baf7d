/**
 * Which frames a person wants to see: user code and notebook cells, not the
 * torch, IPython and event-loop plumbing around them.
 */
import { Frame, FrameTable } from './model';
import { isCellFilename } from './cells';

/** One line of a filtered stack: a frame, or a run of C++ frames shown as one. */
export type StackEntry =
  { readonly kind: 'frame'; readonly frameId: number } | { readonly kind: 'native'; readonly count: number };

/** Options for `visibleStack` and `allocationSite`. */
export interface IFrameFilterOptions {
  /** Show every frame as recorded (the "show all frames" switch). */
  allFrames?: boolean;
}

// Packages and standard-library modules that only carry a call to user code.
const PLUMBING = new RegExp(
  [
    '[\\\\/](?:site|dist)-packages[\\\\/](?:torch|IPython|ipykernel|tornado|zmq|traitlets|jupyter_client|jupyter_core|jupyter_server|comm|debugpy|nest_asyncio|ipywidgets|triton)[\\\\/]',
    '[\\\\/]lib[\\\\/]python3(?:\\.\\d+)?[\\\\/](?:asyncio|concurrent|importlib|runpy\\.py|threading\\.py|selectors\\.py|contextlib\\.py|functools\\.py|contextvars|events\\.py)',
    '^<frozen ',
    '^<string>$'
  ].join('|')
);

/** True for C++ frames, which PyTorch records with filename `??` or none. */
export function isNativeFrame(frame: Frame): boolean {
  return frame.filename === '??' || frame.filename === '';
}

/** True for frames of torch, IPython, ipykernel, asyncio and similar plumbing. */
export function isPlumbingFrame(frame: Frame): boolean {
  return PLUMBING.test(frame.filename);
}

/**
 * The stack as a person should read it, innermost first. By default frames
 * outside the outermost notebook cell (whatever ran the cell) and plumbing
 * frames are hidden, and runs of C++ frames collapse into one entry.
 */
export function visibleStack(table: FrameTable, stackId: number, options: IFrameFilterOptions = {}): StackEntry[] {
  const ids = table.stack(stackId);
  if (options.allFrames) {
    return ids.map(frameId => ({ kind: 'frame', frameId }));
  }
  let end = ids.length;
  for (let i = ids.length - 1; i >= 0; i--) {
    if (isCellFilename(table.frame(ids[i]).filename)) {
      end = i + 1;
      break;
    }
  }
  const out: StackEntry[] = [];
  let native = 0;
  for (let i = 0; i < end; i++) {
    const frame = table.frame(ids[i]);
    if (isNativeFrame(frame)) {
      native++;
      continue;
    }
    if (isPlumbingFrame(frame)) {
      continue;
    }
    if (native) {
      out.push({ kind: 'native', count: native });
      native = 0;
    }
    out.push({ kind: 'frame', frameId: ids[i] });
  }
  if (native) {
    out.push({ kind: 'native', count: native });
  }
  return out;
}

/**
 * The frame that names where a block was allocated: the innermost frame left
 * after filtering, else the innermost Python frame, else -1 (no stack, as for
 * allocations made by autograd's backward thread).
 */
export function allocationSite(table: FrameTable, stackId: number, options: IFrameFilterOptions = {}): number {
  for (const entry of visibleStack(table, stackId, options)) {
    if (entry.kind === 'frame' && !isNativeFrame(table.frame(entry.frameId))) {
      return entry.frameId;
    }
  }
  for (const id of table.stack(stackId)) {
    if (!isNativeFrame(table.frame(id))) {
      return id;
    }
  }
  return -1;
}
