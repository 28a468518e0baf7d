// A session exported across a kernel restart (issue 10, item 4), built from
// the real H200 recording eval_without_no_grad by the export code itself:
// kernel 1 runs the notebook, the kernel restarts, kernel 2 runs cells again.
import * as fs from 'fs';
import * as path from 'path';
import {
  findLeaks,
  holderKey,
  IExportCell,
  ISession,
  kernelPositions,
  loadSession,
  reportCells,
  retentionByExecution,
  sessionExecutions,
  sessionFolderFiles
} from '..';
import { readBytes, RECORDINGS, TEST_DATA } from './data';

const NAME = 'eval_without_no_grad--python';
const EXPORT = path.join(TEST_DATA, 'exports', 'eval_without_no_grad--restart');
const MiB = 2 ** 20;

function recorded(): ISession {
  return loadSession(fs.readFileSync(path.join(RECORDINGS, NAME, 'manifest.json'), 'utf-8'), f =>
    readBytes(path.join(RECORDINGS, NAME, f))
  );
}

/** Export `runs` ([recorded cell position, kernel session]) as the panel's command does, and read the folder back. */
function exportAcrossRestart(runs: [number, number | undefined][]): { files: Map<string, Uint8Array>; session: ISession } {
  const rec = recorded();
  const cells: IExportCell[] = runs.map(([k, kernelSession]) => ({
    index: rec.manifest.cells[k].index,
    executionCount: rec.manifest.cells[k].execution_count,
    source: rec.manifest.cells[k].source,
    cellId: `cell-${rec.manifest.cells[k].index}`,
    error: null,
    snapshot: rec.snapshots[k],
    oomSnapshots: [],
    devices: [],
    ...(kernelSession === undefined ? {} : { kernelSession })
  }));
  const files = sessionFolderFiles(cells);
  const session = loadSession(new TextDecoder().decode(files.get('manifest.json')), f => files.get(f)!);
  return { files, session };
}

const KERNEL_1: [number, number][] = [0, 1, 2, 3, 4, 5].map(k => [k, 0]);

describe('an export made across a kernel restart', () => {
  // Kernel 1 ran the whole notebook; after the restart, kernel 2 ran its first two cells.
  const { session } = exportAcrossRestart([...KERNEL_1, [0, 1], [1, 1]]);
  const manifest = session.manifest;

  it('records each cell\u2019s kernel session, and the first cell after the restart starts from an empty device', () => {
    expect(manifest.cells.map(c => c.kernel_session)).toEqual([0, 0, 0, 0, 0, 0, 1, 1]);
    const before = manifest.cells.map(c => c.before!.allocated);
    expect(before[6]).toBe(0);
    // not the previous kernel's last figure
    expect(manifest.cells[5].after!.allocated).toBeGreaterThan(500 * MiB);
    expect(before[7]).toBe(manifest.cells[6].after!.allocated);
  });

  it('is the folder committed in test-data/exports (made by test-data/make_restart_session.js)', () => {
    const committed = JSON.parse(fs.readFileSync(path.join(EXPORT, 'manifest.json'), 'utf-8'));
    // The committed folder carries the recording's device figures too; the cells and their allocations must agree.
    const strip = (c: { [k: string]: unknown }) => ({
      ...c,
      cell_id: null,
      before: (c.before as { allocated: number }).allocated,
      after: (c.after as { allocated: number }).allocated
    });
    expect(committed.cells.map(strip)).toEqual(manifest.cells.map(c => strip(c as unknown as { [k: string]: unknown })));
  });

  it('reports the cells of kernel 2 against an empty device', () => {
    const reports = reportCells(session);
    expect(reports.map(r => r.afterRestart)).toEqual([false, false, false, false, false, false, true, false]);
    expect(reports.map(r => r.kernel)).toEqual([0, 0, 0, 0, 0, 0, 1, 1]);
    // kernel 2's first cell made the model again: +128 MiB, nothing "freed" by it
    expect(reports[6].netBytes).toBe(manifest.cells[6].after!.allocated);
    expect(reports[6].freedBytes).toBe(0);
    expect(reports.map(r => r.netBytes)).toEqual(manifest.cells.map(c => c.after!.allocated - c.before!.allocated));
  });

  it('never credits a cell with memory the restart took away', () => {
    const retention = retentionByExecution(session.snapshots, kernelPositions(manifest.cells.map(c => c.kernel_session)));
    for (const r of retention.slice(0, 6)) {
      expect([...r.freedBy.keys()].every(k => k < 6)).toBe(true);
      expect(r.endedByRestart).toBe(true);
      expect(r.lastOfKernel).toBe(5);
    }
    // kernel 2's cells own what they made, though its blocks look exactly like kernel 1's
    expect(retention[6].leftBytes).toBe(manifest.cells[6].after!.allocated);
    expect(retention[6].kernel).toBe(1);
    expect(retention[7].endedByRestart).toBe(false);
    // kernel 1's last snapshot is what kernel 1 kept
    const alive1 = retention.slice(0, 6).reduce((n, r) => n + r.aliveBytes, 0);
    expect(alive1).toBe(manifest.cells[5].after!.allocated);
  });

  it('still finds kernel 1\u2019s leak, ended by the restart and not by a cell', () => {
    const report = findLeaks(session.snapshots, sessionExecutions(manifest));
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 4]);
    expect(report.topLeak).toBe(4);
    const top = report.executions[4];
    expect(top.kernel).toBe(0);
    expect(top.endedByRestart).toBe(true);
    expect(top.causes).toEqual(['graph']);
    // nothing in kernel 1 says a kernel 2 cell freed it
    for (const v of report.executions) {
      expect(v.reasons.join(' ')).not.toMatch(/in kernel 2/);
    }
    expect(report.executions.slice(6).map(v => v.verdict)).toEqual(['retained', 'retained']);
    expect(report.executions[6].retainedBytes).toBe(manifest.cells[6].after!.allocated);
  });

  it('names executions by their kernel when a session spans several', () => {
    expect(sessionExecutions(manifest).map(e => e.label)).toEqual([
      'cell 0 [1] in kernel 1',
      'cell 1 [2] in kernel 1',
      'cell 2 [3] in kernel 1',
      'cell 3 [4] in kernel 1',
      'cell 4 [5] in kernel 1',
      'cell 5 [6] in kernel 1',
      'cell 0 [1] in kernel 2',
      'cell 1 [2] in kernel 2'
    ]);
  });

  it('applies the kernel\u2019s holders only to the blocks of the kernel that answered', () => {
    // Kernel 2 names a variable for every block of its last snapshot; kernel 1's blocks sit at the same addresses.
    const last = session.snapshots[session.snapshots.length - 1];
    const holders = new Map(last.blocks.map(b => [holderKey(b.device, b.address), [{ kind: 'variable' as const, path: 'x' }]]));
    const report = findLeaks(session.snapshots, sessionExecutions(manifest), { holders });
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 4]);
    expect(report.executions[0].holders).not.toContain('x');
    expect(report.executions[6].holders).toContain('x');
  });
});

describe('a leaking cell run again after a restart', () => {
  // Kernel 2 runs cells 0, 1 and the leaking cell 2 again.
  const { session } = exportAcrossRestart([...KERNEL_1, [0, 1], [1, 1], [2, 1]]);

  it('is judged on its own kernel: a leak again, and the one to look at first', () => {
    const report = findLeaks(session.snapshots, sessionExecutions(session.manifest));
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 4, 8]);
    expect(report.topLeak).toBe(8);
    const again = report.executions[8];
    expect(again.causes).toEqual(['graph']);
    expect(again.endedByRestart).toBe(false);
    // the same bytes as its first run in kernel 1: kernel 1's graph is not set against it
    expect(again.leakedBytes).toBe(report.executions[2].leakedBytes);
    expect(again.reasons.join(' ')).not.toMatch(/grew|ran again/);
  });
});

describe('a session folder without kernel sessions', () => {
  it('reads as one kernel, as before the field existed', () => {
    const { session } = exportAcrossRestart(KERNEL_1.map(([k]) => [k, undefined]));
    expect(session.manifest.cells.every(c => c.kernel_session === undefined)).toBe(true);
    expect(reportCells(session).every(r => r.kernel === 0 && !r.afterRestart)).toBe(true);
    expect(sessionExecutions(session.manifest).map(e => e.label)[0]).toBe('cell 0 [1]');
    const report = findLeaks(session.snapshots, sessionExecutions(session.manifest));
    expect(report.executions.every(v => v.kernel === 0 && !v.endedByRestart)).toBe(true);
    expect(report.topLeak).toBe(4);
  });

  it('gives each execution a kernel position from ids that may be missing', () => {
    expect(kernelPositions([])).toEqual([]);
    expect(kernelPositions([undefined, undefined])).toEqual([0, 0]);
    expect(kernelPositions([3, 3, 4, undefined, 4, 7])).toEqual([0, 0, 1, 1, 1, 2]);
    expect(kernelPositions([undefined, 2, 2])).toEqual([0, 0, 0]);
  });
});
