/**
 * The kernel's answer (who holds each live block) refines verdicts: named
 * owners replace the guesses, holders nobody sees make a leak, and owners
 * meant to keep memory clear a guess, but only for memory the kernel could
 * see. A leak whose memory is gone is out of the answer's reach: the answer
 * never turns it into `retained`.
 */
import { LeakAdvice } from '../findings';
import { holderKey, HolderKind, IBlockHolders, IHolder, summarizeHolderList } from '../holders';
import { Block } from '../model';
import { LeakCause } from './types';
import { Context, total } from './context';
import { Finding } from './finding';

// Holders nobody sees: each makes the memory it keeps a leak.
const INVISIBLE: readonly HolderKind[] = ['graph', 'output-cache', 'traceback', 'hook', 'unreachable'];
// Holders of state meant to stay.
const EXPECTED: readonly HolderKind[] = ['parameter', 'gradient', 'optimizer', 'native'];
// Holders a user sees and names.
const VISIBLE: readonly HolderKind[] = ['variable', 'parameter', 'gradient', 'optimizer'];

interface IKnown {
  readonly block: Block;
  readonly list: readonly IHolder[];
}

export function applyHolders(f: Finding, holders: IBlockHolders, context: Context): void {
  const known: IKnown[] = [];
  for (const block of f.retention.alive) {
    const list = holders.get(holderKey(block.device, block.address));
    if (list?.length) {
      known.push({ block, list });
    }
  }
  if (!known.length) {
    return;
  }
  // The kernel's names replace the guesses, for what it could see.
  f.holders = [];
  known.forEach(e => e.list.forEach(h => f.hold(h)));
  renameOutputCache(f, known);
  // Freeing a graph, the cache or the traceback frees only blocks no visible name also holds.
  // Some holders confirm a cause without making one: a tensor reached only through the
  // garbage collector is held from C++ (a library cache), and an input this cell made
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
  if (invisible.length) {
    const kinds = new Set(invisible.flatMap(e => e.list.map(h => h.kind)));
    const named = summarizeHolderList(invisible.flatMap(e => e.list.filter(h => !EXPECTED.includes(h.kind))));
    const cause = INVISIBLE.find(k => kinds.has(k)) as LeakCause;
    const confirmed = f.causes.has(cause);
    f.leak(
      cause,
      invisible.map(e => e.block),
      { code: 'kernel-holders-leak', bytes: total(invisible.map(e => e.block)), holders: named, confirmed },
      confirmed ? [] : holderAdvice(kinds, named),
      context
    );
    f.confidence = 'high';
    return;
  }
  if (f.causes.has('growth')) {
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

/** The output cache finding in the kernel's own names (`Out[2]`, `_`), not the guess. */
function renameOutputCache(f: Finding, known: readonly IKnown[]): void {
  const names = [...new Set(known.flatMap(e => e.list.filter(h => h.kind === 'output-cache').map(h => h.path)))];
  if (!names.length) {
    return;
  }
  // `Out[n]` first, then `_`, `__`, `___`, as a person reads them.
  names.sort(
    (a, b) => Number(!a.startsWith('Out[')) - Number(!b.startsWith('Out[')) || a.length - b.length || a.localeCompare(b)
  );
  f.findings = f.findings.map(x => (x.code === 'output-cache' ? { ...x, names } : x));
}

function holderAdvice(kinds: Set<HolderKind>, holders: readonly IHolder[]): LeakAdvice[] {
  const advice: LeakAdvice[] = [];
  if (kinds.has('hook')) {
    advice.push({
      code: 'remove-hook',
      lists: [...new Set(holders.filter(h => h.kind === 'hook').map(h => h.path.replace(/\[.*$/, '')))]
    });
  }
  if (kinds.has('graph')) {
    advice.push({ code: 'no-grad-or-detach' });
  }
  if (kinds.has('output-cache')) {
    const out = holders.map(h => /^Out\[(\d+)\]$/.exec(h.path)).find(m => m !== null);
    advice.push({ code: 'silence-output', executionCount: out ? Number(out[1]) : null });
  }
  if (kinds.has('traceback')) {
    advice.push({ code: 'clear-traceback' });
  }
  return advice.length ? advice : [{ code: 'drop-references' }];
}
