/**
 * What the leaked memory is for, from the kernel's roles: each leak gets a
 * reason per role its evidence holds (`activation`: tensors saved for
 * backward by a live autograd graph) and the advice that role calls for;
 * the finding keeps each block's role, which splits the leak into parts.
 */
import { LeakAdvice } from '../findings';
import { deletableName, holderKey, HolderKind } from '../holders';
import { Block } from '../model';
import { BlockRoles, Role, ROLES } from '../roles';
import { Finding } from './finding';
import { frees } from './parts';

/** The advice each role of leaked memory calls for; roles without one add none. */
const ADVICE: Partial<Record<Role, (f: Finding) => LeakAdvice>> = {
  activation: () => ({ code: 'no-grad-or-detach' }),
  gradient: () => ({ code: 'zero-grad' }),
  optimizer_state: () => ({ code: 'drop-optimizer' }),
  output_cache: f => ({
    code: 'silence-output',
    executionCount: f.execution.executionCount,
    also: [],
    deletable: [],
    displays: 0
  }),
  traceback: () => ({ code: 'clear-traceback' })
};

/**
 * Add a `leak-role` finding per role of a leaking execution's evidence,
 * largest first (`unknown` left out: it says nothing), with its advice.
 * `rolesOf` gives a block's roles: the latest snapshot of its kernel that
 * has roles and still holds it, else the execution's own snapshot; null
 * when neither has per-block roles.
 */
export function explainRoles(f: Finding, rolesOf: (block: Block) => BlockRoles | null): void {
  if (!f.leaking) {
    return;
  }
  const bytes = new Map<Role, number>();
  for (const b of f.uniqueEvidence()) {
    const roles = rolesOf(b);
    if (roles) {
      const role = roles.roleOf(b);
      bytes.set(role, (bytes.get(role) ?? 0) + b.size);
      if (role !== 'unknown') {
        f.roles.set(holderKey(b.device, b.address), role);
      }
    }
  }
  const held = ROLES.filter(r => r !== 'unknown' && bytes.has(r)).sort((a, b) => bytes.get(b)! - bytes.get(a)!);
  for (const role of held) {
    f.findings.push({ code: 'leak-role', role, bytes: bytes.get(role)! });
    const advice = ADVICE[role]?.(f);
    if (advice && !Private.advised(f, role)) {
      f.advice.set(JSON.stringify(advice), advice);
    }
  }
  // Whether the user's own tensors need a fix of their own depends on every other fix: decided last, whatever
  // the roles' sizes.
  const kept = held.includes('user') ? Private.releaseKept(f) : null;
  if (kept) {
    f.advice.set(JSON.stringify(kept), kept);
  }
}

namespace Private {
  // Advice a rule or the kernel's holders already gave for a role: the role adds no second wording of it.
  // A traceback's fix frees the graph its frames keep too: a step that raised before its backward pass
  // (a training step as well) is no forward pass that wanted torch.no_grad().
  const SAID: Partial<Record<Role, readonly LeakAdvice['code'][]>> = {
    activation: ['no-grad', 'no-grad-or-detach', 'detach-hidden', 'drop-exception', 'clear-traceback'],
    output_cache: ['silence-output', 'clear-output-history'],
    traceback: ['clear-traceback', 'drop-exception']
  };

  // Holders of the user's own tensors whose names a user can `del` (a parameter's blocks have its role).
  const NAMED: readonly HolderKind[] = ['variable'];

  /**
   * Tensors your code keeps, where every fix given so far frees only other
   * roles (`torch.no_grad()` frees a graph, not the outputs `preds` keeps):
   * `del` what keeps them, by the names the kernel's holders give them
   * (`deletableName`), else the names the source stored the graph in. Null
   * where a fix frees them already, or none was given (the finder then says to
   * clear what keeps the leak).
   */
  export function releaseKept(f: Finding): LeakAdvice | null {
    const given = [...f.advice.values()];
    if (!given.length || given.some(a => frees(a, 'user'))) {
      return null;
    }
    const held = f.holders.filter(h => NAMED.includes(h.kind)).flatMap(h => deletableName(h) ?? []);
    const stored = f.findings.flatMap(x => (x.code === 'graph' ? x.names : []));
    const names = [...new Set(held.length ? held : stored)];
    return names.length ? { code: 'release-kept', names } : { code: 'find-holder' };
  }

  /** Whether the finding already advised what the role calls for. */
  export function advised(f: Finding, role: Role): boolean {
    const codes = SAID[role] ?? [];
    return [...f.advice.values()].some(a => codes.includes(a.code));
  }
}
