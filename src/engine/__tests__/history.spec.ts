// Allocation history on a real H200 (test-data/live/history--python, made by
// kernel-helpers/tests/test_live_history.py): a cell that frees and allocates
// again 288 MiB at the same addresses, run twice; a cell whose peak is a
// 512 MiB temporary on its line 2; a 4 TiB request that ran out of memory.
// The trace figures are torch's own, printed by that test.
import * as fs from 'fs';
import * as path from 'path';
import { gunzipSync } from 'fflate';
import {
  cellSites,
  diffSnapshots,
  emptySnapshot,
  encodeFrames,
  encodeSnapshot,
  explainPeak,
  findLeaks,
  FrameTable,
  IWireSnapshot,
  loadSession,
  normalizeSnapshot,
  oomReport,
  parseManifest,
  peakAnatomy,
  rankLeaks,
  readSnapshot,
  retentionByExecution,
  sessionExecutions,
  Snapshot,
  WireDecoder
} from '..';

const DIR = path.resolve(__dirname, '../../../test-data/live/history--python');
const MiB = 2 ** 20;
// torch's trace, per cell: bytes allocated and still alive at its end, bytes alive before it and freed.
const TRACE = [
  [288 * MiB, 0],
  [288 * MiB, 288 * MiB],
  [288 * MiB, 288 * MiB],
  [4 * MiB, 0]
];

function messages(): IWireSnapshot[] {
  const text = new TextDecoder().decode(gunzipSync(fs.readFileSync(path.join(DIR, 'messages.jsonl.gz'))));
  return text
    .trim()
    .split('\n')
    .map(line => JSON.parse(line))
    .filter(m => m.type === 'snapshot');
}

/** The live snapshots, decoded in order as the frontend does. */
function live(): { cells: Snapshot[]; oom: { snapshot: Snapshot; message: IWireSnapshot; start: Snapshot } } {
  const decoder = new WireDecoder(new FrameTable());
  const cells: Snapshot[] = [];
  let oom = null;
  for (const m of messages()) {
    const snapshot = decoder.decode(m);
    if (m.reason === 'oom') {
      oom = { snapshot, message: m, start: cells[cells.length - 1] };
    } else {
      cells.push(snapshot);
    }
  }
  return { cells, oom: oom! };
}

function pickles(): Snapshot[] {
  const frames = new FrameTable();
  return [0, 1, 2, 3, 4].map(k => readSnapshot(fs.readFileSync(path.join(DIR, `cell0${k}.pickle.gz`)), frames));
}

function withoutHistory(s: Snapshot): Snapshot {
  return { ...s, traces: [], history: undefined };
}

describe('re-runs that free and allocate again at the same addresses', () => {
  it('the live diff equals the allocation trace', () => {
    const { cells } = live();
    let previous = emptySnapshot(cells[0].frames);
    cells.slice(0, 4).forEach((snapshot, k) => {
      const diff = diffSnapshots(previous, snapshot);
      expect([diff.bornBytes, diff.freedBytes]).toEqual(TRACE[k]);
      expect(diff.byHistory).toBe(true);
      previous = snapshot;
    });
  });

  it("the snapshot files' diff equals the allocation trace", () => {
    const snaps = pickles();
    for (const k of [1, 2, 3]) {
      const diff = diffSnapshots(snaps[k - 1], snaps[k]);
      expect([diff.bornBytes, diff.freedBytes]).toEqual(TRACE[k]);
    }
  });

  it('block identity alone sees nothing: every block came back at its address', () => {
    const { cells } = live();
    const blind = diffSnapshots(withoutHistory(cells[1]), withoutHistory(cells[2]));
    expect([blind.bornBytes, blind.freedBytes]).toEqual([0, 0]);
  });

  it('the retention pass gives each run its own allocations: each run freed all the one before made', () => {
    const { cells } = live();
    const retention = retentionByExecution(cells.slice(0, 3));
    expect(retention.map(r => [r.leftBytes, r.aliveBytes])).toEqual([
      [288 * MiB, 0],
      [288 * MiB, 0],
      [288 * MiB, 288 * MiB]
    ]);
    // by identity alone (the second run got the same addresses, sizes and stacks) the first run keeps it all
    const blind = retentionByExecution(cells.slice(0, 3).map(withoutHistory));
    expect(blind.map(r => [r.leftBytes, r.aliveBytes])).toEqual([
      [288 * MiB, 0],
      [288 * MiB, 288 * MiB],
      [0, 0]
    ]);
  });
});

describe("the leak finder's worker", () => {
  // The page sends the session's snapshots to the engine worker as typed arrays: what links each capture's
  // history to the one before (a live snapshot's stretch, a file's entry times) must travel with them.
  const executions = sessionExecutions(parseManifest(fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf-8'))).slice(
    0,
    3
  );

  it.each([
    ['live captures', () => live().cells.slice(0, 3)],
    ['snapshot files', () => pickles().slice(0, 3)]
  ])('ranks re-runs from %s as the page does, each run freeing all the one before made', (_, cells) => {
    const snapshots = cells();
    const session = { ...encodeFrames(snapshots[0].frames), snapshots: snapshots.map(encodeSnapshot) };
    const worker = rankLeaks({ key: 7, session, executions }).report;
    expect(worker).toEqual(findLeaks(snapshots, executions));
    expect(worker.executions.map(v => v.freedLater.map(f => f.bytes))).toEqual([[288 * MiB], [288 * MiB], []]);
  });
});

describe('a file whose history is out of the order torch records it in', () => {
  const retimed = (s: Snapshot, time: (t: number | null, k: number) => number | null): Snapshot => ({
    ...s,
    traces: s.traces.map((e, k) => ({ ...e, timeUs: time(e.timeUs, k) }))
  });
  const figures = (before: Snapshot, after: Snapshot) => {
    const diff = diffSnapshots(before, after);
    return [diff.bornBytes, diff.freedBytes, diff.byHistory];
  };

  it('is not placed against the snapshot before: block identity decides, nothing is made up', () => {
    const [, a, b] = pickles();
    const blind = figures(withoutHistory(a), withoutHistory(b));
    expect(blind).toEqual([0, 0, false]);
    const n = b.traces.length;
    // times reversed, shuffled, or going back once; times dropped after a file that had them, or before one
    expect(
      figures(
        a,
        retimed(b, (_, k) => b.traces[n - 1 - k].timeUs)
      )
    ).toEqual(blind);
    expect(
      figures(
        a,
        retimed(b, (t, k) => (k % 7 === 3 ? 0 : t))
      )
    ).toEqual(blind);
    expect(
      figures(
        a,
        retimed(b, () => null)
      )
    ).toEqual(blind);
    expect(
      figures(
        retimed(a, () => null),
        b
      )
    ).toEqual(blind);
  });

  it("finds the entry before's history ended with where this file's time for it is a microsecond off", () => {
    const [, a, b] = pickles();
    const mark = a.traces.length - 1;
    const jittered = retimed(b, (t, k) => (k === mark ? t! + 1 : t));
    const diff = diffSnapshots(a, jittered);
    expect([diff.bornBytes, diff.freedBytes, diff.byHistory]).toEqual([...TRACE[2], true]);
    expect(peakAnatomy(a, jittered)?.complete).toBe(true);
  });

  it('links nothing where no entry has a time: a re-run repeats the entries that would mark where it began', () => {
    const [, a, b] = pickles();
    expect(
      figures(
        retimed(a, () => null),
        retimed(b, () => null)
      )
    ).toEqual([0, 0, false]);
    // the first cell's history needs no mark: all of it is the cell's
    const first = diffSnapshots(
      emptySnapshot(a.frames),
      retimed(a, () => null)
    );
    expect([first.bornBytes, first.byHistory]).toEqual([TRACE[0][0], true]);
  });
});

describe('peak anatomy', () => {
  it("names the freed temporary that made the cell's peak, live and from the files", () => {
    const { cells } = live();
    const message = messages().filter(m => m.reason === 'cell')[3];
    for (const [start, end] of [
      [cells[2], cells[3]],
      [pickles()[2], pickles()[3]]
    ]) {
      const peak = peakAnatomy(start, end)!;
      // the kernel's exact peak (peaks: per-cell), 288 + 4 + 512 + 4 MiB
      expect(peak.bytes).toBe(message.peak!.bytes);
      expect(peak.complete).toBe(true);
      const [top] = cellSites(peak.alive, end.frames);
      expect([top.line, top.bytes]).toEqual([2, 512 * MiB]);
      expect(peak.diff.bornBytes).toBe(512 * MiB + 2 * 4 * MiB);
    }
  });

  it("of a re-run that frees and allocates as much again, names the re-run's own lines", () => {
    const { cells } = live();
    const peak = peakAnatomy(cells[0], cells[1])!;
    expect(peak.bytes).toBe(288 * MiB);
    const sites = cellSites(peak.alive, cells[1].frames);
    const rerun = cellSites(cells[1].blocks, cells[1].frames);
    expect(sites.map(s => [s.filename, s.line, s.bytes])).toEqual(rerun.map(s => [s.filename, s.line, s.bytes]));
    expect(sites.map(s => s.line)).toEqual([2, 4]);
  });

  it('says the peak may have been higher where the history does not account for what is alive at the end', () => {
    const [, , start, end] = pickles();
    expect(peakAnatomy(start, end)!.complete).toBe(true);
    // entries torch did not record, or a device without any: the 512 + 4 + 4 MiB the cell allocated are unaccounted
    const noAllocs = { ...end, traces: end.traces.filter(e => e.action !== 'alloc') };
    expect(peakAnatomy(start, noAllocs)!.complete).toBe(false);
  });

  it('is unknown where no history links the two snapshots', () => {
    const { cells } = live();
    expect(peakAnatomy(withoutHistory(cells[2]), withoutHistory(cells[3]))).toBeNull();
  });

  it("is unknown where the history contradicts the snapshots or torch's own peak", () => {
    const [, a, b] = pickles();
    const anatomy = peakAnatomy(a, b)!;
    expect(anatomy.complete).toBe(true);
    // torch's figure for the cell bounds a replay of requested sizes; below it, with nothing lost, the cell reset
    // torch's counters and the history stands; with entries lost (the buffer wrapped past the mark), it does not
    expect(peakAnatomy(a, b, anatomy.bytes)).toEqual(anatomy);
    expect(peakAnatomy(a, b, anatomy.bytes / 2)).toEqual(anatomy);
    const wrapped = { ...b, traces: b.traces.slice(a.traces.length) };
    expect(peakAnatomy(a, wrapped)?.complete).toBe(false);
    expect(explainPeak(a, wrapped, anatomy.bytes / 2)).toEqual({ anatomy: null, contradiction: 'above-recorded' });
    // the cell's trace also on a device that holds nothing at its end: the replay there keeps what no one holds
    const elsewhere = { ...b, traces: [...b.traces, ...b.traces.map(e => ({ ...e, device: 5 }))] };
    expect(explainPeak(a, elsewhere)).toEqual({ anatomy: null, contradiction: 'not-this-snapshot' });
    // no history is no contradiction
    expect(explainPeak(withoutHistory(a), withoutHistory(b))).toEqual({ anatomy: null, contradiction: null });
  });
});

describe('the OOM post-mortem of a live session', () => {
  it('names the failed request, the free memory and the holders of the device', () => {
    const { oom } = live();
    const report = oomReport(oom.start, oom.snapshot, oom.message.oom)!;
    expect(report.requestBytes).toBe(4 * 2 ** 40);
    expect(report.deviceFreeBytes).toBe(oom.message.oom!.device_free);
    expect(report.fragmentation).toBe(false);
    // buf (line 2 of the re-run cell), xs (its line 4), small (line 3 of the peak cell)
    const holders = cellSites(oom.snapshot.blocks, oom.snapshot.frames);
    expect(holders.map(h => [h.line, h.bytes])).toEqual([
      [2, 256 * MiB],
      [4, 32 * MiB],
      [3, 4 * MiB]
    ]);
  });
});

describe('a session folder with history', () => {
  it('gives each cell its peak anatomy', () => {
    const session = loadSession(
      fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf-8'),
      name => new Uint8Array(fs.readFileSync(path.join(DIR, name)))
    );
    expect(session.snapshots).toHaveLength(5);
    const peak = peakAnatomy(session.snapshots[2], session.snapshots[3])!;
    expect(peak.bytes).toBe(847249408);
  });
});

describe('a history and a snapshot larger than the call stack allows in one spread', () => {
  // _dump_snapshot() of a history recorded without max_entries holds every entry; 120,000 spread into one
  // push() overflowed V8's stack ('Maximum call stack size exceeded' in session, leaks and diff).
  const BLOCKS = 150_000;
  const ENTRIES = 130_000;
  const frames = new FrameTable();
  function snapshot(blocks: number, entries: number): Snapshot {
    const size = 512;
    const raw = {
      segments: [
        {
          device: 0,
          address: 2 ** 32,
          total_size: (blocks + entries) * size,
          stream: 0,
          segment_type: 'large',
          allocated_size: blocks * size,
          active_size: blocks * size,
          requested_size: blocks * size,
          blocks: Array.from({ length: blocks }, (_, k) => ({
            address: 2 ** 32 + k * size,
            size,
            requested_size: size,
            state: 'active_allocated',
            frames: []
          }))
        }
      ],
      // the start's snapshot marker, then a 512-byte temporary at a time
      device_traces: [
        [
          { action: 'snapshot', addr: 0, size: 0, stream: 0, time_us: 0, frames: [] },
          ...Array.from({ length: entries }, (_, k) => ({
            action: k % 2 ? 'free_requested' : 'alloc',
            addr: 2 ** 32 + (blocks + (k >> 1)) * size,
            size,
            stream: 0,
            time_us: k + 1,
            frames: []
          }))
        ]
      ]
    };
    return normalizeSnapshot(raw, frames);
  }

  it('replays 130,000 entries over 150,000 live blocks', () => {
    const start = snapshot(BLOCKS, 0);
    const end = snapshot(BLOCKS, ENTRIES);
    const peak = peakAnatomy(start, end)!;
    expect(peak.alive).toHaveLength(BLOCKS + 1); // the live blocks and one 512-byte temporary at a time
    expect(peak.bytes).toBe((BLOCKS + 1) * 512);
    expect(diffSnapshots(start, end).bornBytes).toBe(0);
  });
});
