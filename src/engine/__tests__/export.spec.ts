// Snapshots written back as pickles and session folders: read again by the
// engine, by Python's pickle and by PyTorch's own torch.cuda._memory_viz.
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  FrameTable,
  IExportCell,
  loadSession,
  pickle,
  readSnapshot,
  reportCells,
  sessionFolderFiles,
  snapshotToPickle,
  unpickle
} from '..';
import { manifestOf, readBytes, recordingNames, RECORDINGS } from './data';

const ROOT = path.resolve(__dirname, '../../..');
const VENV_PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const PYTHON = process.env.PYTHON ?? (fs.existsSync(VENV_PYTHON) ? VENV_PYTHON : 'python3');

describe('pickle', () => {
  it("round-trips plain data through the engine's own unpickler", () => {
    const value = {
      a: [1, -2, 2 ** 31, -(2 ** 40), 1.5, null, true, false],
      'ü ✓': 'x'.repeat(300),
      nested: { k: ['s', 's', 's'] }
    };
    expect(unpickle(pickle(value))).toEqual(value);
  });

  it('writes what Python reads', () => {
    const value = { big: 2 ** 47 + 3, neg: -129, text: 'naïve', list: Array.from({ length: 2500 }, (_, i) => i) };
    const out = execFileSync(
      PYTHON,
      ['-c', 'import pickle,sys,json; print(json.dumps(pickle.loads(sys.stdin.buffer.read()), sort_keys=True))'],
      {
        input: Buffer.from(pickle(value)),
        encoding: 'utf-8'
      }
    );
    expect(JSON.parse(out)).toEqual(value);
  });
});

describe('snapshotToPickle', () => {
  it.each(recordingNames().filter(n => !n.startsWith('many_blocks')))('keeps every block and total of %s', name => {
    const m = manifestOf(name);
    for (const cell of m.cells) {
      const original = readSnapshot(readBytes(path.join(RECORDINGS, name, cell.snapshot_file)), new FrameTable());
      const again = readSnapshot(snapshotToPickle(original), original.frames);
      expect(again.totals).toEqual(original.totals);
      expect(again.blocks.filter(b => b.state !== 'inactive')).toEqual(
        original.blocks.filter(b => b.state !== 'inactive')
      );
      expect(again.traces.map(t => [t.action, t.address, t.size, t.stack])).toEqual(
        original.traces.map(t => [t.action, t.address, t.size, t.stack])
      );
    }
  });

  it("opens in PyTorch's torch.cuda._memory_viz", () => {
    const probe = spawnSync(PYTHON, ['-c', 'import torch.cuda._memory_viz'], { encoding: 'utf-8' });
    if (probe.status !== 0) {
      throw new Error(`torch is needed for this test (${PYTHON}): ${probe.stderr}`);
    }
    const recorded = path.join(RECORDINGS, 'eval_without_no_grad--python', 'cell02.pickle.gz');
    const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-')), 'snap.pickle.gz');
    fs.writeFileSync(tmp, snapshotToPickle(readSnapshot(readBytes(recorded))));
    const segsum = (file: string) =>
      execFileSync(
        PYTHON,
        [
          '-W',
          'ignore',
          '-c',
          'import gzip,pickle,sys; from torch.cuda import _memory_viz as v; print(v.segsum(pickle.load(gzip.open(sys.argv[1]))))',
          file
        ],
        { encoding: 'utf-8' }
      );
    // PyTorch's segment summary of our pickle is the one of the pickle the H200 wrote.
    const ours = segsum(tmp);
    expect(ours).toMatch(/^Summary of segments/);
    expect(ours).toBe(segsum(recorded));
  });
});

/** A recording's cells as the panel exports them (no allocator statistics), with `extra` per cell. */
function recordedCells(name: string, extra: (k: number) => Partial<IExportCell> = () => ({})) {
  const m = manifestOf(name);
  const session = loadSession(fs.readFileSync(path.join(RECORDINGS, name, 'manifest.json'), 'utf-8'), f =>
    readBytes(path.join(RECORDINGS, name, f))
  );
  const cells = m.cells.map((c, k) => ({
    index: c.index,
    executionCount: c.execution_count,
    source: c.source,
    cellId: `cell-${k}`,
    error: c.error ?? null,
    snapshot: session.snapshots[k],
    oomSnapshots: (c.oom_snapshots ?? []).map(f =>
      readSnapshot(readBytes(path.join(RECORDINGS, name, f)), session.frames)
    ),
    devices: [],
    ...extra(k)
  }));
  return { m, session, cells };
}

describe('sessionFolderFiles', () => {
  it('writes a session folder the CLI and the engine read back with the same figures', () => {
    const { m, session, cells } = recordedCells('oom--python');
    const files = sessionFolderFiles(cells, { scenario: 'oom' });
    expect([...files.keys()].sort()).toEqual([
      'cell00.pickle.gz',
      'cell01.pickle.gz',
      'cell02.pickle.gz',
      'manifest.json',
      'oom00.pickle.gz'
    ]);
    const again = loadSession(new TextDecoder().decode(files.get('manifest.json')), f => files.get(f)!);
    expect(reportCells(again).map(r => [r.netBytes, r.allocatedBytes, r.oom])).toEqual(
      reportCells(session).map(r => [r.netBytes, r.allocatedBytes, r.oom])
    );
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-export-'));
    files.forEach((bytes, f) => fs.writeFileSync(path.join(dir, f), bytes));
    const cli = execFileSync(process.execPath, [path.join(ROOT, 'bin', 'cuda-memdiff.js'), 'session', dir, '--json'], {
      encoding: 'utf-8'
    });
    expect(JSON.parse(cli).cells.map((c: { net_bytes: number }) => c.net_bytes)).toEqual(
      m.cells.map(c => c.after!.allocated - c.before!.allocated)
    );
  });
});

describe('an export of a session whose peak counters were not reset per cell', () => {
  it('says which peaks are only the high-water mark, and gives the replayed one where history has it', () => {
    // As the store holds a passive session: cell 4 stayed under the mark cell 2 set (481 MiB).
    const m = manifestOf('eval_without_no_grad--python');
    const mark = m.cells[2].after!.max_allocated!;
    const exported = recordedCells('eval_without_no_grad--python', k => ({
      peak: k === 4 ? { bytes: mark, exact: false } : { bytes: m.cells[k].after!.max_allocated!, exact: true }
    }));
    const files = sessionFolderFiles(exported.cells);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-export-'));
    files.forEach((bytes, f) => fs.writeFileSync(path.join(dir, f), bytes));
    const run = (...args: string[]) =>
      execFileSync(process.execPath, [path.join(ROOT, 'bin', 'cuda-memdiff.js'), 'session', dir, ...args], {
        encoding: 'utf-8'
      });
    const cells = JSON.parse(run('--json')).cells;
    expect(cells[4].peak.exact).toBe(false);
    expect(cells[4].peak.bytes).toBe(mark);
    expect('exact' in cells[2].peak).toBe(false);
    const text = run();
    expect(text).toMatch(/^ +\[5\] +cell04\.pickle\.gz .* ≤481 MiB /m);
    expect(text).toMatch(
      /Cell \[5\] peak 4\d\d MiB \(torch's peak counter, not reset for the cell, says at most 481 MiB\)/
    );
  });
});
