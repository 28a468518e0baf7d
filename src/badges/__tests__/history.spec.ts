// The tooltip's words from the allocation history, on the helper's real
// messages replaying H200 recordings (dump_replay.py), through the store.
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import { SnapshotStore } from '../../capture/store';
import { CellCodeNames, oomReport } from '../../engine';
import { replayedStore } from '../../capture/__tests__/replay';
import { manifestOf, TEST_DATA } from '../../engine/__tests__/data';
import { fragmentedOom, twoDeviceOom } from '../../engine/__tests__/oomCases';
import { oomLines, peakLine } from '../history';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

/** A store filled as the session fills it, and the recording's cells by the ids the replay gives them (`cell-2`). */
function replayed(name: string, under = 'recordings', kernels = 1): { store: SnapshotStore; cells: CellCodeNames } {
  const store = replayedStore(name, under, kernels);
  const folder = path.join(TEST_DATA, under, name);
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8'));
  const cells = new CellCodeNames(
    manifest.cells.map((c: any) => ({ id: `cell-${c.index}`, source: c.source, executionCount: c.execution_count }))
  );
  return { store, cells };
}

describe('badge tooltip from the history', () => {
  it('says why a cell ran out of memory: the request, the free memory and who held the device', () => {
    const { store, cells } = replayed('oom--python');
    const cell = store.records.filter(r => r.reason === 'cell')[1];
    expect(oomLines(store.oomOf(cell)!, cells, trans)).toEqual([
      "It asked for 60.0 GiB on cuda:0, with 39.3 GiB free on the device and 0 B free in PyTorch's segments (largest free block 0 B).",
      'Not fragmentation: the request is 20.7 GiB more than all the free memory together, and torch.cuda.empty_cache() cannot help (PyTorch empties its cache before it gives up). Free what filled the device, or ask for less (a smaller batch, shorter sequences).',
      'The device held: 100 GiB from Cell [1], line 3.'
    ]);
    expect(store.oomOf(store.records[0])).toBeNull();
  });

  it('names the largest sites at the peak of a cell', () => {
    const { store, cells } = replayed('eval_without_no_grad--python');
    const records = store.records.filter(r => r.reason === 'cell');
    const lines = records.map(r => {
      const peak = store.peakOf(r);
      return peak ? peakLine(peak, store.frames, cells, trans) : null;
    });
    // each cell's peak, replayed from the recorded history, is the kernel's recorded peak
    // (within 1 KiB: cell 3's replay comes to 1,016 bytes less than torch's counter)
    records.forEach(r => expect(Math.abs(store.peakOf(r)!.bytes - r.peakBytes)).toBeLessThanOrEqual(1024));
    expect(lines[0]).toMatch(/^At peak \(128 MiB\): 128 MiB from Cell \[1\], line 3\.$/);
  });

  it('names the peak of the first cell run after a restart, as it did before the restart', () => {
    // The demo replayed in two kernels: the new kernel's first cell starts from an empty device, as the first
    // kernel's did; every run says the same in both.
    const { store, cells } = replayed('gpu_memory_demo--holders', 'live', 2);
    const runs = store.cellRuns;
    const lines = runs.map(r => {
      const peak = store.peakOf(r);
      return peak ? peakLine(peak, store.frames, cells, trans) : null;
    });
    const half = runs.length / 2;
    expect(runs[half].kernelSession).toBe(runs[0].kernelSession + 1);
    expect(lines[0]).toMatch(/^At peak \(128 MiB\): 128 MiB from Cell \[1\], line 4\.$/);
    expect(lines.slice(half)).toEqual(lines.slice(0, half));
  });

  it('names every copy of a cell whose code allocated at the peak where nothing says which ran it', () => {
    // history--python: cells [2] and [3] hold the same code; cell [4]'s peak is its 512 MiB temporary
    const { store, cells } = replayed('history--python', 'live');
    const record = store.records.filter(r => r.reason === 'cell')[3];
    expect(peakLine(store.peakOf(record)!, store.frames, cells, trans)).toBe(
      'At peak (808 MiB): 512 MiB from Cell [4], line 2; 256 MiB from Cell [2], line 2 or Cell [3], line 2; ' +
        '32.0 MiB from Cell [2], line 4 or Cell [3], line 4; 8.00 MiB elsewhere (2 more sites).'
    );
  });

  it("names the run that allocated a copy's memory at the peak, from the records", () => {
    // [3] freed [2]'s buffers and allocated its own before [4] ran: the 256 + 32 MiB are [3]'s.
    const { store, cells } = replayed('history--python', 'live');
    const record = store.records.filter(r => r.reason === 'cell')[3];
    expect(peakLine(store.peakOf(record)!, store.frames, cells, trans, store.runsAtPeak(record))).toBe(
      'At peak (808 MiB): 512 MiB from Cell [4], line 2; 256 MiB from Cell [3], line 2; ' +
        '32.0 MiB from Cell [3], line 4; 8.00 MiB elsewhere (2 more sites).'
    );
    // The same from eval_without_no_grad: [5] rebuilt the 288 MiB [3] had made, with the same code.
    const again = replayed('eval_without_no_grad--python');
    const last = again.store.records.filter(r => r.reason === 'cell')[5];
    expect(
      peakLine(again.store.peakOf(last)!, again.store.frames, again.cells, trans, again.store.runsAtPeak(last))
    ).toMatch(
      /^At peak \(541 MiB\): 288 MiB from Cell \[5\], line 3; 128 MiB from Cell \[1\], line 3; 60\.0 MiB from Cell \[6\], line 2; 65\.0 MiB elsewhere \(2 more sites\)\.$/
    );
  });

  it('says what the sites it names leave out of the peak, so they add up to it', () => {
    // The demo's Cell [4]: was "At peak (541 MiB): 321 MiB ...; 128 MiB ...; 60.0 MiB ...." (509 MiB); then its
    // fourth site read "32.0 MiB elsewhere (1 more site)", where the panel names it in as little room.
    const { store, cells } = replayed('gpu_memory_demo--python');
    const record = store.records.filter(r => r.reason === 'cell')[3];
    expect(peakLine(store.peakOf(record)!, store.frames, cells, trans, store.runsAtPeak(record))).toBe(
      'At peak (541 MiB): 321 MiB from Cell [3], line 3; 128 MiB from Cell [1], line 4; 60.0 MiB from Cell [4], line 2; ' +
        '32.0 MiB from Cell [2], line 1.'
    );
  });

  it('names a function one cell defines when another cell calls it', () => {
    // exception_kept: cell [1] defines train_step, cell [2] calls it (x at line 6, h and its graph at line 7)
    const { store, cells } = replayed('exception_kept--holders', 'live');
    const record = store.records.filter(r => r.reason === 'cell')[1];
    expect(peakLine(store.peakOf(record)!, store.frames, cells, trans)).toBe(
      'At peak (353 MiB): 161 MiB from train_step (Cell [1], line 7); 128 MiB from train_step (Cell [1], line 6); ' +
        '64.0 MiB from Cell [1], line 4.'
    );
  });
});

describe('badge tooltip of the OOMs the adversarial run found misread', () => {
  function cellsOf(name: string): CellCodeNames {
    return new CellCodeNames(
      manifestOf(name).cells.map(c => ({ id: String(c.index), source: c.source, executionCount: c.execution_count }))
    );
  }

  // cells 2 [3] and 3 [4] run the same code: the frame cannot tell which
  it("names the newest OOM of two devices and that device's holders only", () => {
    const { start, atOom } = twoDeviceOom();
    expect(oomLines(oomReport(start, atOom)!, cellsOf('multi_gpu_split--python'), trans)).toEqual([
      "It asked for 10.0 GiB on cuda:0, with 5.00 GiB free on the device and 17.0 MiB free in PyTorch's segments (largest free block 16.0 MiB).",
      "Not fragmentation: the request is 4.98 GiB more than all the free memory together, more than this process's tensors held (113 MiB). Other processes, or memory outside PyTorch's allocator, filled the device.",
      'The device held: 64.0 MiB from Cell [1], line 3; 33.0 MiB from Cell [3], line 2 or Cell [4], line 2; 16.0 MiB from Cell [2], line 1.'
    ]);
  });

  it('says expandable segments are already on instead of suggesting them', () => {
    const cells = cellsOf('eval_without_no_grad--python');
    const on = fragmentedOom(true);
    expect(oomLines(oomReport(on.start, on.atOom)!, cells, trans)[1]).toBe(
      'Fragmentation: the free space in segments would fit the request, but no free block is big enough. ' +
        'Expandable segments are already on, so that setting will not help.'
    );
    const off = fragmentedOom(false);
    expect(oomLines(oomReport(off.start, off.atOom)!, cells, trans)[1]).toContain(
      'Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA starts.'
    );
  });
});
