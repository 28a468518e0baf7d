/**
 * An autograd graph: forward-pass blocks left alive by an execution that
 * ran with grad mode on and ran no backward pass, which would have freed
 * them. Cleared when another cell frees them (a forward in one cell, the
 * backward in the next); a re-run of the same code freeing them only
 * replaces one graph with the next.
 */
import { runsBackward } from '../source';
import { codeOf, Context, total } from './context';
import { Finding, namesFor } from './finding';
import { detachAdvice } from './growth';

export function findGraph(f: Finding, findings: readonly Finding[], context: Context): void {
  const r = f.retention;
  const forward = r.left.filter(b => context.origin(b.stack) === 'forward' && context.canLeak(b, r));
  if (!forward.length || context.gradOffGlobally[f.k]) {
    return;
  }
  const stacks = new Set(r.left.map(b => b.stack));
  const sources = new Set([...stacks].flatMap(s => context.cellFrames(s)).map(c => c.source));
  if (f.execution.source) {
    sources.add(f.execution.source);
  }
  if ([...sources].some(s => s !== null && runsBackward(s))) {
    return;
  }
  const graph = forward.filter(b => context.gradOnAt(b.stack));
  if (!graph.length || !context.cellFrames(graph[0].stack).length) {
    return;
  }
  // Freed mostly by other code: a graph a later cell consumed, not one that lingers.
  let freedElsewhere = 0;
  for (const [k, freed] of r.freedBy) {
    if (codeOf(findings[k].execution) !== codeOf(f.execution)) {
      freedElsewhere += freed;
    }
  }
  if (freedElsewhere > r.leftBytes - freedElsewhere) {
    return;
  }
  const names = namesFor(graph, f, context);
  const source = f.execution.source ?? '';
  const lines = new Set([...new Set(graph.map(b => b.stack))].map(s => context.outerLine(s)));
  const detach = [...lines].flatMap(line => (line === null ? [] : detachAdvice(source, line)));
  if (
    f.leak(
      'graph',
      graph,
      { code: 'graph', bytes: total(graph), names },
      detach.length ? detach : [{ code: 'no-grad' }],
      context
    )
  ) {
    names.forEach(n => f.hold({ kind: 'graph', path: n }));
  }
}
