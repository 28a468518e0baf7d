/**
 * @jest-environment node
 */
// Ground truth: every cell of every real H200 recording, against the
// allocator statistics the recorder took in the same process.
import * as fs from 'fs';
import * as path from 'path';
import { diffSnapshots, emptySnapshot, FrameTable, loadSession, murmur2, reportCells } from '..';
import { manifestOf, readBytes, recordedSnapshot, recordingNames, RECORDINGS } from './data';

const names = recordingNames();

describe('real H200 recordings', () => {
  it('are all present', () => {
    expect(names).toEqual(
      expect.arrayContaining([
        'cache_fragmentation--python',
        'clean_training--python',
        'eval_without_no_grad--python',
        'many_blocks--python',
        'multi_gpu_split--python',
        'oom--python',
        'optimizer_first_step--python'
      ])
    );
  });

  describe.each(names)('%s', name => {
    const manifest = manifestOf(name);
    const session = loadSession(fs.readFileSync(path.join(RECORDINGS, name, 'manifest.json'), 'utf-8'), file =>
      readBytes(path.join(RECORDINGS, name, file))
    );

    it.each(manifest.cells.map(c => [c.index, c]))(
      'cell %i: allocated and reserved equal the allocator stats',
      (_index, cell) => {
        const snapshot = session.snapshots[manifest.cells.indexOf(cell)];
        const allocated = snapshot.totals.reduce((n, t) => n + t.allocatedBytes, 0);
        const reserved = snapshot.totals.reduce((n, t) => n + t.reservedBytes, 0);
        expect(allocated).toBe(cell.after!.allocated);
        expect(reserved).toBe(cell.after!.reserved);
        for (const dev of cell.after!.per_device ?? []) {
          const t = snapshot.totals.find(x => x.device === dev.device);
          expect(t?.allocatedBytes ?? 0).toBe(dev.allocated);
          expect(t?.reservedBytes ?? 0).toBe(dev.reserved);
        }
      }
    );

    it('session nets match the allocator stats and the diff adds up', () => {
      const reports = reportCells(session);
      expect(reports).toHaveLength(manifest.cells.length);
      reports.forEach((r, k) => {
        const cell = manifest.cells[k];
        expect(r.netBytes).toBe(cell.after!.allocated - cell.before!.allocated);
        expect(r.bornBytes - r.freedBytes).toBe(r.netBytes);
        expect(r.peakBytes).toBe(cell.after!.max_allocated);
      });
    });

    it('hashes each cell source to the code name ipykernel gave it', () => {
      const names = Object.entries(manifest.code_names_by_execution_count);
      expect(names.length).toBeGreaterThan(0);
      for (const [count, name] of names) {
        const cell = manifest.cells.find(c => String(c.execution_count) === count)!;
        expect(name).toMatch(new RegExp(`/${murmur2(cell.source)}\\.py$`));
      }
    });
  });

  it('records the OOM event in the OOM-time snapshot', () => {
    const snapshot = recordedSnapshot('oom--python', 'oom00.pickle.gz');
    const oom = snapshot.traces.filter(e => e.action === 'oom');
    expect(oom).toHaveLength(1);
    expect(oom[0].address).toBeNull();
    expect(oom[0].deviceFree).toBe(42183294976);
    expect(oom[0].size).toBe(64424509440);
  });

  it('splits a two-GPU session by device', () => {
    const manifest = manifestOf('multi_gpu_split--python');
    const frames = new FrameTable();
    const before = recordedSnapshot('multi_gpu_split--python', 'cell02.pickle.gz', frames);
    const after = recordedSnapshot('multi_gpu_split--python', 'cell03.pickle.gz', frames);
    const diff = diffSnapshots(before, after);
    expect(diff.devices.map(d => d.device)).toEqual([0, 1]);
    const perDevice = manifest.cells[3].after!.per_device!;
    const perBefore = manifest.cells[2].after!.per_device!;
    for (const d of diff.devices) {
      const a = perDevice.find(x => x.device === d.device)!.allocated;
      const b = perBefore.find(x => x.device === d.device)!.allocated;
      expect(d.netBytes).toBe(a - b);
    }
    // "most on cuda:1": the second device grew more.
    expect(diff.devices[1].netBytes).toBeGreaterThan(diff.devices[0].netBytes);
  });

  it('diffs the first cell against an empty device', () => {
    const frames = new FrameTable();
    const first = recordedSnapshot('clean_training--python', 'cell00.pickle.gz', frames);
    const diff = diffSnapshots(emptySnapshot(frames, 1), first);
    expect(diff.freed).toHaveLength(0);
    expect(diff.bornBytes).toBe(manifestOf('clean_training--python').cells[0].after!.allocated);
  });
});
