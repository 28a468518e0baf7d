/** The output cache: blocks made by the cell's displayed last expression, which IPython keeps in `Out[n]`. */
import { displayedLines } from '../source';
import { Context, total } from './context';
import { Finding } from './finding';

export function findOutputCache(f: Finding, context: Context): void {
  const source = f.execution.source;
  const n = f.execution.executionCount;
  const shown = source === null || n === null || f.execution.error ? null : displayedLines(source);
  if (!shown || n === null) {
    return;
  }
  // Only what the expression itself or the library code it called made: a
  // user function's own allocations may well not be in its return value.
  const cached = f.retention.alive.filter(b => {
    const frames = context.cellFrames(b.stack);
    const origin = context.origin(b.stack);
    const line = frames.length === 1 ? frames[0].frame.line : null;
    return (
      (origin === 'direct' || origin === 'forward') &&
      line !== null &&
      line >= shown.first &&
      line <= shown.last &&
      context.canLeak(b, f.retention)
    );
  });
  const name = `Out[${n}]`;
  // Offline only `Out[n]` is sure: whether `_` or `__` still point at it depends on what later cells displayed.
  if (
    f.leak(
      'output-cache',
      cached,
      { code: 'output-cache', bytes: total(cached), executionCount: n, names: [name] },
      [{ code: 'silence-output', executionCount: n, also: [], deletable: [], displays: 0 }],
      context
    )
  ) {
    f.confidence = 'high';
    f.hold({ kind: 'output-cache', path: name, reference: { type: 'output', name, count: n } });
  }
}
