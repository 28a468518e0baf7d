/**
 * A leak's parts: its bytes by what the memory is for, each with the fixes
 * that free it. A fix to the forward pass (`torch.no_grad()`, `.detach()`)
 * frees only what autograd saved for backward, never the outputs a list
 * keeps; dropping the reference that keeps the memory frees all it reaches.
 * Views say how much each fix frees, so no headline promises more than the
 * fix below it recovers.
 */
import { LeakAdvice } from '../findings';
import { Role } from '../roles';
import { IExecutionVerdict, ILeakPart } from './types';

// Fixes that free memory of these roles only; every other fix drops a reference and frees all the leak.
const FREES_ONLY: Partial<Record<LeakAdvice['code'], readonly Role[]>> = {
  'no-grad': ['activation'],
  'no-grad-or-detach': ['activation'],
  'detach-hidden': ['activation'],
  'zero-grad': ['gradient'],
  'drop-optimizer': ['optimizer_state'],
  // It shows the line; it frees nothing.
  'record-stacks': []
};

/**
 * Whether `advice` is known to free memory of `role`. Memory of no known role
 * (null: none recorded, or the kernel could not tell) is known to be freed
 * only by a fix that drops what references the leak.
 */
export function frees(advice: LeakAdvice, role: Role | null): boolean {
  const only = FREES_ONLY[advice.code];
  if (!only) {
    return true;
  }
  return role !== null && only.includes(role);
}

/**
 * The fixes worth showing for a leak of these bytes per role: where the
 * kernel named the role of every leaked byte, a fix that frees memory of
 * other roles only (`torch.no_grad()` for a leak of kept outputs) is left
 * out, since it would free none of this leak. `release-kept`, which says
 * the other fixes leave the tensors on the GPU, then stands alone as the
 * plain fix for what keeps them (`clear-holder`).
 */
export function fixesThatFree(
  bytesByRole: ReadonlyMap<Role | null, number>,
  fixes: readonly LeakAdvice[]
): LeakAdvice[] {
  const roles = [...bytesByRole].filter(([, bytes]) => bytes > 0).map(([role]) => role);
  if (!roles.length || roles.includes(null)) {
    return [...fixes];
  }
  const kept = fixes.filter(a => !FREES_ONLY[a.code]?.length || roles.some(role => frees(a, role)));
  const others = kept.filter(a => a.code !== 'release-kept' && a.code !== 'record-stacks');
  return others.length
    ? kept
    : kept.map(a => (a.code === 'release-kept' ? { code: 'clear-holder', holders: a.names } : a));
}

/** The parts of a leak from its bytes per role (null: none known), largest first, each with its fixes. */
export function leakParts(bytesByRole: ReadonlyMap<Role | null, number>, fixes: readonly LeakAdvice[]): ILeakPart[] {
  return [...bytesByRole]
    .filter(([, bytes]) => bytes > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([role, bytes]) => ({ bytes, role, fixes: fixes.flatMap((a, i) => (frees(a, role) ? [i] : [])) }));
}

/**
 * Per fix of a verdict, the bytes of its leak the fix frees; null where each
 * fix that frees memory frees all of it, so the views need not say, or where
 * some of the leak has no known role, so no figure could be sure.
 */
export function bytesFreedByFixes(v: Pick<IExecutionVerdict, 'fixes' | 'parts' | 'leakedBytes'>): number[] | null {
  if (v.parts.some(p => p.role === null)) {
    return null;
  }
  const freed = v.fixes.map((_, i) => v.parts.reduce((n, p) => n + (p.fixes.includes(i) ? p.bytes : 0), 0));
  return freed.some(n => n > 0 && n < v.leakedBytes) ? freed : null;
}
