/**
 * The leak finder's codes in the user's language: each finding, fix and
 * holder is one whole sentence (or phrase) for the translator, with
 * placeholders for figures and names. Names are wrapped in backticks, which
 * the view renders as code.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { BlockOrigin, formatBytes, hiddenHolder, IHolder, INoStacks, LeakAdvice, LeakFinding } from '../engine';
import type { ILeakEntry } from './model';

/** Names as code spans: `a`, `b`. */
function names(list: readonly string[]): string {
  return list.map(codeSpan).join(', ');
}

/** A name as a code span: the view sets it as code and the words around it as text. */
function codeSpan(name: string): string {
  return `\`${name}\``;
}

/** What made retained memory. */
export function originWords(origin: BlockOrigin, trans: TranslationBundle): string {
  switch (origin) {
    case 'parameters':
      return trans.__('module parameters and buffers');
    case 'optimizer':
      return trans.__('optimizer state');
    case 'gradient':
      return trans.__('gradients and workspaces of the backward pass');
    case 'forward':
      return trans.__('outputs of a forward pass');
    case 'direct':
      return trans.__('tensors the cell created');
    case 'workspace':
      return trans.__('library workspace (cuBLAS, cuDNN), kept by the library for the next matmul');
  }
}

/**
 * A holder as a phrase, its path a code span (the words around it, `autograd
 * graph of`, `and more`, are not code); `... and more` where the kernel listed only some of
 * a block's holders (`and maybe more` where an older helper may have stopped).
 */
export function holderWords(holder: IHolder, trans: TranslationBundle): string {
  const words = holderPhrase(holder, trans);
  return holder.cut === 'more'
    ? trans.__('%1 and more', words)
    : holder.cut === 'cap'
      ? trans.__('%1 and maybe more', words)
      : words;
}

function holderPhrase(holder: IHolder, trans: TranslationBundle): string {
  switch (holder.kind) {
    case 'graph':
      return trans.__('autograd graph of %1', codeSpan(holder.path));
    case 'native':
      return trans.__('native code (no tensor: a library workspace)');
    case 'unreachable':
      return trans.__("%1 the kernel's search did not reach (found through the garbage collector)", holder.path);
    case 'hook':
      return holder.via
        ? trans.__('%1 (%2)', codeSpan(holder.path), holder.via)
        : trans.__('%1 (appended to by a forward hook)', codeSpan(holder.path));
    case 'hidden':
      return hiddenHolderWords(holder, trans);
    default:
      return codeSpan(holder.path);
  }
}

/** A `hidden` holder: its path, with what keeps it where the path does not say (closures, generators, caches, threads do). */
function hiddenHolderWords(holder: IHolder, trans: TranslationBundle): string {
  const path = codeSpan(holder.path);
  switch (hiddenHolder(holder).ref) {
    case 'default-argument':
      return trans.__('%1 (a default argument)', path);
    case 'partial':
      return trans.__('%1 (a functools.partial argument)', path);
    case null:
      return trans.__('%1 (a reference no variable shows)', path);
    default:
      return path;
  }
}

function holdersWords(holders: readonly IHolder[], trans: TranslationBundle): string {
  return holders.map(h => holderWords(h, trans)).join(', ');
}

/** How to word a finding beyond its own data. */
export interface IFindingWordsOptions {
  /**
   * Whether the kernel's holders are those it named when a replayed session
   * was recorded: the kernel was not asked now, so cells run since (a `del`
   * the recording never saw) may have changed what holds the memory.
   */
  readonly holdersRecorded?: boolean;
}

/** A finding as a sentence; `label` names an execution (`Cell [4]`). */
export function findingWords(
  finding: LeakFinding,
  label: (execution: number) => string,
  trans: TranslationBundle,
  options: IFindingWordsOptions = {}
): string {
  const recorded = options.holdersRecorded ?? false;
  switch (finding.code) {
    case 'growth':
      return trans.__(
        'Memory held by this code grew by %1 when it ran again (%2 \u2192 %3).',
        formatBytes(finding.bytes),
        label(finding.from),
        label(finding.to)
      );
    case 'same-code-grew':
      return trans.__(
        'Runs the same code as %1, which added %2 on top of what this run left.',
        label(finding.later),
        formatBytes(finding.grewBytes)
      );
    case 'graph':
      return finding.names.length
        ? trans.__(
            'Keeps %1 from a forward pass outside torch.no_grad() with no backward pass: outputs and the autograd graph they keep, held through %2.',
            formatBytes(finding.bytes),
            names(finding.names)
          )
        : trans.__(
            'Keeps %1 from a forward pass outside torch.no_grad() with no backward pass: outputs and the autograd graph they keep.',
            formatBytes(finding.bytes)
          );
    case 'output-cache':
      return trans.__(
        "%1 made by the cell's last expression is kept by the output cache %2.",
        formatBytes(finding.bytes),
        names(finding.names)
      );
    case 'traceback':
      return finding.fn
        ? trans.__(
            '%1 allocated in %2 is kept by the last traceback (sys.last_traceback): the cell raised %3.',
            formatBytes(finding.bytes),
            names([finding.fn]),
            finding.error
          )
        : trans.__(
            '%1 allocated in a function is kept by the last traceback (sys.last_traceback): the cell raised %2.',
            formatBytes(finding.bytes),
            finding.error
          );
    case 'kernel-holders-leak': {
      // The rest of the leak, so that the sentence accounts for all of it.
      const rest = [
        ...(finding.named
          ? [trans.__('%1 held by %2', formatBytes(finding.named.bytes), holdersWords(finding.named.holders, trans))]
          : []),
        ...(finding.unseen ? [trans.__('%1 it did not see', formatBytes(finding.unseen))] : [])
      ]
        .map(part => `; ${part}`)
        .join('');
      const [bytes, holders] = [formatBytes(finding.bytes), holdersWords(finding.holders, trans)];
      if (finding.confirmed) {
        return recorded
          ? trans.__(
              'Confirmed by the kernel when the session was recorded: %1 held only by %2%3.',
              bytes,
              holders,
              rest
            )
          : trans.__('Confirmed by the kernel: %1 held only by %2%3.', bytes, holders, rest);
      }
      return recorded
        ? trans.__('When the session was recorded, the kernel found %1 held only by %2%3.', bytes, holders, rest)
        : trans.__('The kernel found %1 held only by %2%3.', bytes, holders, rest);
    }
    case 'kernel-holders-clear': {
      const holders = holdersWords(finding.holders, trans);
      if (!finding.orphans) {
        if (recorded) {
          return holders
            ? trans.__('When the session was recorded, the kernel found every live block held by %1.', holders)
            : trans.__(
                'When the session was recorded, the kernel found every live block held by nothing it could name.'
              );
        }
        return holders
          ? trans.__('The kernel found every live block held by %1.', holders)
          : trans.__('The kernel found every live block held by nothing it could name.');
      }
      return recorded
        ? trans._n(
            "When the session was recorded, the kernel found its live blocks held by %2; %1 found only through the garbage collector: held from where the kernel's search does not go (an object it does not enter, a C extension, a reference cycle).",
            "When the session was recorded, the kernel found its live blocks held by %2; %1 found only through the garbage collector: held from where the kernel's search does not go (an object it does not enter, a C extension, a reference cycle).",
            finding.orphans,
            holders || trans.__('nothing it could name')
          )
        : trans._n(
            "The kernel found its live blocks held by %2; %1 found only through the garbage collector: held from where the kernel's search does not go (an object it does not enter, a C extension, a reference cycle).",
            "The kernel found its live blocks held by %2; %1 found only through the garbage collector: held from where the kernel's search does not go (an object it does not enter, a C extension, a reference cycle).",
            finding.orphans,
            holders || trans.__('nothing it could name')
          );
    }
    case 'fixed':
      return trans.__('Fixed: the %1 it leaked was freed by %2.', formatBytes(finding.bytes), label(finding.by));
    case 'workspace':
      return trans.__(
        'Also keeps %1 of library workspace (cuBLAS, cuDNN): not part of the leak.',
        formatBytes(finding.bytes)
      );
    case 'retained':
      return finding.names.length
        ? trans.__(
            'Keeps %1 of %2 (held by %3).',
            formatBytes(finding.bytes),
            originWords(finding.origin, trans),
            names(finding.names)
          )
        : trans.__('Keeps %1 of %2.', formatBytes(finding.bytes), originWords(finding.origin, trans));
    case 'all-freed-later':
      return trans.__(
        'Left %1 alive, all freed later (by %2).',
        formatBytes(finding.bytes),
        finding.by.map(label).join(', ')
      );
    case 'nothing-left':
      return trans.__('Left nothing alive.');
    case 'no-stacks':
      return trans.__(
        '%1 has no allocation stack (history was off): what made it, and where, is unknown.',
        formatBytes(finding.bytes)
      );
    case 'leak-role':
      return trans.__('%1 of it is %2.', formatBytes(finding.bytes), roleWords(finding.role, trans));
  }
}

/** What memory of a role is, in a leak's reasons. */
function roleWords(role: string, trans: TranslationBundle): string {
  switch (role) {
    case 'parameter':
      return trans.__('module parameters');
    case 'buffer':
      return trans.__('module buffers');
    case 'gradient':
      return trans.__('gradients (`.grad`) of parameters');
    case 'optimizer_state':
      return trans.__('optimizer state (e.g. AdamW moments) of an optimizer still alive');
    case 'activation':
      return trans.__('tensors saved for backward by a live autograd graph');
    case 'output_cache':
      return trans.__('kept by the output cache (`Out[n]`, `_`)');
    case 'traceback':
      return trans.__('kept by the locals of a traceback (the last one, or one an exception you kept holds)');
    case 'user':
      return trans.__('tensors your code keeps (variables, containers, closures, caches)');
    case 'workspace':
      return trans.__('a library workspace (cuBLAS)');
    default:
      return trans.__('memory no role reached');
  }
}

/** A fix as a sentence. */
export function adviceWords(advice: LeakAdvice, trans: TranslationBundle): string {
  switch (advice.code) {
    case 'no-grad':
      return trans.__('Evaluate under `torch.no_grad()` (or `torch.inference_mode()`), or keep `.detach()`ed outputs.');
    case 'no-grad-or-detach':
      return trans.__('Evaluate under `torch.no_grad()`, or call `.detach()` on what you keep.');
    case 'detach-hidden':
      return trans.__(
        'Call `.detach()` on %1 before the next step: the hidden state carries every step\u2019s graph.',
        names(advice.names)
      );
    case 'append-item':
      return trans.__('Append `%1.item()` (or `%1.detach()`) to `%2`, not the tensor.', advice.name, advice.list);
    case 'remove-hook':
      return advice.lists.length
        ? trans.__('Remove the hook that stores outputs, or clear the list it appends to (%1).', names(advice.lists))
        : trans.__('Remove the hook or clear the list.');
    case 'silence-output':
      if (advice.also.length) {
        return outputCacheWords(advice, trans);
      }
      return advice.executionCount === null
        ? trans.__('End the line with `;` or delete its `Out[n]` entry.')
        : trans.__('End the line with `;` or `del Out[%1]`.', advice.executionCount);
    case 'clear-traceback':
      return trans.__(
        'Clear the last traceback (`sys.last_traceback = sys.last_value = sys.last_exc = None`) or run a cell that raises nothing big.'
      );
    case 'drop-references':
      return trans.__('Drop the references the kernel names.');
    case 'release-hidden':
      return hiddenAdviceWords(advice, trans);
    case 'drop-exception':
      return trans.__(
        '`del %1`: a kept exception keeps its traceback, and with it the locals of every frame it unwound.',
        advice.names.join(', ')
      );
    case 'clear-output-history':
      return outputHistoryWords(advice, trans);
    case 'find-referrers':
      return trans.__(
        'Find what refers to %1, which the kernel could not name: `gc.get_referrers(t)` (`t`: that tensor, found in `gc.get_objects()` by its shape), then drop that reference.',
        advice.tensors.join(', ')
      );
    case 'clear-holder':
      return trans.__(
        'Clear or `del` what keeps it (%1) once its values are used, or keep `.item()` / `.detach()` values there.',
        names(advice.holders)
      );
    case 'release-kept':
      return trans.__(
        '`del %1` once you are done with the tensors it keeps (or keep `.cpu()` copies): the other fixes leave them on the GPU.',
        advice.names.join(', ')
      );
    case 'find-holder':
      return trans.__(
        'Find what keeps each run\u2019s tensors (a list, a dict, a hook) and clear it, or keep `.item()` / `.detach()` values.'
      );
    case 'zero-grad':
      return trans.__(
        'Call `optimizer.zero_grad(set_to_none=True)` (or `model.zero_grad(set_to_none=True)`) once the gradients are used.'
      );
    case 'drop-optimizer':
      return trans.__(
        '`del` the optimizer you no longer train with (or `optimizer.state.clear()`), and anything that names it.'
      );
    case 'record-stacks':
      return trans.__(
        'Set Allocation history to `all` (Settings Editor, CUDA Memory) and run the cells again to see the line that allocates it.'
      );
  }
}

/**
 * A fix with how much of the leak it frees, where the fixes free different
 * parts (`torch.no_grad()` frees the graph, not the outputs a list keeps).
 */
export function freesWords(bytes: number, leaked: number, advice: string, trans: TranslationBundle): string {
  return bytes < leaked
    ? trans.__('Frees %1 of the %2: %3', formatBytes(bytes), formatBytes(leaked), advice)
    : trans.__('Frees all %1: %2', formatBytes(leaked), advice);
}

/** What to do about memory a `hidden` holder keeps. */
function hiddenAdviceWords(advice: Extract<LeakAdvice, { code: 'release-hidden' }>, trans: TranslationBundle): string {
  const where = names(advice.places);
  switch (advice.ref) {
    case 'default-argument':
      return trans.__(
        "`%1` keeps every call's value in a default argument (%2): default it to `None` and make a new one inside the function.",
        advice.owner,
        where
      );
    case 'closure':
      return trans.__(
        '`%1` keeps what its closure captured (%2): drop the function, or capture `.item()` / `.detach().cpu()` values instead.',
        advice.owner,
        where
      );
    case 'generator':
      return trans.__(
        "The paused generator `%1` keeps its frame's locals (%2): exhaust it or `del %1`.",
        advice.owner,
        where
      );
    case 'lru-cache':
      return trans.__(
        "`%1`'s lru_cache keeps its results: call `%1.cache_clear()`, or cache no tensors.",
        advice.owner
      );
    case 'partial':
      return trans.__(
        'The functools.partial `%1` keeps its arguments (%2): `del %1`, or pass the tensor when calling it.',
        advice.owner,
        where
      );
    case 'thread':
      return trans.__(
        "The thread '%1' keeps this while its function runs (%2): it is freed when that function drops it (`del` inside its loop) or returns; what the thread was started with stays until it returns, and `join()` only waits for that.",
        advice.owner,
        where
      );
    case null:
      return trans.__('Drop the references the kernel names (%1).', where);
  }
}

/** How to drop a displayed result that `Out[n]` and other names of the output history (`_`, `_2`) hold. */
function outputCacheWords(advice: Extract<LeakAdvice, { code: 'silence-output' }>, trans: TranslationBundle): string {
  const entry = advice.executionCount === null ? 'Out[n]' : `Out[${advice.executionCount}]`;
  const dels = advice.deletable.join(', ');
  if (advice.displays) {
    return trans._n(
      'End the line with `;` so that its result is not cached; to free it now, `del %2` and display %1 more result, or run `%reset -f out` (it is held by %3 as well as `%4`).',
      'End the line with `;` so that its result is not cached; to free it now, `del %2` and display %1 more results, or run `%reset -f out` (it is held by %3 as well as `%4`).',
      advice.displays,
      dels,
      names(advice.also),
      entry
    );
  }
  return trans.__(
    'End the line with `;` so that its result is not cached; to free it now, `del %1`, or run `%reset -f out` (it is held by %2 as well as `%3`).',
    dels,
    names(advice.also),
    entry
  );
}

/** How to drop a result the output history still holds after its `Out[n]` went. */
function outputHistoryWords(
  advice: Extract<LeakAdvice, { code: 'clear-output-history' }>,
  trans: TranslationBundle
): string {
  const dels = advice.deletable.join(', ');
  if (dels && advice.displays) {
    return trans._n(
      'The output history still holds it (%2): `del %3` and display %1 more result, or run `%reset -f out`.',
      'The output history still holds it (%2): `del %3` and display %1 more results, or run `%reset -f out`.',
      advice.displays,
      names(advice.names),
      dels
    );
  }
  if (advice.displays) {
    return trans._n(
      'The output history still holds it (%2): display %1 more result, or run `%reset -f out`.',
      'The output history still holds it (%2): display %1 more results, or run `%reset -f out`.',
      advice.displays,
      names(advice.names)
    );
  }
  if (dels) {
    return trans.__(
      'The output history still holds it (%1): `del %2`, or run `%reset -f out`.',
      names(advice.names),
      dels
    );
  }
  return trans.__('The output history still holds it (%1): run `%reset -f out`.', names(advice.names));
}

/**
 * Why the finder can say little about memory no stack explains, and how to
 * get stacks: without them "no cell leaks" would be a claim it cannot make.
 */
export function noStacksWords(noStacks: INoStacks, trans: TranslationBundle): string {
  return trans._n(
    'No allocation stacks were recorded (allocation history was off): for %2 in %1 cell run, what made it, on which line, and whether it leaks is unknown; only growth on a re-run or the kernel\u2019s holders show a leak. Set Allocation history to `all` (Settings Editor, CUDA Memory) and run the cells again.',
    'No allocation stacks were recorded (allocation history was off): for %2 in %1 cell runs, what made it, on which line, and whether it leaks is unknown; only growth on a re-run or the kernel\u2019s holders show a leak. Set Allocation history to `all` (Settings Editor, CUDA Memory) and run the cells again.',
    noStacks.executions.length,
    formatBytes(noStacks.bytes)
  );
}

/**
 * The cell to look at first, named so a person finds it: by the run's count
 * where its prompt shows it; where the cell ran again since (or its count was
 * cleared), as the highlighted cell, by its first line and place, and the run
 * as the one before what its prompt shows, so nobody looks for a prompt that
 * is gone.
 */
export function lookFirstWords(entry: ILeakEntry, trans: TranslationBundle): string {
  const earlier = entry.earlierRun;
  if (!earlier) {
    return trans.__('Look at %1 first.', entry.label);
  }
  const cell = earlier.position
    ? trans.__('`%1`, cell %2/%3', earlier.headline, earlier.position.index, earlier.position.total)
    : `\`${earlier.headline}\``;
  return earlier.prompt === null
    ? trans.__(
        'Look at the highlighted cell first (%1): its run %2, which its prompt no longer shows.',
        cell,
        earlier.run
      )
    : trans.__(
        'Look at the highlighted cell first (%1): its run %2, before the one its prompt shows now, [%3].',
        cell,
        earlier.run,
        earlier.prompt
      );
}

/** Beside an entry's name, where the cell's prompt shows another run now: which run the entry is. */
export function earlierRunWords(earlier: ILeakEntry.IEarlierRun, trans: TranslationBundle): string {
  return earlier.prompt === null
    ? trans.__('an earlier run: the cell shows no count now')
    : trans.__('an earlier run: the cell shows [%1] now', earlier.prompt);
}
