/**
 * `cuda-memdiff leaks`: the leak finder's ranking as JSON for tools and as a
 * table plus the first leak's story for people.
 */
import {
  allocationSite,
  CellCodeNames,
  formatBytes,
  IExecutionVerdict,
  IFrameFilterOptions,
  ISession,
  kernelSessionsOf,
  LeakReport,
  visibleStack
} from '../engine';
import { frameJson, siteJson, siteLabel } from './report';
import { renderTable } from './table';

/** `leaks --json`: cells in execution order, `ranking` and `top_leak` as manifest cell indices. */
export function leaksJson(report: LeakReport, session: ISession, options: IFrameFilterOptions) {
  const cells = session.manifest.cells;
  const names = new CellCodeNames(cells.map(c => ({ id: String(c.index), source: c.source, executionCount: c.execution_count })));
  const kernelSessions = kernelSessionsOf(session.manifest);
  return {
    cells: report.executions.map(v => ({
      index: cells[v.execution].index,
      execution_count: v.executionCount,
      kernel_session: kernelSessions[v.execution],
      ended_by_restart: v.endedByRestart,
      verdict: v.verdict,
      confidence: v.confidence,
      retained_bytes: v.retainedBytes,
      left_bytes: v.leftBytes,
      leaked_bytes: v.leakedBytes,
      causes: v.causes,
      reasons: v.reasons,
      holders: v.holders,
      advice: v.advice,
      evidence: v.evidence.map(e => ({
        site: siteJson(session.frames, allocationSite(session.frames, e.stack, options)),
        bytes: e.bytes,
        blocks: e.blocks,
        stack: visibleStack(session.frames, e.stack, options).map(entry => frameJson(session.frames, entry, names))
      }))
    })),
    ranking: report.ranking.map(k => cells[k].index),
    top_leak: report.topLeak === null ? null : cells[report.topLeak].index
  };
}

/** The last execution of a verdict's kernel: the one after which the kernel restarted. */
function lastOfKernel(report: LeakReport, v: IExecutionVerdict): number {
  let last = v.execution;
  while (last + 1 < report.executions.length && report.executions[last + 1].kernel === v.kernel) {
    last++;
  }
  return last;
}

/** How a person names a cell of the session: `cell 5 [6]`. */
function cellName(session: ISession, k: number): string {
  const cell = session.manifest.cells[k];
  return cell.execution_count === null ? `cell ${cell.index}` : `cell ${cell.index} [${cell.execution_count}]`;
}

/** `leaks` for people: one row per cell in ranking order, then why the first leak is one. */
export function leaksText(report: LeakReport, session: ISession, options: IFrameFilterOptions): string {
  const cells = session.manifest.cells;
  const kernels = report.executions.length ? report.executions[report.executions.length - 1].kernel + 1 : 1;
  const restartWhy = (v: IExecutionVerdict) =>
    v.endedByRestart ? ` (until the kernel restarted after ${cellName(session, lastOfKernel(report, v))})` : '';
  const table = renderTable(
    [
      { header: 'cell', right: true },
      { header: 'exec', right: true },
      ...(kernels > 1 ? [{ header: 'kernel', right: true }] : []),
      { header: 'verdict' },
      { header: 'retained', right: true },
      { header: 'leaked', right: true },
      { header: 'why' }
    ],
    report.ranking.map(k => {
      const v = report.executions[k];
      return [
        String(cells[k].index),
        v.executionCount === null ? '' : `[${v.executionCount}]`,
        ...(kernels > 1 ? [String(v.kernel + 1)] : []),
        v.verdict,
        formatBytes(v.retainedBytes),
        v.verdict === 'leak' ? formatBytes(v.leakedBytes) : '',
        (v.reasons[0] ?? '') + restartWhy(v)
      ];
    })
  );
  if (report.topLeak === null) {
    return `${table}\n\nNo cell leaks.`;
  }
  const top = report.executions[report.topLeak];
  const where = kernels > 1 ? `kernel ${top.kernel + 1} of ${kernels}, ` : '';
  const lines = [table, '', `Look at cell ${cells[report.topLeak].index} first (${where}${top.confidence} confidence):`];
  top.reasons.forEach(r => lines.push(`  - ${r}`));
  if (top.endedByRestart) {
    lines.push(`  ended by: the kernel restart after ${cellName(session, lastOfKernel(report, top))}, not by a cell`);
  }
  if (top.holders.length) {
    lines.push(`  held by: ${top.holders.join(', ')}`);
  }
  top.advice.forEach(a => lines.push(`  fix: ${a}`));
  for (const e of top.evidence.slice(0, 3)) {
    lines.push(`  ${formatBytes(e.bytes)} in ${e.blocks} block(s) from ${siteLabel(session.frames, allocationSite(session.frames, e.stack, options))}`);
  }
  return lines.join('\n');
}
