/**
 * What the leak finder found, as data: a code and its figures (bytes,
 * executions, names, holders). Views word them: `findingText`,
 * `adviceText` and `holderText` are the English the CLI prints; the panel
 * words the same codes through its translator (src/leaks/words.ts).
 */
import { HiddenReference, hiddenHolder, IHolder } from './holders';
import { formatBytes } from './units';

/**
 * What a block's stack says made it; `workspace` is a library's own buffer
 * (cuBLAS, cuDNN) that the first matmul of a thread allocates and keeps.
 */
export type BlockOrigin = 'parameters' | 'optimizer' | 'gradient' | 'forward' | 'direct' | 'workspace';

/** One finding about an execution. Executions are positions in the session. */
export type LeakFinding =
  /** The code's live memory grew when it ran again, from execution `from` to `to`. */
  | { readonly code: 'growth'; readonly bytes: number; readonly from: number; readonly to: number }
  /** An earlier run of code that grew when it ran again as `later`, adding `grewBytes`; `bytes` is what this run left at the sites that grew. */
  | { readonly code: 'same-code-grew'; readonly bytes: number; readonly later: number; readonly grewBytes: number }
  /** A forward pass's outputs and the autograd graph they keep, outside `torch.no_grad()` with no backward pass, through these names. */
  | { readonly code: 'graph'; readonly bytes: number; readonly names: readonly string[] }
  /** Memory made by the cell's displayed last expression, kept by the output cache under these names (`Out[n]`, and `_` etc. when the kernel named them). */
  | {
      readonly code: 'output-cache';
      readonly bytes: number;
      readonly executionCount: number;
      readonly names: readonly string[];
    }
  /** Memory allocated in function `fn` (null: not known) kept by the last traceback of the `error` the cell raised. */
  | { readonly code: 'traceback'; readonly bytes: number; readonly fn: string | null; readonly error: string }
  /**
   * The kernel found `bytes` held only by holders nobody sees; `confirmed` when a rule had found the same
   * cause. The rest of the leak's evidence is `named`, blocks the kernel saw held by names as well (a
   * graph's outputs, which the list holding them keeps: `preds` itself), and `unseen`, blocks its answer
   * did not cover: `bytes + named.bytes + unseen` is the leak's evidence when the kernel answered.
   */
  | {
      readonly code: 'kernel-holders-leak';
      readonly bytes: number;
      readonly holders: readonly IHolder[];
      readonly confirmed: boolean;
      /** Evidence the kernel saw held by these names too (absent: none). */
      readonly named?: { readonly bytes: number; readonly holders: readonly IHolder[] };
      /** Bytes of evidence the kernel's answer did not cover (absent: none). */
      readonly unseen?: number;
    }
  /** The kernel found the live blocks held by these holders (`orphans` of them found only through the garbage collector). */
  | { readonly code: 'kernel-holders-clear'; readonly holders: readonly IHolder[]; readonly orphans: number }
  /** The leaked memory (`bytes`) was freed by execution `by`, which is not a re-run of the same code leaking again. */
  | { readonly code: 'fixed'; readonly bytes: number; readonly by: number }
  /** Besides its leak, the execution keeps a library workspace: not part of the leak. */
  | { readonly code: 'workspace'; readonly bytes: number }
  /** Memory kept alive, by what made it, and the names that hold it. */
  | {
      readonly code: 'retained';
      readonly bytes: number;
      readonly origin: BlockOrigin;
      readonly names: readonly string[];
    }
  /** Everything the execution left was freed later, by these executions. */
  | { readonly code: 'all-freed-later'; readonly bytes: number; readonly by: readonly number[] }
  /** The execution left nothing alive. */
  | { readonly code: 'nothing-left' }
  /**
   * `bytes` of its memory have no allocation stack, and its snapshot recorded
   * none (allocation history off): what made them, and where, is unknown.
   * Part of the leaked bytes for a leak, of the retained bytes otherwise.
   */
  | { readonly code: 'no-stacks'; readonly bytes: number }
  /** Of the leaked memory, `bytes` have this role by the kernel's role pass (`activation`: saved for backward). */
  | { readonly code: 'leak-role'; readonly role: string; readonly bytes: number };

/** Codes of findings. */
export type LeakFindingCode = LeakFinding['code'];

const ORIGIN_TEXT: Record<BlockOrigin, string> = {
  parameters: 'module parameters and buffers',
  optimizer: 'optimizer state',
  gradient: 'gradients and workspaces of the backward pass',
  forward: 'outputs of a forward pass',
  direct: 'tensors the cell created',
  workspace: 'library workspace (cuBLAS, cuDNN), kept by the library for the next matmul'
};

function code(names: readonly string[]): string {
  return `\`${names.join('`, `')}\``;
}

/** What keeps a `hidden` holder's reference, as an aside to paths that do not say it themselves. */
const HIDDEN_TEXT: Partial<Record<HiddenReference | 'none', string>> = {
  'default-argument': 'a default argument',
  partial: 'a functools.partial argument',
  none: 'a reference no variable shows'
};

/**
 * A holder in English: `autograd graph of preds[0:8]`, `acts (forward hook on
 * model.1)`; `... and more` where the kernel listed only some of a block's
 * holders (`and maybe more` where an older helper may have stopped listing).
 */
export function holderText(holder: IHolder): string {
  const text = holderPhrase(holder);
  return holder.cut === 'more' ? `${text} and more` : holder.cut === 'cap' ? `${text} and maybe more` : text;
}

function holderPhrase(holder: IHolder): string {
  switch (holder.kind) {
    case 'graph':
      return `autograd graph of ${holder.path}`;
    case 'native':
      return 'native code (no tensor: a library workspace)';
    case 'unreachable':
      return `${holder.path} the kernel's search did not reach (found through the garbage collector)`;
    case 'hook':
      return `${holder.path} (${holder.via ?? 'appended to by a forward hook'})`;
    case 'hidden': {
      const aside = HIDDEN_TEXT[hiddenHolder(holder).ref ?? 'none'];
      return aside ? `${holder.path} (${aside})` : holder.path;
    }
    default:
      return holder.path;
  }
}

function holdersText(holders: readonly IHolder[]): string {
  return holders.map(holderText).join(', ');
}

/** A finding in English; `label` names an execution (`Cell [4]`). */
export function findingText(finding: LeakFinding, label: (execution: number) => string): string {
  switch (finding.code) {
    case 'growth':
      return `memory held by this code grew by ${formatBytes(finding.bytes)} when it ran again (${label(finding.from)} → ${label(finding.to)})`;
    case 'same-code-grew':
      return `runs the same code as ${label(finding.later)}, which added ${formatBytes(finding.grewBytes)} on top of what this run left`;
    case 'graph':
      return (
        `keeps ${formatBytes(finding.bytes)} from a forward pass outside torch.no_grad() with no backward pass: outputs and the autograd graph they keep` +
        (finding.names.length ? `, held through ${code(finding.names)}` : '')
      );
    case 'output-cache':
      return `${formatBytes(finding.bytes)} made by the cell's last expression is kept by the output cache ${code(finding.names)}`;
    case 'traceback':
      return `${formatBytes(finding.bytes)} allocated in ${finding.fn ? `\`${finding.fn}\`` : 'a function'} is kept by the last traceback (sys.last_traceback): the cell raised ${finding.error}`;
    case 'kernel-holders-leak':
      return (
        `${finding.confirmed ? 'confirmed by the kernel' : 'the kernel found'}: ${formatBytes(finding.bytes)} held only by ${holdersText(finding.holders)}` +
        (finding.named ? `; ${formatBytes(finding.named.bytes)} held by ${holdersText(finding.named.holders)}` : '') +
        (finding.unseen ? `; ${formatBytes(finding.unseen)} it did not see` : '')
      );
    case 'kernel-holders-clear':
      return (
        `the kernel found ${finding.orphans ? 'its live blocks' : 'every live block'} held by ${holdersText(finding.holders) || 'nothing it could name'}` +
        (finding.orphans
          ? `; ${finding.orphans} found only through the garbage collector: held from where the kernel's search does not go (an object it does not enter, a C extension, a reference cycle)`
          : '')
      );
    case 'fixed':
      return `fixed: the ${formatBytes(finding.bytes)} it leaked was freed by ${label(finding.by)}`;
    case 'workspace':
      return `also keeps ${formatBytes(finding.bytes)} of ${ORIGIN_TEXT.workspace}: not part of the leak`;
    case 'retained':
      return `keeps ${formatBytes(finding.bytes)} of ${ORIGIN_TEXT[finding.origin]}${finding.names.length ? ` (held by ${code(finding.names)})` : ''}`;
    case 'all-freed-later':
      return `left ${formatBytes(finding.bytes)} alive, all freed later (${finding.by.map(k => `by ${label(k)}`).join(', ')})`;
    case 'nothing-left':
      return 'left nothing alive';
    case 'no-stacks':
      return `${formatBytes(finding.bytes)} has no allocation stack (history was off): what made it, and where, is unknown`;
    case 'leak-role':
      return `${formatBytes(finding.bytes)} of it is ${ROLE_TEXT[finding.role] ?? finding.role.replace(/_/g, ' ')}`;
  }
}

/** What memory of each role is, in a leak's reasons (the kernel's role names). */
const ROLE_TEXT: Record<string, string> = {
  parameter: 'module parameters',
  buffer: 'module buffers',
  gradient: 'gradients (`.grad`) of parameters',
  optimizer_state: 'optimizer state (e.g. AdamW moments) of an optimizer still alive',
  activation: 'tensors saved for backward by a live autograd graph',
  output_cache: 'kept by the output cache (`Out[n]`, `_`)',
  traceback: 'kept by the locals of a traceback (the last one, or one an exception you kept holds)',
  user: 'tensors your code keeps (variables, containers, closures, caches)',
  workspace: 'a library workspace (cuBLAS)',
  unknown: 'memory no role reached'
};

/** A fix the finder proposes, as data; `adviceText` words it. */
export type LeakAdvice =
  /** Evaluate under `torch.no_grad()` or keep detached outputs (an autograd graph from a forward pass). */
  | { readonly code: 'no-grad' }
  /** The kernel named an autograd graph: no_grad, or detach what is kept. */
  | { readonly code: 'no-grad-or-detach' }
  /** Detach these recurrent names before the next step (a hidden state carrying every step's graph). */
  | { readonly code: 'detach-hidden'; readonly names: readonly string[] }
  /** Append `name.item()` to `list`, not the tensor. */
  | { readonly code: 'append-item'; readonly name: string; readonly list: string }
  /** Remove the hook that stores outputs, or clear the lists it appends to (empty: not known). */
  | { readonly code: 'remove-hook'; readonly lists: readonly string[] }
  /**
   * Silence the displayed expression, or delete `Out[executionCount]` (null:
   * the kernel named no count). `also`: the output history's other names
   * that hold it (`_`, `_2`, another `Out[m]`), which `del Out[n]` leaves;
   * `deletable`: the names to `del` then (`Out[n]` first, then each other
   * `Out[m]` and `_N`; empty when `also` is), and `displays` more displayed
   * results push it out of `_`, `__`, `___` (0: none of those holds it).
   */
  | {
      readonly code: 'silence-output';
      readonly executionCount: number | null;
      readonly also: readonly string[];
      readonly deletable: readonly string[];
      readonly displays: number;
    }
  /** Clear the last traceback. */
  | { readonly code: 'clear-traceback' }
  /** Drop the references the kernel names. */
  | { readonly code: 'drop-references' }
  /**
   * A reference no variable shows keeps the memory: `owner` (a function, a
   * generator, a partial, a running thread) through `ref` (null: the path
   * does not say), at the `paths` the kernel named; `places`: where inside
   * the owner, as a fix names them (a closure's variable `ref`, a thread's
   * `train() local h`; none for an lru_cache).
   */
  | {
      readonly code: 'release-hidden';
      readonly ref: HiddenReference | null;
      readonly owner: string;
      readonly paths: readonly string[];
      readonly places: readonly string[];
    }
  /** The traceback of an exception the user kept keeps its frames' locals: drop these names of it (`err`). */
  | { readonly code: 'drop-exception'; readonly names: readonly string[] }
  /**
   * Only the output history's other names hold it (`__`, `_2`; no `Out[n]`):
   * `del` the `deletable` among `names` (the `_N`), and `displays` more
   * displayed results push it out of `_`, `__`, `___` (0: none of those holds it).
   */
  | {
      readonly code: 'clear-output-history';
      readonly names: readonly string[];
      readonly deletable: readonly string[];
      readonly displays: number;
    }
  /** The kernel found these tensors (described by shape) only through the garbage collector: it names no holder. */
  | { readonly code: 'find-referrers'; readonly tensors: readonly string[] }
  /** No rule found a specific cause, but the kernel named what keeps the memory (`recent[8:16]`): clear that. */
  | { readonly code: 'clear-holder'; readonly holders: readonly string[] }
  /**
   * These names keep tensors of the leak themselves (the outputs in `preds`),
   * which the other fixes (`torch.no_grad()`) do not free: `del` them once used.
   */
  | { readonly code: 'release-kept'; readonly names: readonly string[] }
  /** No rule found a specific cause: find what keeps each run's tensors. */
  | { readonly code: 'find-holder' }
  /** Leaked gradients: let `zero_grad` free them. */
  | { readonly code: 'zero-grad' }
  /** Leaked optimizer state: drop the optimizer (or its state) no longer trained with. */
  | { readonly code: 'drop-optimizer' }
  /** The leaked memory has no allocation stack: record them and run the cells again to see the line. */
  | { readonly code: 'record-stacks' };

/** What to do about memory a `hidden` holder keeps, in English. */
function hiddenAdviceText(advice: Extract<LeakAdvice, { code: 'release-hidden' }>): string {
  const owner = `\`${advice.owner}\``;
  const where = code(advice.places);
  switch (advice.ref) {
    case 'default-argument':
      return `${owner} keeps every call's value in a default argument (${where}): default it to \`None\` and make a new one inside the function`;
    case 'closure':
      return `${owner} keeps what its closure captured (${where}): drop the function, or capture \`.item()\` / \`.detach().cpu()\` values instead`;
    case 'generator':
      return `the paused generator ${owner} keeps its frame's locals (${where}): exhaust it or \`del ${advice.owner}\``;
    case 'lru-cache':
      return `${owner}'s lru_cache keeps its results: call \`${advice.owner}.cache_clear()\`, or cache no tensors`;
    case 'partial':
      return `the functools.partial ${owner} keeps its arguments (${where}): \`del ${advice.owner}\`, or pass the tensor when calling it`;
    case 'thread':
      return `the thread '${advice.owner}' keeps this while its function runs (${where}): it is freed when that function drops it (\`del\` inside its loop) or returns; what the thread was started with stays until it returns, and \`join()\` only waits for that`;
    case null:
      return `drop the references the kernel names (${where})`;
  }
}

/** Deleting the names of the output history one can (`Out[n]`, `_N`), then displaying results to push it out of `_`. */
function historySteps(deletable: readonly string[], displays: number): string {
  return [
    ...(deletable.length ? [`\`del ${deletable.join(', ')}\``] : []),
    ...(displays ? [`display ${displays} more result${displays === 1 ? '' : 's'}`] : [])
  ].join(' and ');
}

/** How to get allocation stacks recorded, in the panel's setting and in torch's own call. */
export const RECORD_STACKS_TEXT =
  'turn allocation history on (in JupyterLab: Settings Editor \u2192 CUDA Memory \u2192 Allocation history, `all` or `state`; elsewhere: `torch.cuda.memory._record_memory_history()` before the cells allocate)';

/** Codes of advice. */
export type LeakAdviceCode = LeakAdvice['code'];

/** A fix in English. */
export function adviceText(advice: LeakAdvice): string {
  switch (advice.code) {
    case 'no-grad':
      return 'evaluate under `torch.no_grad()` (or `torch.inference_mode()`), or keep `.detach()`ed outputs';
    case 'no-grad-or-detach':
      return 'evaluate under `torch.no_grad()`, or call `.detach()` on what you keep';
    case 'detach-hidden':
      return `call \`.detach()\` on ${code(advice.names)} before the next step: the hidden state carries every step\u2019s graph`;
    case 'append-item':
      return `append \`${advice.name}.item()\` (or \`${advice.name}.detach()\`) to \`${advice.list}\`, not the tensor`;
    case 'remove-hook':
      return advice.lists.length
        ? `remove the hook that stores outputs, or clear the list it appends to (${code(advice.lists)})`
        : 'remove the hook or clear the list';
    case 'silence-output': {
      const entry = advice.executionCount === null ? 'Out[n]' : `Out[${advice.executionCount}]`;
      if (!advice.also.length) {
        return advice.executionCount === null
          ? 'end the line with `;` or delete its `Out[n]` entry'
          : `end the line with \`;\` or \`del ${entry}\``;
      }
      return `end the line with \`;\` so that its result is not cached; to free it now, ${historySteps(advice.deletable, advice.displays)}, or run \`%reset -f out\` (it is held by ${code(advice.also)} as well as \`${entry}\`)`;
    }
    case 'clear-traceback':
      return 'clear the last traceback (`sys.last_traceback = sys.last_value = sys.last_exc = None`) or run a cell that raises nothing big';
    case 'drop-references':
      return 'drop the references the kernel names';
    case 'release-hidden':
      return hiddenAdviceText(advice);
    case 'drop-exception':
      return `\`del ${advice.names.join(', ')}\`: a kept exception keeps its traceback, and with it the locals of every frame it unwound`;
    case 'clear-output-history':
      return advice.deletable.length || advice.displays
        ? `the output history still holds it (${code(advice.names)}): ${historySteps(advice.deletable, advice.displays)}, or run \`%reset -f out\``
        : `the output history still holds it (${code(advice.names)}): run \`%reset -f out\``;
    case 'find-referrers':
      return `find what refers to ${advice.tensors.join(', ')}, which the kernel could not name: \`gc.get_referrers(t)\` (\`t\`: that tensor, found in \`gc.get_objects()\` by its shape), then drop that reference`;
    case 'clear-holder':
      return `clear or \`del\` what keeps it (${code(advice.holders)}) once its values are used, or keep \`.item()\` / \`.detach()\` values there`;
    case 'release-kept':
      return `\`del ${advice.names.join(', ')}\` once you are done with the tensors it keeps (or keep \`.cpu()\` copies): the other fixes leave them on the GPU`;
    case 'find-holder':
      return 'find what keeps each run\u2019s tensors (a list, a dict, a hook) and clear it, or keep `.item()` / `.detach()` values';
    case 'zero-grad':
      return 'call `optimizer.zero_grad(set_to_none=True)` (or `model.zero_grad(set_to_none=True)`) once the gradients are used';
    case 'drop-optimizer':
      return '`del` the optimizer you no longer train with (or `optimizer.state.clear()`), and anything that names it';
    case 'record-stacks':
      return `${RECORD_STACKS_TEXT} and run the cells again to see the line that allocates it`;
  }
}
