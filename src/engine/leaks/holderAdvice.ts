/**
 * What to do about memory the kernel found held only by holders nobody sees,
 * as data read from the holders' kinds and paths: the views word it.
 */
import { LeakAdvice } from '../findings';
import { exceptionHolder, hiddenHolder, hiddenPlaces, HolderKind, IHolder } from '../holders';

// IPython's output history: `Out[n]`, `_N`, and the names that follow the latest results. A holder's path
// can go on into the result (`Out[2]['logits']`, `_[0]`): the name is its start.
const OUTPUT_NAME = /^(Out\[(\d+)\]|_\d+|_{1,3})(?![\w])/;
const RECENT_RESULT = /^_{1,3}$/;

/** The fixes for leaked memory held by holders of these `kinds` (the `holders` named for it). */
export function holderAdvice(kinds: ReadonlySet<HolderKind>, holders: readonly IHolder[]): LeakAdvice[] {
  const of = (kind: HolderKind) => holders.filter(h => h.kind === kind);
  const advice: LeakAdvice[] = [];
  // The references that keep the rest first: dropping a kept exception, an output or a closure frees the
  // graph it reaches too, while `torch.no_grad()` frees only the activations.
  if (kinds.has('traceback')) {
    advice.push(...tracebackAdvice(of('traceback').map(h => h.path)));
  }
  if (kinds.has('output-cache')) {
    advice.push(outputCacheAdvice(of('output-cache').map(h => h.path)));
  }
  if (kinds.has('hidden')) {
    advice.push(...hiddenAdvice(of('hidden').map(h => h.path)));
  }
  if (kinds.has('hook')) {
    advice.push({ code: 'remove-hook', lists: [...new Set(of('hook').map(h => h.path.replace(/\[.*$/, '')))] });
  }
  if (kinds.has('graph')) {
    advice.push({ code: 'no-grad-or-detach' });
  }
  if (kinds.has('unreachable') && !advice.length) {
    advice.push({ code: 'find-referrers', tensors: [...new Set(of('unreachable').map(h => h.path))] });
  }
  return advice.length ? advice : [{ code: 'drop-references' }];
}

/**
 * Silence the line that made `Out[n]`, naming the other names of the output
 * history that hold it too; with no `Out[n]` left (`del Out[2]`), clear the
 * names that still hold it.
 */
export function outputCacheAdvice(paths: readonly string[]): LeakAdvice {
  const names = [...new Set(paths.map(p => OUTPUT_NAME.exec(p)?.[1] ?? p))];
  const outs = names.filter(n => n.startsWith('Out['));
  const others = names.filter(n => !n.startsWith('Out['));
  // `_` leaves the history after three more results, `__` after two, `___` after one.
  const recent = names.filter(n => RECENT_RESULT.test(n));
  const displays = recent.length ? 4 - Math.min(...recent.map(n => n.length)) : 0;
  // `Out[n]` and `_N` can be deleted; `_`, `__`, `___` are set again by each displayed result.
  const deletable = names.filter(n => OUTPUT_NAME.test(n) && !RECENT_RESULT.test(n));
  if (outs.length || !others.length) {
    const count = outs.length ? OUTPUT_NAME.exec(outs[0])?.[2] : undefined;
    const also = [...outs.slice(1), ...others];
    return {
      code: 'silence-output',
      executionCount: count === undefined ? null : Number(count),
      also,
      deletable: also.length ? deletable : [],
      displays
    };
  }
  return { code: 'clear-output-history', names: others, deletable, displays };
}

/** Drop a kept exception (`err.__traceback__`); clear `sys.last_traceback` when that is a holder too. */
function tracebackAdvice(paths: readonly string[]): LeakAdvice[] {
  const names = [...new Set(paths.map(exceptionHolder).filter((n): n is string => n !== null))];
  const advice: LeakAdvice[] = names.length ? [{ code: 'drop-exception', names }] : [];
  if (paths.some(p => exceptionHolder(p) === null)) {
    advice.push({ code: 'clear-traceback' });
  }
  return advice;
}

/** One fix per owner of a hidden reference (a function's defaults, a closure, a generator, a cache, a partial). */
function hiddenAdvice(paths: readonly string[]): LeakAdvice[] {
  const byOwner = new Map<string, LeakAdvice & { code: 'release-hidden'; paths: string[]; places: string[] }>();
  for (const path of new Set(paths)) {
    const { ref, owner } = hiddenHolder(path);
    const key = `${ref}\u0000${owner}`;
    const entry = byOwner.get(key) ?? { code: 'release-hidden', ref, owner, paths: [], places: [] };
    entry.paths.push(path);
    byOwner.set(key, entry);
  }
  return [...byOwner.values()].map(a => ({ ...a, places: hiddenPlaces(a.ref, a.paths) }));
}
