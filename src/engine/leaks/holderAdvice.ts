/**
 * What to do about memory the kernel found held only by holders nobody sees,
 * as data read from the holders' kinds and references: the views word it.
 */
import { LeakAdvice } from '../findings';
import {
  exceptionHolder,
  foldNames,
  hiddenHolder,
  HolderKind,
  IHiddenHolder,
  IHolder,
  summarizeHolders
} from '../holders';

/**
 * The fixes for leaked memory held by holders of these `kinds` (the
 * `holders` named for it, each as the kernel gave it: a fix folds the names
 * it gives, `on_epoch_end[0:2]`, where that is still a name to act on).
 */
export function holderAdvice(kinds: ReadonlySet<HolderKind>, holders: readonly IHolder[]): LeakAdvice[] {
  const of = (kind: HolderKind) => holders.filter(h => h.kind === kind);
  const advice: LeakAdvice[] = [];
  // The references that keep the rest first: dropping a kept exception, an output or a closure frees the
  // graph it reaches too, while `torch.no_grad()` frees only the activations.
  if (kinds.has('traceback')) {
    advice.push(...tracebackAdvice(of('traceback')));
  }
  if (kinds.has('output-cache')) {
    advice.push(outputCacheAdvice(of('output-cache')));
  }
  if (kinds.has('hidden')) {
    advice.push(...hiddenAdvice(of('hidden')));
  }
  if (kinds.has('hook')) {
    // The container the hook appends to, as the kernel names it; a file from before references has only paths.
    const named = of('hook').filter(h => h.reference?.name !== undefined);
    const lists = named.length ? named.map(h => h.reference!.name!) : summarizeHolders(of('hook').map(h => h.path));
    advice.push({ code: 'remove-hook', lists: [...new Set(lists)] });
  }
  if (kinds.has('graph')) {
    advice.push({ code: 'no-grad-or-detach' });
  }
  if (kinds.has('unreachable') && !advice.length) {
    advice.push({ code: 'find-referrers', tensors: summarizeHolders(of('unreachable').map(h => h.path)) });
  }
  return advice.length ? advice : [{ code: 'drop-references' }];
}

/**
 * Silence the line that made `Out[n]`, naming the other names of the output
 * history that hold it too; with no `Out[n]` left (`del Out[2]`), clear the
 * names that still hold it. Each name is what the kernel's reference says:
 * an `Out` entry or a `_N` can be deleted, while `_`, `__`, `___` let go of
 * it after `displays` more displayed results. A holder without a reference
 * (a file from before they were sent) is a name to clear.
 */
export function outputCacheAdvice(holders: readonly IHolder[]): LeakAdvice {
  const named = new Map(holders.map(h => [h.reference?.name ?? h.path, h.reference]));
  const names = [...named.keys()];
  const outs = names.filter(n => named.get(n)?.type === 'output');
  const others = names.filter(n => named.get(n)?.type !== 'output');
  const displays = Math.max(0, ...[...named.values()].map(r => r?.displays ?? 0));
  const deletable = names.filter(n => named.get(n)?.count !== undefined);
  if (outs.length || !others.length) {
    const also = [...outs.slice(1), ...others];
    return {
      code: 'silence-output',
      executionCount: outs.length ? (named.get(outs[0])?.count ?? null) : null,
      also,
      deletable: also.length ? deletable : [],
      displays
    };
  }
  return { code: 'clear-output-history', names: others, deletable, displays };
}

/**
 * Drop a kept exception (`err.__traceback__`); clear `sys.last_traceback`
 * when that is a holder too; a traceback the kernel did not say whose (a
 * file from before references were sent) gets the general fix.
 */
function tracebackAdvice(holders: readonly IHolder[]): LeakAdvice[] {
  const kept = holders.map(exceptionHolder).filter((n): n is string => n !== null);
  const names = summarizeHolders(kept, true);
  const advice: LeakAdvice[] = names.length ? [{ code: 'drop-exception', names }] : [];
  if (holders.some(h => h.reference?.type === 'last-traceback')) {
    advice.push({ code: 'clear-traceback' });
  }
  if (holders.some(h => h.reference === undefined)) {
    advice.push({ code: 'drop-references' });
  }
  return advice;
}

/**
 * One fix per owner of a hidden reference (a function's defaults, a closure,
 * a generator, a cache, a partial, a running thread); owners that differ
 * only by an index and keep the same places are one fix
 * (`on_epoch_end[0:2]`'s closure variable `ref`).
 */
function hiddenAdvice(holders: readonly IHolder[]): LeakAdvice[] {
  type Owner = IHiddenHolder & { paths: string[]; places: string[] };
  const owners = new Map<string, Owner>();
  for (const h of holders) {
    const held = hiddenHolder(h);
    const key = `${held.ref}\u0000${held.owner}`;
    const owner = owners.get(key) ?? { ...held, paths: [], places: [] };
    owner.paths.push(h.path);
    if (held.place !== null) {
      owner.places.push(held.place);
    }
    owners.set(key, owner);
  }
  // By what keeps them and where, each place by name: `a[0]` and `a[2]` are not `a[1]` and `a[3]`.
  const alike = new Map<string, Owner[]>();
  for (const owner of owners.values()) {
    const key = `${owner.ref}\u0000${summarizeHolders(owner.places, true).join('\u0000')}`;
    alike.set(key, [...(alike.get(key) ?? []), owner]);
  }
  return [...alike.values()].flatMap(group =>
    foldNames(group, o => o.owner, true).map(({ label, items }) => ({
      code: 'release-hidden' as const,
      ref: items[0].ref,
      owner: label,
      paths: summarizeHolders(items.flatMap(o => o.paths)),
      places: summarizeHolders(
        items.flatMap(o => o.places),
        true
      )
    }))
  );
}
