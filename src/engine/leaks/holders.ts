/**
 * The kernel's answer (who holds each live block) refines verdicts: named
 * owners replace the guesses, a guess the answer contradicts goes, holders
 * nobody sees make a leak, and owners meant to keep memory clear a guess,
 * but only for memory the kernel could see. A leak whose memory is gone is
 * out of the latest answer's reach: it never turns it into `retained`; the
 * answer given right after the leaking cell still names its holders.
 */
import { holderKey, HolderKind, IBlockHolders, IHolder, summarizeHolderList, throughTraceback } from '../holders';
import { Block } from '../model';
import { LeakFinding } from '../findings';
import { LeakCause } from './types';
import { Context, total } from './context';
import { Finding } from './finding';
import { holderAdvice, outputCacheAdvice } from './holderAdvice';

// Holders nobody sees: each makes the memory it keeps a leak. The references that keep the rest come first:
// a graph is reached through one of them (a kept exception's frame, `Out[n]`, a closure, a hook's list).
const INVISIBLE: readonly HolderKind[] = ['traceback', 'output-cache', 'hidden', 'hook', 'graph', 'unreachable'];
// Holders of state meant to stay.
const EXPECTED: readonly HolderKind[] = ['parameter', 'gradient', 'optimizer', 'native'];
// Holders a user sees and names.
const VISIBLE: readonly HolderKind[] = ['variable', 'parameter', 'gradient', 'optimizer'];
// Guessed causes that are a holder kind too: an answer that saw their memory under other holders contradicts them.
const CHECKABLE: readonly (LeakCause & HolderKind)[] = ['output-cache', 'traceback'];

interface IKnown {
  readonly block: Block;
  readonly list: readonly IHolder[];
}

/** Refine a finding with the kernel's latest answer, for the blocks still alive. */
export function applyHolders(f: Finding, holders: IBlockHolders, context: Context): void {
  const known = knownOf(f.retention.alive, holders);
  if (!known.length) {
    return;
  }
  retractContradicted(f, known);
  renameOutputCache(f, known);
  judge(f, known, context);
  nameHolders(f, known);
}

/**
 * Let the answer given right after the finding's own execution name the
 * holders of memory a later cell freed, which the latest answer cannot see:
 * a leak of such holders (a kept exception, a closure) that a later cell
 * freed is then `fixed` by it, not memory merely `freed later`.
 */
export function applyHoldersAfter(f: Finding, holders: IBlockHolders, context: Context): void {
  const freed = f.retention.left.filter(b => f.freedAtOf(b) !== null);
  const known = knownOf(freed, holders);
  if (leakByHolders(f, known, context)) {
    known.filter(e => f.evidence.includes(e.block)).forEach(e => e.list.forEach(h => f.hold(h)));
  }
}

function knownOf(blocks: readonly Block[], holders: IBlockHolders): IKnown[] {
  const known: IKnown[] = [];
  for (const block of blocks) {
    const list = holders.get(holderKey(block.device, block.address));
    if (list?.length) {
      known.push({ block, list });
    }
  }
  return known;
}

/** A guessed cause goes when the answer saw all its memory alive and none of it held the way the guess says. */
function retractContradicted(f: Finding, known: readonly IKnown[]): void {
  const seen = new Map(known.map(e => [e.block, e.list]));
  for (const cause of CHECKABLE) {
    const blocks = f.blocksOf(cause);
    if (blocks.length && blocks.every(b => seen.has(b) && !seen.get(b)!.some(h => h.kind === cause))) {
      f.retract(cause);
    }
  }
}

/** A leak made by holders nobody sees, a guess the answer leaves standing, or a guess it clears. */
function judge(f: Finding, known: readonly IKnown[], context: Context): void {
  if (leakByHolders(f, known, context) || f.causes.has('growth')) {
    return;
  }
  if (f.causes.size) {
    // A leak is cleared only when the kernel saw its memory alive and every block of it has a visible owner.
    const keys = new Set(known.map(e => holderKey(e.block.device, e.block.address)));
    const alive = f.uniqueEvidence().filter(b => f.freedAtOf(b) === null);
    if (!alive.length || !alive.every(b => keys.has(holderKey(b.device, b.address)))) {
      return;
    }
  }
  const named = known.filter(e => e.list.some(h => h.kind !== 'unreachable'));
  f.cleared = {
    code: 'kernel-holders-clear',
    holders: summarizeHolderList(named.flatMap(e => e.list.filter(h => h.kind !== 'unreachable'))),
    orphans: known.length - named.length
  };
}

/** Record the leak of blocks only holders nobody sees keep; returns whether there was one. */
function leakByHolders(f: Finding, known: readonly IKnown[], context: Context): boolean {
  // Freeing a graph, the cache or the traceback frees only blocks no visible name also holds.
  // Some holders confirm a cause without making one: a tensor reached only through the
  // garbage collector may be held from C++ (a library cache), and an input this cell made
  // that a later cell's graph saved is that cell's leak, not this one's.
  const makesLeak = (h: IHolder, b: Block) =>
    INVISIBLE.includes(h.kind) &&
    (f.causes.size > 0 || (h.kind !== 'unreachable' && (h.kind !== 'graph' || context.origin(b.stack) === 'forward')));
  const invisible = known.filter(
    e =>
      e.list.some(h => makesLeak(h, e.block)) &&
      !e.list.some(h => VISIBLE.includes(h.kind)) &&
      context.canLeak(e.block, f.retention)
  );
  if (!invisible.length) {
    return false;
  }
  const kinds = new Set(invisible.flatMap(e => e.list.map(h => h.kind)));
  const held = invisible.flatMap(e => e.list.filter(h => !EXPECTED.includes(h.kind)));
  const named = summarizeHolderList(held);
  const cause = INVISIBLE.find(k => kinds.has(k)) as LeakCause;
  const confirmed = f.causes.has(cause);
  // A rule that found a cause gave its advice; what only the kernel can tell (a kept exception) is added.
  const unadvised = new Set([...kinds].filter(k => k === 'traceback' || !f.causes.has(k as LeakCause)));
  const advice = unadvised.size ? holderAdvice(unadvised, held) : [];
  const finding: LeakFinding = {
    code: 'kernel-holders-leak',
    bytes: total(invisible.map(e => e.block)),
    holders: named,
    confirmed
  };
  f.leak(
    cause,
    invisible.map(e => e.block),
    finding,
    advice,
    context
  );
  // The rest of the leak's evidence, so that its words account for all of it: what else holds it, what was unseen.
  const rest = restOfEvidence(f, invisible, known);
  if (rest.named || rest.unseen) {
    f.replaceFinding(finding, { ...finding, ...rest });
  }
  if (cause === 'traceback') {
    retractGraphKeptByTraceback(f, invisible);
  }
  f.confidence = 'high';
  return true;
}

/**
 * Of a leak's evidence, what the kernel's holders-only blocks (`invisible`)
 * leave: blocks the answer saw held by names as well (`named`: a graph's
 * outputs, which the list of them holds too), and bytes it did not cover
 * (`unseen`). Blocks by address: the evidence may be the execution's own
 * snapshot's, the answer the latest's.
 */
function restOfEvidence(
  f: Finding,
  invisible: readonly IKnown[],
  known: readonly IKnown[]
): { named?: { bytes: number; holders: IHolder[] }; unseen?: number } {
  const only = new Set(invisible.map(e => holderKey(e.block.device, e.block.address)));
  const answered = new Map(known.map(e => [holderKey(e.block.device, e.block.address), e.list]));
  const holders: IHolder[] = [];
  let named = 0;
  let unseen = 0;
  for (const b of f.uniqueEvidence()) {
    const key = holderKey(b.device, b.address);
    if (only.has(key)) {
      continue;
    }
    const list = answered.get(key);
    if (list) {
      named += b.size;
      // The names the user sees (and can drop); the invisible holders are said already.
      list.filter(h => !INVISIBLE.includes(h.kind)).forEach(h => holders.push(h));
    } else {
      unseen += b.size;
    }
  }
  return {
    ...(named ? { named: { bytes: named, holders: summarizeHolderList(holders) } } : {}),
    ...(unseen ? { unseen } : {})
  };
}

/**
 * A graph the kernel found kept only through a traceback's frames is a step
 * that raised before its backward pass (a training step too), not a
 * forward pass that wanted `torch.no_grad()`: the graph guess goes, the
 * traceback's fix frees it all.
 */
function retractGraphKeptByTraceback(f: Finding, invisible: readonly IKnown[]): void {
  // By address: a leak's evidence can be its own snapshot's block, the answer's the latest snapshot's.
  const seen = new Map(invisible.map(e => [holderKey(e.block.device, e.block.address), e.list]));
  const kept = (h: IHolder) => h.kind === 'traceback' || (h.kind === 'graph' && throughTraceback(h));
  const blocks = f.blocksOf('graph');
  if (blocks.length && blocks.every(b => seen.get(holderKey(b.device, b.address))?.every(kept))) {
    f.retract('graph');
  }
}

/**
 * The kernel's names replace the guesses, for what it could see: a leak's
 * own (evidence) blocks where it saw them, not every block the cell keeps
 * (a buffer's leak is not held by the gradients the same cell made).
 */
function nameHolders(f: Finding, known: readonly IKnown[]): void {
  const evidence = new Set(f.leaking ? f.uniqueEvidence().map(b => holderKey(b.device, b.address)) : []);
  const own = known.filter(e => evidence.has(holderKey(e.block.device, e.block.address)));
  f.holders = [];
  (own.length ? own : known).forEach(e => e.list.forEach(h => f.hold(h)));
}

/**
 * The output cache finding in the kernel's own names (`Out[2]`, `_`), not
 * the guess; its fix names every name that holds it (`_2` as well as
 * `Out[2]`), or only what still holds it once `Out[n]` is gone.
 */
function renameOutputCache(f: Finding, known: readonly IKnown[]): void {
  const byPath = new Map(known.flatMap(e => e.list.filter(h => h.kind === 'output-cache').map(h => [h.path, h])));
  // Without the kernel's references (a file from before they were sent) the rule's own names and fix stay.
  if (![...byPath.values()].some(h => h.reference) || !f.causes.has('output-cache')) {
    return;
  }
  // The `Out` entries first, then `_`, `__`, `___`, as a person reads them.
  const rank = (h: IHolder) => Number(h.reference?.type !== 'output');
  const holders = [...byPath.values()].sort(
    (a, b) => rank(a) - rank(b) || a.path.length - b.path.length || a.path.localeCompare(b.path)
  );
  const names = holders.map(h => h.path);
  f.findings.filter(x => x.code === 'output-cache').forEach(x => f.replaceFinding(x, { ...x, names }));
  f.replaceAdvice('silence-output', outputCacheAdvice(holders));
}
