// Sessions exported across a kernel restart (issue 10, item 4), built by the
// export code itself from real H200 recordings: kernel 1 runs a notebook, the
// kernel restarts, kernel 2 runs cells again. The demo was recorded in two
// processes (two real kernels); eval_without_no_grad's second kernel replays
// the first's snapshots, so its blocks look identical to kernel 1's.
import * as fs from 'fs';
import * as path from 'path';
import {
  findLeaks,
  holderKey,
  IExportCell,
  ISession,
  kernelPositions,
  kernelSessionsOf,
  kernelsInOrder,
  loadSession,
  parseManifest,
  reportCells,
  retentionByExecution,
  sessionExecutions,
  sessionFolderFiles
} from '..';
import { leaksText } from '../../cli/leaks';
import { executionLabels } from '../../cli/runNames';
import { readBytes, TEST_DATA, wording } from './data';

const MiB = 2 ** 20;

/** Cells one kernel ran: a recorded folder under test-data/ and the manifest positions of the cells. */
interface IKernelRun {
  folder: string;
  cells: number[];
  /** The kernel session the store gives it; undefined: an export from before the field existed. */
  kernelSession?: number;
}

function recorded(folder: string): ISession {
  const dir = path.join(TEST_DATA, folder);
  return loadSession(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'), f => readBytes(path.join(dir, f)));
}

/** Export the kernels' cells as the panel's command does (sessionFolderFiles), and read the folder back. */
function exportAcross(kernels: IKernelRun[]): ISession {
  const files = exportFiles(kernels);
  return loadSession(new TextDecoder().decode(files.get('manifest.json')), f => files.get(f)!);
}

/** The files of such an export, by name. */
function exportFiles(kernels: IKernelRun[]): Map<string, Uint8Array> {
  const cells: IExportCell[] = kernels.flatMap(kernel => {
    const rec = recorded(kernel.folder);
    return kernel.cells.map(k => ({
      index: rec.manifest.cells[k].index,
      executionCount: rec.manifest.cells[k].execution_count,
      source: rec.manifest.cells[k].source,
      cellId: `cell-${rec.manifest.cells[k].index}`,
      error: null,
      snapshot: rec.snapshots[k],
      oomSnapshots: [],
      devices: [],
      ...(kernel.kernelSession === undefined ? {} : { kernelSession: kernel.kernelSession })
    }));
  });
  return sessionFolderFiles(cells);
}

/**
 * The cells and allocations of a committed export, to compare with one built here. The committed folders
 * are older exports (the store's 0, then 1, as `kernel_session`): kernels are compared in order.
 */
function cellFigures(cells: readonly { [key: string]: unknown }[]) {
  const kernels = kernelsInOrder(cells.map(c => c.kernel_session as number | undefined));
  return cells.map((c, k) => ({
    ...c,
    kernel_session: kernels[k],
    cell_id: null,
    before: (c.before as { allocated: number }).allocated,
    after: (c.after as { allocated: number }).allocated
  }));
}

const DEMO = 'recordings/gpu_memory_demo--python';
// The same notebook recorded in another process (pid 669, not 503): a second, real kernel.
const DEMO_AGAIN = 'live/gpu_memory_demo--holders';
const EVAL = 'recordings/eval_without_no_grad--python';

describe('the demo exported across a restart: two real kernels', () => {
  // Kernel 1 ran the demo; after the restart, kernel 2 (another process) ran its first two cells. The
  // store's own numbers (1, then 4: it counts every kernel change and restart) are not what the export writes.
  const session = exportAcross([
    { folder: DEMO, cells: [0, 1, 2, 3], kernelSession: 1 },
    { folder: DEMO_AGAIN, cells: [0, 1], kernelSession: 4 }
  ]);
  const manifest = session.manifest;

  it('is the folder committed in test-data/exports (made by test-data/make_restart_session.js)', () => {
    const committed = JSON.parse(
      fs.readFileSync(path.join(TEST_DATA, 'exports', 'gpu_memory_demo--restart', 'manifest.json'), 'utf-8')
    );
    expect(cellFigures(committed.cells)).toEqual(
      cellFigures(manifest.cells as unknown as { [key: string]: unknown }[])
    );
  });

  it('keeps kernel 2 its number where none of kernel 1\u2019s cells can be read', () => {
    const files = exportFiles([
      { folder: DEMO, cells: [0, 1, 2, 3], kernelSession: 1 },
      { folder: DEMO_AGAIN, cells: [0, 1], kernelSession: 4 }
    ]);
    const text = new TextDecoder().decode(files.get('manifest.json'));
    const lost = new Set(manifest.cells.slice(0, 4).map(c => c.snapshot_file));
    const broken = loadSession(text, f => (lost.has(f) ? new Uint8Array([1, 2, 3]) : files.get(f)!));
    expect(broken.unreadable.map(u => u.file)).toEqual([...lost]);
    // Numbered again over the two cells kept, they read as kernel 1 before.
    expect(reportCells(broken).map(r => r.kernelSession)).toEqual([2, 2]);
    expect(sessionExecutions(broken.manifest).map(e => e.kernelSession)).toEqual([2, 2]);
    expect(kernelPositions(kernelSessionsOf(broken.manifest))).toEqual([0, 0]);
    // The CLI's words name the same kernel as its JSON.
    expect(executionLabels(broken.manifest)).toEqual(['Cell [1] in kernel 2', 'Cell [2] in kernel 2']);
    const report = findLeaks(broken.snapshots, sessionExecutions(broken.manifest));
    const table = leaksText(report, broken, {}).split('\n');
    expect(table[0]).toMatch(/\bkernel\b/);
    expect(table.filter(line => /^\s*\[\d\]/.test(line)).map(line => line.split(/\s+/)[3])).toEqual(['2', '2']);
  });

  it('numbers each cell\u2019s kernel 1, 2 as the views do; the first cell after the restart starts from an empty device', () => {
    expect(manifest.cells.map(c => c.kernel_session)).toEqual([1, 1, 1, 1, 2, 2]);
    expect(manifest.cells[3].after!.allocated).toBeGreaterThan(500 * MiB);
    // not the previous kernel's last figure
    expect(manifest.cells[4].before!.allocated).toBe(0);
    expect(manifest.cells[5].before!.allocated).toBe(manifest.cells[4].after!.allocated);
  });

  it('reports kernel 2 against an empty device', () => {
    const reports = reportCells(session);
    expect(reports.map(r => r.afterRestart)).toEqual([false, false, false, false, true, false]);
    expect(reports[4]).toMatchObject({
      kernel: 1,
      kernelSession: 2,
      netBytes: 134258688,
      bornBytes: 134258688,
      freedBytes: 0
    });
    expect(reports.map(r => r.netBytes)).toEqual(manifest.cells.map(c => c.after!.allocated - c.before!.allocated));
  });

  it('still finds kernel 1\u2019s leak, ended by the restart and not by a cell', () => {
    // Before: "No cell leaks", every kernel 1 cell "all freed later (by cell 0 [1])".
    const report = findLeaks(session.snapshots, sessionExecutions(manifest));
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2]);
    expect(report.topLeak).toBe(2);
    const top = report.executions[2];
    expect(top).toMatchObject({
      kernel: 0,
      endedByRestart: true,
      causes: ['graph'],
      leakedBytes: 301989888,
      freedLater: []
    });
    for (const v of report.executions.slice(0, 4)) {
      expect(v.freedLater.every(f => f.execution < 4)).toBe(true);
    }
    expect(report.executions.slice(4).map(v => [v.verdict, v.kernel, v.endedByRestart])).toEqual([
      ['retained', 1, false],
      ['retained', 1, false]
    ]);
  });
});

describe('the demo run again after a restart, with the holders its kernel named', () => {
  // Kernel 2 ran the whole demo again; its kernel answered who holds the blocks after its last cell.
  const again = recorded(DEMO_AGAIN);
  const session = exportAcross([
    { folder: DEMO, cells: [0, 1, 2, 3], kernelSession: 0 },
    { folder: DEMO_AGAIN, cells: [0, 1, 2, 3], kernelSession: 1 }
  ]);

  it('finds the leak in both kernels, looks at the latest first, and confirms only kernel 2\u2019s with the holders', () => {
    const report = findLeaks(session.snapshots, sessionExecutions(session.manifest), { holders: again.holders[3]! });
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 6]);
    expect(report.topLeak).toBe(6);
    expect(report.executions[6].confidence).toBe('high');
    expect(wording(report.executions[6])).toMatch(/confirmed by the kernel/);
    // kernel 1's verdict stays the guess from its snapshots: kernel 2's answer says nothing about it
    expect(wording(report.executions[2])).not.toMatch(/kernel found|confirmed/);
    expect(report.executions[2].endedByRestart).toBe(true);
    // each run is judged alone: neither grew on the other
    expect(report.executions[6].causes).toEqual(['graph']);
    expect(report.executions[6].leakedBytes).toBe(report.executions[2].leakedBytes);
  });
});

const EVAL_KERNEL_1: IKernelRun = { folder: EVAL, cells: [0, 1, 2, 3, 4, 5], kernelSession: 0 };

describe('eval_without_no_grad exported across a restart, kernel 2\u2019s blocks identical to kernel 1\u2019s', () => {
  // Kernel 1 ran the whole notebook; after the restart, kernel 2 ran its first two cells (replayed from the
  // same recording: the same addresses and stacks, the hardest case for telling kernels apart).
  const session = exportAcross([EVAL_KERNEL_1, { folder: EVAL, cells: [0, 1], kernelSession: 1 }]);
  const manifest = session.manifest;

  it('records each cell\u2019s kernel session, and the first cell after the restart starts from an empty device', () => {
    expect(manifest.cells.map(c => c.kernel_session)).toEqual([1, 1, 1, 1, 1, 1, 2, 2]);
    const before = manifest.cells.map(c => c.before!.allocated);
    expect(before[6]).toBe(0);
    // not the previous kernel's last figure
    expect(manifest.cells[5].after!.allocated).toBeGreaterThan(500 * MiB);
    expect(before[7]).toBe(manifest.cells[6].after!.allocated);
  });

  it('is the folder committed in test-data/exports (made by test-data/make_restart_session.js)', () => {
    const committed = JSON.parse(
      fs.readFileSync(path.join(TEST_DATA, 'exports', 'eval_without_no_grad--restart', 'manifest.json'), 'utf-8')
    );
    expect(cellFigures(committed.cells)).toEqual(
      cellFigures(manifest.cells as unknown as { [key: string]: unknown }[])
    );
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
    const retention = retentionByExecution(
      session.snapshots,
      kernelPositions(manifest.cells.map(c => c.kernel_session))
    );
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
      expect(wording(v, executionLabels(manifest))).not.toMatch(/in kernel 2/);
    }
    expect(report.executions.slice(6).map(v => v.verdict)).toEqual(['retained', 'retained']);
    expect(report.executions[6].retainedBytes).toBe(manifest.cells[6].after!.allocated);
  });

  it('names executions by their kernel when a session spans several', () => {
    expect(executionLabels(manifest)).toEqual([
      'Cell [1] in kernel 1',
      'Cell [2] in kernel 1',
      'Cell [3] in kernel 1',
      'Cell [4] in kernel 1',
      'Cell [5] in kernel 1',
      'Cell [6] in kernel 1',
      'Cell [1] in kernel 2',
      'Cell [2] in kernel 2'
    ]);
  });

  it('applies the kernel\u2019s holders only to the blocks of the kernel that answered', () => {
    // Kernel 2 names a variable for every block of its last snapshot; kernel 1's blocks sit at the same addresses.
    const last = session.snapshots[session.snapshots.length - 1];
    const holders = new Map(
      last.blocks.map(b => [holderKey(b.device, b.address), [{ kind: 'variable' as const, path: 'x' }]])
    );
    const report = findLeaks(session.snapshots, sessionExecutions(manifest), { holders });
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 4]);
    expect(report.executions[0].holders.map(h => h.path)).not.toContain('x');
    expect(report.executions[6].holders.map(h => h.path)).toContain('x');
  });
});

describe('a leaking cell run again after a restart', () => {
  // Kernel 2 runs cells 0, 1 and the leaking cell 2 again.
  const session = exportAcross([EVAL_KERNEL_1, { folder: EVAL, cells: [0, 1, 2], kernelSession: 1 }]);

  it('is judged on its own kernel: a leak again, and the one to look at first', () => {
    const report = findLeaks(session.snapshots, sessionExecutions(session.manifest));
    expect(report.executions.filter(v => v.verdict === 'leak').map(v => v.execution)).toEqual([2, 4, 8]);
    expect(report.topLeak).toBe(8);
    const again = report.executions[8];
    expect(again.causes).toEqual(['graph']);
    expect(again.endedByRestart).toBe(false);
    // the same bytes as its first run in kernel 1: kernel 1's graph is not set against it
    expect(again.leakedBytes).toBe(report.executions[2].leakedBytes);
    expect(wording(again)).not.toMatch(/grew|ran again/);
  });
});

describe('a session folder without kernel sessions', () => {
  it('reads as one kernel, as before the field existed', () => {
    const session = exportAcross([{ folder: EVAL, cells: [0, 1, 2, 3, 4, 5] }]);
    expect(session.manifest.cells.every(c => c.kernel_session === undefined)).toBe(true);
    expect(reportCells(session).every(r => r.kernel === 0 && !r.afterRestart)).toBe(true);
    expect(executionLabels(session.manifest)[0]).toBe('Cell [1]');
    const report = findLeaks(session.snapshots, sessionExecutions(session.manifest));
    expect(report.executions.every(v => v.kernel === 0 && !v.endedByRestart)).toBe(true);
    expect(report.topLeak).toBe(4);
  });

  it('numbers the kernels 1, 2... in order, fills in missing ones the way kernelPositions reads them, and refuses one that is not an integer', () => {
    const manifest = (ids: unknown[]) =>
      parseManifest(
        JSON.stringify({ cells: ids.map((id, i) => ({ snapshot_file: `cell${i}.pickle.gz`, kernel_session: id })) })
      );
    const ids = [undefined, 2, 2, undefined, 5];
    // An older export wrote the frontend's own numbers (here 2, then 5): read as kernels 1 and 2.
    expect(kernelSessionsOf(manifest(ids))).toEqual([1, 1, 1, 1, 2]);
    expect(kernelPositions(kernelSessionsOf(manifest(ids)))).toEqual(kernelPositions(ids as (number | undefined)[]));
    expect(kernelSessionsOf(manifest([undefined, undefined]))).toEqual([1, 1]);
    expect(() => manifest([0, 'one'])).toThrow(/cells\[1\] kernel_session must be an integer/);
  });

  it('keeps a cell label as text, drops an empty one, and refuses one that is not text', () => {
    const labelled = (label: unknown) =>
      parseManifest(JSON.stringify({ cells: [{ snapshot_file: 'point0000.pickle.gz', label }] })).cells[0];
    expect(labelled('step 1').label).toBe('step 1');
    expect(labelled(null)).not.toHaveProperty('label');
    expect(labelled('')).not.toHaveProperty('label');
    expect(() => labelled(4)).toThrow('manifest.json cells[0] label must be text');
  });

  it('gives each execution a kernel position from ids that may be missing', () => {
    expect(kernelPositions([])).toEqual([]);
    expect(kernelPositions([undefined, undefined])).toEqual([0, 0]);
    expect(kernelPositions([3, 3, 4, undefined, 4, 7])).toEqual([0, 0, 1, 1, 1, 2]);
    expect(kernelPositions([undefined, 2, 2])).toEqual([0, 0, 0]);
  });
});

describe('a manifest whose cells are not in execution order', () => {
  const manifest = (cells: { execution_count: number | null; kernel_session?: number }[]) =>
    JSON.stringify({ cells: cells.map((c, i) => ({ index: i, snapshot_file: `cell${i}.pickle.gz`, ...c })) });

  it('is refused: each change counts from the cell before, so a reversed list reads frees as allocations', () => {
    // Before: eval_without_no_grad's cells listed 6, 5, 4, ... read "No cell leaks.".
    expect(() => parseManifest(manifest([{ execution_count: 6 }, { execution_count: 5 }]))).toThrow(
      'manifest.json: cells are not in execution order: cells[0] (Cell [6]) comes before cells[1] (Cell [5]) in one kernel session'
    );
    const counts = [1, null, 3, null, 2].map(execution_count => ({ execution_count }));
    expect(() => parseManifest(manifest(counts))).toThrow('cells[2] (Cell [3]) comes before cells[4] (Cell [2])');
  });

  it('starts counting again at a restart, and lets a cell keep the count of the one before', () => {
    const restart = [
      { execution_count: 5, kernel_session: 0 },
      { execution_count: 1, kernel_session: 1 }
    ];
    expect(parseManifest(manifest(restart)).cells).toHaveLength(2);
    expect(parseManifest(manifest([{ execution_count: 3 }, { execution_count: 3 }])).cells).toHaveLength(2);
    // Counts go back within the kernel the second cell inherits.
    const inherited = [{ execution_count: 5, kernel_session: 1 }, { execution_count: 1 }];
    expect(() => parseManifest(manifest(inherited))).toThrow('cells[0] (Cell [5]) comes before cells[1] (Cell [1])');
  });
});
