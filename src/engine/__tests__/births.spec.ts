// Which run allocated a block, on real H200 sessions where identical code ran twice: the frame's file name is
// the same for both runs, the snapshots are not.
import * as path from 'path';
import {
  BlockBirths,
  cellSites,
  findLeaks,
  ICellSite,
  kernelPositions,
  kernelSessionsOf,
  reportCells,
  retentionByExecution,
  sessionCellNames,
  sessionExecutions
} from '..';
import { LIVE, sessionOf, TEST_DATA } from './data';

const MiB = 2 ** 20;

/** A site as `[manifest index of the allocating cell (null: none, or copies unknown), line, bytes]`. */
function siteOf(s: ICellSite): [number | null, number | null, number] {
  return [s.cell && !s.sameSource ? Number(s.cell.id) : null, s.line, s.bytes];
}

describe('BlockBirths', () => {
  // eval_without_no_grad: cells 2 [3] and 4 [5] run `preds.append(model(b))` outside no_grad. [3] leaves its
  // 288 MiB of graphs and 33 MiB of cuBLAS workspace; [5] frees [3]'s graphs and builds its own 288 MiB.
  const session = sessionOf('eval_without_no_grad--python');
  const births = new BlockBirths(retentionByExecution(session.snapshots));

  it('tells the two runs of one code name apart, by the snapshot each block was born in', () => {
    const last = session.snapshots[5];
    const bytesBy = new Map<number | null, number>();
    for (const b of last.blocks.filter(b => b.state === 'active_allocated')) {
      const run = births.runOf(b, 5);
      bytesBy.set(run, (bytesBy.get(run) ?? 0) + b.size);
    }
    expect(bytesBy.get(4)).toBe(288 * MiB);
    expect(bytesBy.get(2)).toBe(33 * MiB);
    expect(bytesBy.get(null)).toBeUndefined();
    // Before [5] ran, the same addresses held [3]'s graph: alive in snapshot 3, those blocks are [3]'s.
    const before = session.snapshots[3].blocks.filter(b => b.state === 'active_allocated');
    expect(before.filter(b => births.runOf(b, 3) === 2).reduce((n, b) => n + b.size, 0)).toBe(321 * MiB);
  });

  it("credits each block alive at a cell's peak to the run that allocated it, as the leak finder does", () => {
    // Was: "Cell [6] peak 541 MiB: 321 MiB from Cell [3], line 3, ...": [5]'s 288 MiB credited to [3], the
    // first cell with that code, while the leak finder and [5]'s own row say [5] made them.
    const reports = reportCells(session);
    expect(reports[5].peakSites!.map(siteOf)).toEqual([
      [4, 3, 288 * MiB],
      [0, 3, 134258688],
      [5, 2, 60 * MiB],
      [2, 3, 33 * MiB],
      [1, 1, 32 * MiB]
    ]);
    const leaks = findLeaks(session.snapshots, sessionExecutions(session.manifest));
    expect(leaks.topLeak).toBe(4);
    expect(leaks.executions[4].leakedBytes).toBe(288 * MiB);
  });

  it("splits a diff's site of copied code by the run that allocated its blocks", () => {
    // [5] frees [3]'s graph and builds its own at the same line of the same code.
    const sites = reportCells(session)[4].sites;
    expect(sites.map(s => [s.run, s.bornBytes, s.freedBytes])).toEqual([
      ['4', 288 * MiB, 0],
      ['2', 0, 288 * MiB]
    ]);
  });

  it('names every copy, never one by guess, where the run is unknown', () => {
    const names = sessionCellNames(session.sourceCells);
    const peak = reportCells(session)[5].peak!;
    const sites = cellSites(peak.alive, session.frames, names, {}, () => null).filter(
      s => s.line === 3 && s.sameSource
    );
    expect(sites.map(s => [s.sameSource!.map(c => c.id), s.bytes])).toEqual([[['2', '4'], 321 * MiB]]);
  });

  it("names the run that allocated a peak's blocks where copies of a cell ran before it (history--python)", () => {
    // Cells [2] and [3] share their code; [3] freed [2]'s buffers and allocated its own; [4] peaks over them.
    const live = sessionOf('history--python', LIVE);
    const [peak, oom] = [reportCells(live)[3].peakSites!, reportCells(live)[4].oomSites!];
    expect(peak.map(siteOf).slice(0, 3)).toEqual([
      [3, 2, 512 * MiB],
      [2, 2, 256 * MiB],
      [2, 4, 32 * MiB]
    ]);
    expect(oom.map(siteOf)).toEqual([
      [2, 2, 256 * MiB],
      [2, 4, 32 * MiB],
      [3, 3, 4 * MiB]
    ]);
  });

  it('never credits a block to a run of another kernel, however alike the two look', () => {
    // eval_without_no_grad, a restart, then its first two cells again: the same code names in both kernels.
    const restarted = sessionOf('eval_without_no_grad--restart', path.join(TEST_DATA, 'exports'));
    const kernels = kernelPositions(kernelSessionsOf(restarted.manifest));
    const across = new BlockBirths(retentionByExecution(restarted.snapshots, kernels));
    restarted.snapshots.forEach((s, k) => {
      for (const b of s.blocks.filter(b => b.state === 'active_allocated')) {
        const run = across.runOf(b, k);
        expect(run === null ? kernels[k] : kernels[run]).toBe(kernels[k]);
      }
    });
  });
});
