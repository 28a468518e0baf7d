/**
 * Growth on re-run: after each re-execution of the same code, the bytes
 * that code's executions hold are compared with what they held after the
 * previous one. More means each run adds memory nothing releases.
 */
import { LeakAdvice } from '../findings';
import { Block } from '../model';
import { aliveBytesAt } from '../retention';
import { containersOf, recurrentNames, storedNames } from '../source';
import { Context } from './context';
import { Finding } from './finding';

export function findGrowth(findings: readonly Finding[], context: Context): void {
  const byCode = new Map<string, Finding[]>();
  for (const f of findings) {
    const list = byCode.get(f.runKey);
    if (list) {
      list.push(f);
    } else {
      byCode.set(f.runKey, [f]);
    }
  }
  for (const runs of byCode.values()) {
    const held = (upTo: number) =>
      runs.filter(f => f.k <= runs[upTo].k).reduce((n, f) => n + aliveBytesAt(f.retention, runs[upTo].k), 0);
    for (let i = 1; i < runs.length; i++) {
      const growth = held(i) - held(i - 1);
      // A re-run that only moved blocks (gradients reallocated) adds nothing.
      const added = runs[i].retention.left.filter(b => context.canLeak(b, runs[i].retention));
      if (growth <= 0 || !added.length) {
        continue;
      }
      // The evidence is what each run left at the stacks that grew, not all it left:
      // a training step that appends its loss leaks the loss, not its gradients.
      const grown = grownStacks(runs, i, context);
      const atGrown = (f: Finding, fallback: readonly Block[]) => {
        const blocks = f.retention.left.filter(b => grown.has(b.stack));
        return blocks.length ? blocks : fallback;
      };
      const evidence = atGrown(runs[i], added);
      const advice = growthAdvice(evidence, runs[i], context);
      if (
        !runs[i].leak(
          'growth',
          evidence,
          { code: 'growth', bytes: growth, from: runs[i - 1].k, to: runs[i].k },
          advice,
          context
        )
      ) {
        continue;
      }
      runs[i].confidence = 'high';
      for (const earlier of runs.slice(0, i)) {
        if (!earlier.causes.has('growth')) {
          const blocks = atGrown(
            earlier,
            earlier.retention.left.filter(b => context.canLeak(b, earlier.retention))
          );
          const finding = { code: 'same-code-grew', bytes: 0, later: runs[i].k, grewBytes: growth } as const;
          const kept = blocks.filter(b => context.canLeak(b, earlier.retention));
          if (
            earlier.leak('growth', kept, { ...finding, bytes: kept.reduce((n, b) => n + b.size, 0) }, advice, context)
          ) {
            earlier.confidence = 'high';
          }
        }
      }
    }
  }
}

/**
 * Stacks whose bytes, over the runs of one code up to `runs[i]`, are higher
 * after `runs[i]` than after the run before it (gradients excepted).
 */
function grownStacks(runs: readonly Finding[], i: number, context: Context): Set<number> {
  const heldByStack = (upTo: number) => {
    const at = runs[upTo].k;
    const bytes = new Map<number, number>();
    for (const f of runs.slice(0, upTo + 1)) {
      f.retention.left.forEach((b, j) => {
        const freed = f.retention.freedAt[j];
        if ((freed === null || freed > at) && context.originOf(b, f.retention) !== 'gradient') {
          bytes.set(b.stack, (bytes.get(b.stack) ?? 0) + b.size);
        }
      });
    }
    return bytes;
  };
  const now = heldByStack(i);
  const then = heldByStack(i - 1);
  return new Set([...now].filter(([stack, bytes]) => bytes > (then.get(stack) ?? 0)).map(([stack]) => stack));
}

function growthAdvice(added: readonly Block[], f: Finding, context: Context): LeakAdvice[] {
  const source = f.execution.source ?? '';
  const advice: LeakAdvice[] = [];
  const lines = new Set(
    [...new Set(added.map(b => b.stack))].map(s => context.outerLine(s)).filter((l): l is number => l !== null)
  );
  for (const line of lines) {
    advice.push(...detachAdvice(source, line));
    for (const name of storedNames(source, line)) {
      for (const list of containersOf(source, name)) {
        advice.push({ code: 'append-item', name, list });
        f.hold({ kind: 'variable', path: list });
      }
    }
  }
  if (context.hooks && added.some(b => context.origin(b.stack) === 'forward')) {
    advice.push({ code: 'remove-hook', lists: context.hookTargets });
    context.hookTargets.forEach(t => f.hold({ kind: 'hook', path: t }));
  }
  return advice;
}

/** Detach the names a recurrent line feeds back into itself (`out, h = rnn(x, h)`). */
export function detachAdvice(source: string, line: number): LeakAdvice[] {
  const names = recurrentNames(source, line);
  return names.length ? [{ code: 'detach-hidden', names }] : [];
}
