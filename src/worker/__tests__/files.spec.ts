// The file timeline and the worker's file operations, on a real H200
// recording with history (clean_training: 3,681 trace entries, a snapshot
// entry after each cell): the line ends at what the snapshot holds, the
// boundaries are the cells', and the diff between two boundaries is the diff
// of the two cells' own recorded pickles.
import * as path from 'path';
import { deserialize, serialize } from 'v8';
import { MessageChannel } from 'worker_threads';
import { gunzipSync } from 'zlib';
import {
  buildTimeline,
  diffSnapshots,
  FrameTable,
  fromTransfer,
  LimitError,
  groupBySite,
  readSnapshot,
  reframe,
  SnapshotError,
  timelineSeries,
  toTransfer,
  totalBytes
} from '../../engine';
import { manifestOf, readBytes, RECORDINGS } from '../../engine/__tests__/data';
import { unreadableReason } from '../../components/unreadable';
import { timelineGeometry } from '../../files/timelineview';
import { closeSnapshotFile, describeMoment, diffMoments, IOpenedFile, openSnapshotFile } from '../files';
import { errorOf, failure } from '../wire';

const DIR = path.join(RECORDINGS, 'clean_training--python');
const file = (name: string) => readBytes(path.join(DIR, name));

describe('the timeline of a snapshot file', () => {
  const snapshot = readSnapshot(file('cell04.pickle.gz'));
  const timeline = buildTimeline(snapshot)!;
  const manifest = manifestOf('clean_training--python');

  it('ends at the allocated total the snapshot holds, and marks each earlier cell', () => {
    expect(timeline.bytes[timeline.bytes.length - 1]).toBe(totalBytes(snapshot, 'allocatedBytes'));
    expect(timeline.bytes[timeline.bytes.length - 1]).toBe((manifest.cells[4] as any).after.allocated);
    expect(timeline.boundaries).toHaveLength(4);
    // Right before each boundary, the total is what the manifest says the cell left allocated.
    timeline.boundaries.forEach((b, k) => {
      expect(b === 0 ? 0 : timeline.bytes[b - 1]).toBe((manifest.cells[k] as any).after.allocated);
    });
    expect(timeline.peakBytes).toBeGreaterThan((manifest.cells[4] as any).after.allocated);
  });

  it('draws the peak at the top of its column and the end at the final total', () => {
    const series = timelineSeries(timeline, 800);
    expect(series.start.length).toBe(800);
    expect(Math.max(...series.high)).toBe(timeline.peakBytes);
    const g = timelineGeometry(series, 800, 200);
    expect(g.y(timeline.peakBytes)).toBeCloseTo(200 - 200 / 1.05, 5);
    expect(g.path.endsWith(`L800.00,${g.y(timeline.bytes[timeline.bytes.length - 1]).toFixed(2)}L800,200Z`)).toBe(true);
    // A click on a boundary picks the moment right before it.
    expect(g.momentAt(g.x(timeline.boundaries[1]) + 2, true)).toBe(timeline.boundaries[1] - 1);
  });

  it("diffs two boundaries as the two cells' recorded pickles diff", () => {
    const { value: opened, buffers } = openSnapshotFile({ id: 1, bytes: file('cell04.pickle.gz'), width: 800 });
    // The blocks' buffer moves to the page; nothing else needs to.
    expect(buffers).toEqual([opened.snapshot.blocks.buffer]);
    expect(opened.traceEntries).toBe(3681);
    const [b0, b1] = opened.timeline!.boundaries;
    const moments = diffMoments({ id: 1, from: b0 - 1, to: b1 - 1 });
    const frames = new FrameTable();
    const cells = diffSnapshots(
      readSnapshot(file('cell00.pickle.gz'), frames),
      readSnapshot(file('cell01.pickle.gz'), frames)
    );
    const top = groupBySite(cells)[0];
    const site = frames.frame(top.frameId);
    expect(moments.netBytes).toBe(cells.netBytes);
    expect(moments.bornBytes).toBe(cells.bornBytes);
    expect(moments.sites[0].site).toEqual({ filename: site.filename, line: site.line, name: site.name });
    expect(moments.sites[0].netBytes).toBe(top.netBytes);
    const hover = describeMoment({ id: 1, moment: 1 })!;
    expect(hover.action).toBe('alloc');
    // Frames go to the page as data: it names a notebook cell's frame as the panel does.
    expect(hover.frames[0]).toEqual({ filename: '/tmp/ipykernel_644/1078466348.py', line: 4, name: '<module>' });
    expect(closeSnapshotFile({ id: 1 })).toBe(true);
    expect(() => diffMoments({ id: 1, from: 0, to: 1 })).toThrow(/not open/);
  });

  it('counts an event the file contradicts itself with once, never below zero nor past what was held', () => {
    // A hostile copy of the trace: every alloc and free_completed twice.
    const doubled = { ...snapshot, traces: snapshot.traces.flatMap(e => (e.action === 'snapshot' ? [e] : [e, e])) };
    const again = buildTimeline(doubled)!;
    expect([again.peakBytes, again.bytes.length, again.boundaries]).toEqual([
      timeline.peakBytes,
      timeline.bytes.length,
      timeline.boundaries
    ]);
    // Frees only, of blocks it never saw allocated: each was alive before the trace began, and is freed once.
    const frees = { ...snapshot, traces: snapshot.traces.filter(e => e.action !== 'alloc') };
    const low = Math.min(...buildTimeline(frees)!.bytes);
    expect(low).toBeGreaterThanOrEqual(0);
  });

  it('has no timeline for a file without allocation events', () => {
    expect(buildTimeline(readSnapshot(file('cell00.pickle.gz')))).not.toBeNull();
    expect(buildTimeline({ ...snapshot, traces: [] })).toBeNull();
  });
});

describe('moving a snapshot between the worker and the page', () => {
  it('keeps stacks through a transfer and into another frame table', () => {
    const frames = new FrameTable();
    const before = readSnapshot(file('cell02.pickle.gz'), frames);
    const after = readSnapshot(file('cell03.pickle.gz'));
    // Structured clone, as postMessage does.
    const crossed = fromTransfer(deserialize(serialize(toTransfer(after))));
    expect(crossed.blocks).toEqual(after.blocks);
    expect(crossed.segments).toEqual(after.segments);
    const moved = reframe(crossed, frames);
    // The trace stays in the worker (the timeline asks it there), so the page's diff is by
    // block identity: compare with the same snapshot read directly, its trace left out too.
    const direct = diffSnapshots(before, { ...readSnapshot(file('cell03.pickle.gz'), frames), traces: [] });
    const viaTransfer = diffSnapshots(before, moved);
    expect(viaTransfer.netBytes).toBe(direct.netBytes);
    expect(groupBySite(viaTransfer).map(g => [g.frameId, g.netBytes])).toEqual(
      groupBySite(direct).map(g => [g.frameId, g.netBytes])
    );
  });
});

describe('a file dropped on the panel', () => {
  // The real many_blocks cell03 recording as the plain pickle users drop (44.7 MB, 40,501 blocks).
  const MANY = path.join(RECORDINGS, 'many_blocks--python');
  const manyCell = manifestOf('many_blocks--python').cells[3] as any;

  /** Post `value` over a real MessagePort, as the page and the worker do: a structured clone that moves `transfer`. */
  async function across<T>(value: T, transfer: ArrayBuffer[]): Promise<T> {
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<T>(resolve => port2.once('message', resolve));
    port1.postMessage(value, transfer);
    const out = await received;
    port1.close();
    return out;
  }

  /** Drop `bytes` as the page does: they cross to the worker, and the result back, moved rather than copied. */
  async function drop(bytes: Uint8Array, id: number): Promise<IOpenedFile> {
    const payload = await across({ id, bytes, width: 0, keep: false }, [bytes.buffer as ArrayBuffer]);
    const { value, buffers } = openSnapshotFile(payload);
    return across(value, [...buffers]);
  }

  it('moves the bytes to the worker, parses them there once and keeps nothing there', async () => {
    const bytes = new Uint8Array(gunzipSync(readBytes(path.join(MANY, 'cell03.pickle.gz'))));
    expect(bytes.length).toBeGreaterThan(44e6);
    const opened = await drop(bytes, 101);
    // Transferred, not copied: the page's buffer is detached.
    expect(bytes.byteLength).toBe(0);
    // What the panel shows is what the recording says the cell left on the device.
    const snapshot = fromTransfer(opened.snapshot);
    expect(snapshot.blocks.length).toBe(manyCell.blocks);
    expect(snapshot.segments.length).toBe(manyCell.segments);
    expect(totalBytes(snapshot, 'allocatedBytes')).toBe(manyCell.after.allocated);
    expect(totalBytes(snapshot, 'reservedBytes')).toBe(manyCell.after.reserved);
    expect(opened.traceEntries).toBe(manyCell.trace_entries);
    // No timeline built and no parse kept: the panel has no timeline to ask about.
    expect(opened.timeline).toBeNull();
    expect(closeSnapshotFile({ id: 101 })).toBe(false);
    expect(() => describeMoment({ id: 101, moment: 0 })).toThrow(/not open/);
  });

  it('gives the same blocks as opening the file from the browser, whose parse the worker keeps', async () => {
    const dropped = await drop(file('cell04.pickle.gz'), 102);
    const { value: opened } = openSnapshotFile({ id: 103, bytes: file('cell04.pickle.gz'), width: 800 });
    expect(fromTransfer(dropped.snapshot).blocks).toEqual(fromTransfer(opened.snapshot).blocks);
    expect(closeSnapshotFile({ id: 103 })).toBe(true);
  });

  it('refuses broken and hostile files with one line, as opened files are refused', async () => {
    const real = file('cell04.pickle.gz');
    // A 400 KB integer (it once hung the reader) and a real pickle cut short.
    const long = new Uint8Array(6 + 400_000 + 1);
    long.set([0x80, 0x02, 0x8b]);
    new DataView(long.buffer).setUint32(3, 400_000, true);
    long[long.length - 1] = 0x2e;
    const cut = new Uint8Array(gunzipSync(real)).slice(0, 100_000);
    for (const [bytes, reason] of [
      [long, /--max-int-bytes/],
      [cut, /./],
      [new TextEncoder().encode('not a pickle'), /^not a snapshot/]
    ] as const) {
      const thrown = await drop(bytes, 104).catch((e: unknown) => e);
      // It crosses back to the page as the worker sends it, still a SnapshotError.
      const onPage = errorOf(failure(104, thrown) as { name: string; message: string });
      expect(onPage).toBeInstanceOf(SnapshotError);
      expect(onPage.message).toMatch(reason);
      expect(onPage.message).not.toContain('\n');
      expect(closeSnapshotFile({ id: 104 })).toBe(false);
    }
  });

  it("crosses over a decode limit as that limit, which the panel words as its own, with the command line's way past it", async () => {
    const long = new Uint8Array(6 + 400_000 + 1);
    long.set([0x80, 0x02, 0x8b]);
    new DataView(long.buffer).setUint32(3, 400_000, true);
    long[long.length - 1] = 0x2e;
    const thrown = await drop(long, 105).catch((e: unknown) => e);
    const onPage = errorOf(failure(105, thrown));
    expect(onPage).toBeInstanceOf(LimitError);
    expect((onPage as LimitError).limit).toBe('maxIntegerBytes');
    // The CLI's message stays for the CLI; the panel's names no flag a panel user cannot pass.
    expect(onPage.message).toMatch(/raise it with --max-int-bytes N or CUDA_MEMDIFF_MAX_INT_BYTES=N$/);
    expect(unreadableReason(onPage)).toBe(
      "the pickle holds a 400,000-byte integer, over the panel's limit of 16 bytes; " +
        'if the file is real, read it with the command line: npx cuda-memdiff summary FILE --max-int-bytes N'
    );
  });
});

describe("a snapshot file's out-of-memory error", () => {
  it("comes back with the file: the request, the free memory and the device's holders by site", () => {
    const bytes = readBytes(path.join(RECORDINGS, 'oom--python', 'oom00.pickle.gz'));
    const { value: opened } = openSnapshotFile({ id: 201, bytes, width: 800, keep: false });
    expect(opened.oom).toEqual({
      device: 0,
      requestBytes: 60 * 2 ** 30,
      deviceFreeBytes: 42183294976,
      segmentFreeBytes: 0,
      largestFreeBlockBytes: 0,
      fragmentationAdvice: null,
      shortBytes: 60 * 2 ** 30 - 42183294976,
      heldBytes: 100 * 2 ** 30,
      atError: true,
      holders: [
        {
          site: { filename: '/tmp/ipykernel_709/1313211645.py', line: 3, name: '<module>' },
          bytes: 100 * 2 ** 30,
          blocks: 5
        }
      ]
    });
    expect(
      openSnapshotFile({ id: 202, bytes: file('cell04.pickle.gz'), width: 800, keep: false }).value.oom
    ).toBeNull();
  });

  it('marks on its timeline where the allocation failed, after the five that filled the device', () => {
    const bytes = readBytes(path.join(RECORDINGS, 'oom--python', 'oom00.pickle.gz'));
    const { value: opened } = openSnapshotFile({ id: 203, bytes, width: 800, keep: true });
    expect(opened.timeline!.eventCount).toBe(5);
    expect(opened.timeline!.ooms).toEqual([{ at: 5, bytes: 60 * 2 ** 30 }]);
    // a file without an OOM marks none
    const plain = openSnapshotFile({ id: 204, bytes: file('cell01.pickle.gz'), width: 800, keep: true }).value;
    expect(plain.timeline!.ooms).toEqual([]);
  });
});
