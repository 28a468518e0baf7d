/**
 * `cuda-memdiff leaks`: the leak finder's ranking as JSON for tools and as a
 * table plus the first leak's story for people.
 */
import {
  adviceText,
  allocationSite,
  bytesFreedByFixes,
  findingText,
  formatBytes,
  holderText,
  IExecutionVerdict,
  IFrameFilterOptions,
  INoStacks,
  ISession,
  ISessionCell,
  kernelSessionsOf,
  LeakReport,
  leftOutShares,
  RECORD_STACKS_TEXT,
  sessionCellName,
  stacklessBytes,
  visibleStack,
  shownOf
} from '../engine';
import {
  blocksText,
  CELL_COLUMNS,
  cellColumns,
  countText,
  frameJson,
  leftOutJson,
  moreSitesText,
  sessionCells,
  siteJson,
  siteLabel
} from './report';
import { executionLabels } from './runNames';
import { printable, renderTable } from './table';

/**
 * `leaks --json`: cells in execution order, `ranking` and `top_leak` as
 * manifest cell indices. `execution` is a cell's position in the session
 * (a cell run again, as after a restart, has one index and several
 * positions); `findings` are the engine's, executions in them by position.
 */
export function leaksJson(report: LeakReport, session: ISession, options: IFrameFilterOptions) {
  const cells = session.manifest.cells;
  const names = sessionCells(session.sourceCells);
  const kernelSessions = kernelSessionsOf(session.manifest);
  const labels = executionLabels(session.manifest);
  return {
    cells: report.executions.map(v => ({
      index: cells[v.execution].index,
      snapshot_file: cells[v.execution].snapshot_file,
      execution: v.execution,
      execution_count: v.executionCount,
      // Only on a labelled cell (a capture point's `step 4`), as in `session --json`.
      ...(cells[v.execution].label === undefined ? {} : { label: cells[v.execution].label }),
      kernel_session: kernelSessions[v.execution],
      ended_by_restart: v.endedByRestart,
      verdict: v.verdict,
      confidence: v.confidence,
      left_bytes: v.leftBytes,
      retained_bytes: v.retainedBytes,
      freed_later: v.freedLater.map(f => ({
        index: cells[f.execution].index,
        execution: f.execution,
        execution_count: cells[f.execution].execution_count,
        bytes: f.bytes
      })),
      leaked_bytes: v.leakedBytes,
      fixed_by: v.fixedBy === null ? null : { index: cells[v.fixedBy].index, execution: v.fixedBy },
      causes: v.causes,
      findings: v.findings.map(snakeCase),
      // The findings and fixes in English, for people reading the JSON.
      reasons: v.findings.map(f => findingText(f, k => labels[k])),
      holders: v.holders.map(holderText),
      fixes: v.fixes.map(snakeCase),
      advice: v.fixes.map(adviceText),
      parts: v.parts,
      ...leftOutJson(session, v.execution, v.evidence),
      evidence: v.evidence.map(e => ({
        site: siteJson(session.frames, allocationSite(session.frames, e.stack, options)),
        bytes: e.bytes,
        blocks: e.blocks,
        stack: visibleStack(session.frames, e.stack, options).map(entry => frameJson(session.frames, entry, names))
      }))
    })),
    ranking: report.ranking.map(k => cells[k].index),
    top_leak: report.topLeak === null ? null : cells[report.topLeak].index,
    // Only where some snapshot recorded no stacks: sessions with stacks keep the shape tools already read.
    ...(report.noStacks
      ? { no_stacks: { bytes: report.noStacks.bytes, cells: report.noStacks.executions.map(k => cells[k].index) } }
      : {})
  };
}

/** A finding with the CLI's JSON key style: `grewBytes` -> `grew_bytes`. */
function snakeCase(finding: object): { [key: string]: unknown } {
  return Object.fromEntries(
    Object.entries(finding).map(([k, v]) => [k.replace(/[A-Z]/g, c => `_${c.toLowerCase()}`), v])
  );
}

/** The last execution of a verdict's kernel: the one after which the kernel restarted. */
function lastOfKernel(report: LeakReport, v: IExecutionVerdict): number {
  let last = v.execution;
  while (last + 1 < report.executions.length && report.executions[last + 1].kernel === v.kernel) {
    last++;
  }
  return last;
}

/** How a person names a cell of the session: `Cell [6]`. */
function cellName(session: ISession, k: number): string {
  return nameOf(session.manifest.cells[k]);
}

/** A label is the job's text: a newline in it must not start a line of the report. */
function nameOf(cell: ISessionCell): string {
  return printable(sessionCellName(cell.index, cell.execution_count, cell.label));
}

/** The cells left out just before a verdict's cell, named: `Cell [2]`, `Cell [2] and Cell [3]`. */
function leftOutNames(session: ISession, v: IExecutionVerdict): string {
  return (session.leftOutBefore[v.execution] ?? []).map(p => nameOf(session.sourceCells[p])).join(' and ');
}

/**
 * Where the story starts. Where cells were left out just before the top leak,
 * its row counts their change too: the one whose code made most of the leak
 * (its stacks say) is where to look; else the top leak's cell, with that said.
 */
function lookFirst(session: ISession, top: IExecutionVerdict, where: string): string {
  const name = cellName(session, top.execution);
  const leftOut = leftOutNames(session, top);
  if (!leftOut) {
    return `Look at ${name} first (${where}${top.confidence} confidence):`;
  }
  const made = leftOutShares(session, top.execution, top.evidence).sort((a, b) => b.bytes - a.bytes)[0];
  if (made.bytes * 2 > top.leakedBytes) {
    const cell = nameOf(session.sourceCells[made.position]);
    return (
      `Look at ${cell} first (${where}its snapshot could not be read, so ${name}'s row ` +
      'counts what it did; ' +
      `${formatBytes(made.bytes)} of the leak was made while it ran):`
    );
  }
  return (
    `Look at ${name} first (${where}${top.confidence} confidence; its row includes what ${leftOut} did, ` +
    'whose snapshot could not be read):'
  );
}

/** Evidence merged by the allocation site a person sees (several stacks can end at one line). */
function evidenceBySite(v: IExecutionVerdict, session: ISession, options: IFrameFilterOptions) {
  const bySite = new Map<number, { site: number; bytes: number; blocks: number }>();
  for (const e of v.evidence) {
    const site = allocationSite(session.frames, e.stack, options);
    const entry = bySite.get(site) ?? { site, bytes: 0, blocks: 0 };
    entry.bytes += e.bytes;
    entry.blocks += e.blocks;
    bySite.set(site, entry);
  }
  return [...bySite.values()].sort((a, b) => b.bytes - a.bytes);
}

/** Most evidence sites the story lists; the rest are summed on one line. */
const EVIDENCE_SITES_SHOWN = 3;

/**
 * `leaks` for people: one row per cell in ranking order, then why the first
 * leak is one. Every figure on a row is part of `left` (what the cell left
 * alive when it ended): `retained` is what is still alive, `leaked` what the
 * evidence covers, and what is neither was freed later, which the row says.
 */
export function leaksText(report: LeakReport, session: ISession, options: IFrameFilterOptions): string {
  const cells = session.manifest.cells;
  // The manifest's kernel numbers: a kernel none of whose cells could be read keeps its place.
  const kernelOf = kernelSessionsOf(session.manifest);
  const kernels = kernelOf.length ? kernelOf[kernelOf.length - 1] : 1;
  // The engine's findings worded here, with the labels the engine was given.
  const labels = executionLabels(session.manifest).map(printable);
  const reasons = (v: IExecutionVerdict) => v.findings.map(f => findingText(f, k => labels[k]));
  // What became of the memory a cell left: freed by later cells, or ended by a restart.
  const fate = (v: IExecutionVerdict) => {
    const notes: string[] = [];
    if (v.verdict !== 'ok' && v.verdict !== 'fixed' && v.freedLater.length) {
      const freed = v.freedLater.reduce((n, f) => n + f.bytes, 0);
      notes.push(
        `${formatBytes(freed)} freed later by ${v.freedLater.map(f => cellName(session, f.execution)).join(', ')}`
      );
    }
    if (v.endedByRestart) {
      notes.push(`until the kernel restarted after ${cellName(session, lastOfKernel(report, v))}`);
    }
    const leftOut = leftOutNames(session, v);
    if (leftOut) {
      notes.push(`includes what ${leftOut} did: its snapshot could not be read`);
    }
    return notes.length ? ` (${notes.join('; ')})` : '';
  };
  const table = renderTable(
    [
      ...CELL_COLUMNS,
      ...(kernels > 1 ? [{ header: 'kernel', right: true }] : []),
      { header: 'verdict' },
      { header: 'left', right: true },
      { header: 'retained', right: true },
      { header: 'leaked', right: true },
      { header: 'why', wrap: true }
    ],
    report.ranking.map(k => {
      const v = report.executions[k];
      // A retained cell's reasons split its retained bytes by what made them: show them all.
      // A fixed leak: what it was and which cell fixed it.
      const fixed = v.findings.findIndex(f => f.code === 'fixed');
      const why =
        v.verdict === 'retained' || v.verdict === 'unknown'
          ? reasons(v).join('; ')
          : v.verdict === 'fixed'
            ? `${reasons(v)[0]}; ${reasons(v)[fixed]}`
            : (reasons(v)[0] ?? '');
      return [
        ...cellColumns(cells[k]),
        ...(kernels > 1 ? [String(kernelOf[v.execution])] : []),
        v.verdict,
        formatBytes(v.leftBytes),
        formatBytes(v.retainedBytes),
        v.verdict === 'leak' || v.verdict === 'fixed' ? formatBytes(v.leakedBytes) : '',
        why + fate(v)
      ];
    })
  );
  const noStacks = report.noStacks ? ['', ...noStacksText(report, report.noStacks, session)] : [];
  if (report.topLeak === null) {
    return [table, '', ...(noStacks.length ? noStacks.slice(1) : ['No cell leaks.'])].join('\n');
  }
  const top = report.executions[report.topLeak];
  const where = kernels > 1 ? `kernel ${kernelOf[top.execution]} of ${kernels}, ` : '';
  const lines = [table, '', lookFirst(session, top, where)];
  // The leaked blocks are the top cell's own: of copies of its code, the frame names it.
  const cellNames = sessionCells(session.sourceCells);
  const run = String(session.manifest.cells[top.execution].index);
  reasons(top).forEach(r => lines.push(`  - ${r}`));
  if (top.endedByRestart) {
    lines.push(`  ended by: the kernel restart after ${cellName(session, lastOfKernel(report, top))}, not by a cell`);
  }
  if (top.holders.length) {
    lines.push(`  held by: ${top.holders.map(holderText).join(', ')}`);
  }
  const freed = bytesFreedByFixes(top);
  top.fixes.forEach((a, i) =>
    lines.push(`  fix${freed ? freesText(freed[i], top.leakedBytes) : ''}: ${adviceText(a)}`)
  );
  const sites = evidenceBySite(top, session, options);
  const blocks = sites.reduce((n, e) => n + e.blocks, 0);
  lines.push(`  leaked: ${formatBytes(top.leakedBytes)} in ${blocksText(blocks)}, allocated at:`);
  const shown = shownOf(sites, EVIDENCE_SITES_SHOWN);
  for (const e of shown) {
    lines.push(
      `    ${formatBytes(e.bytes)} in ${blocksText(e.blocks)} from ${siteLabel(session.frames, e.site, cellNames, run)}`
    );
  }
  const rest = sites.slice(shown.length);
  if (rest.length) {
    const bytes = rest.reduce((n, e) => n + e.bytes, 0);
    const count = rest.reduce((n, e) => n + e.blocks, 0);
    lines.push(`    ${formatBytes(bytes)} in ${blocksText(count)} from ${moreSitesText(rest.length)}`);
  }
  return [...lines, ...noStacks].join('\n');
}

/** How much of a leak one fix frees, where the fixes free different parts: ` (frees 256 MiB of the 288 MiB)`. */
function freesText(bytes: number, leaked: number): string {
  if (!bytes) {
    return '';
  }
  return bytes < leaked
    ? ` (frees ${formatBytes(bytes)} of the ${formatBytes(leaked)})`
    : ` (frees all ${formatBytes(leaked)})`;
}

/**
 * Why the finder can say little about memory no stack explains, the cell to
 * start with, and how to get stacks: without them "no cell leaks" would be
 * a claim the finder cannot make.
 */
function noStacksText(report: LeakReport, noStacks: INoStacks, session: ISession): string[] {
  const lines = [
    'No allocation stacks were recorded (allocation history was off, or the snapshots kept none): for ' +
      `${formatBytes(noStacks.bytes)} in ${countText(noStacks.executions.length, 'cell')} the finder cannot say what made it or on which line, ` +
      "nor tell a leak from state meant to stay; only growth on a re-run (or the kernel's holders) shows a leak."
  ];
  // With a leak found, that is where to start; otherwise the cell that keeps the most of the unknown.
  const unknown = report.ranking.find(k => report.executions[k].verdict === 'unknown');
  if (report.topLeak === null && unknown !== undefined) {
    const v = report.executions[unknown];
    lines.push(
      `Start with ${cellName(session, unknown)}, which keeps the most of it: ${formatBytes(stacklessBytes(v))} (${v.confidence} confidence).`
    );
  }
  lines.push(`To see causes and lines: ${RECORD_STACKS_TEXT}, and run the cells again.`);
  return lines;
}
