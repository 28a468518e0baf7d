/**
 * The order to look at executions in: leaks first, grouped by code (the
 * group with the most leaked bytes, its latest run first: the one a user
 * would re-run); then memory no stack explains (allocation history off),
 * largest first, as it may hide a leak; then what is retained, largest
 * first; then fixed leaks; then the rest in execution order.
 */
import { codeOf } from './context';
import { IExecutionVerdict, ILeakExecution, LeakVerdict } from './types';

const ORDER: Record<LeakVerdict, number> = { leak: 0, unknown: 1, retained: 2, fixed: 3, ok: 4 };

export function rank(verdicts: readonly IExecutionVerdict[], executions: readonly ILeakExecution[]): number[] {
  const groupBytes = new Map<string, number>();
  for (const v of verdicts) {
    if (v.verdict === 'leak') {
      const code = codeOf(executions[v.execution]);
      groupBytes.set(code, Math.max(groupBytes.get(code) ?? 0, v.leakedBytes));
    }
  }
  return [...verdicts]
    .sort((a, b) => {
      const byVerdict = ORDER[a.verdict] - ORDER[b.verdict];
      if (byVerdict || a.verdict === 'ok') {
        return byVerdict || a.execution - b.execution;
      }
      if (a.verdict === 'leak') {
        const ca = codeOf(executions[a.execution]);
        const cb = codeOf(executions[b.execution]);
        return (
          groupBytes.get(cb)! - groupBytes.get(ca)! ||
          (ca === cb ? b.execution - a.execution : 0) ||
          b.leakedBytes - a.leakedBytes
        );
      }
      if (a.verdict === 'fixed') {
        return b.leakedBytes - a.leakedBytes || a.execution - b.execution;
      }
      return b.retainedBytes - a.retainedBytes || a.execution - b.execution;
    })
    .map(v => v.execution);
}
