// The out-of-memory post-mortem on H200 recordings, with the OOMs the
// adversarial run found misread (oomCases.ts builds them as it did).
import * as fs from 'fs';
import * as path from 'path';
import {
  buildTimeline,
  fileOomReport,
  isAllocated,
  loadSession,
  oomReport,
  oomVerdict,
  readSnapshot,
  reportCells,
  totalBytes
} from '..';
import { readBytes, RECORDINGS } from './data';
import { fragmentedOom, twoDeviceOom } from './oomCases';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

describe('the OOM post-mortem of a two-device snapshot', () => {
  it("reports the newest OOM, by time, not the last in the list's device order", () => {
    const { start, atOom } = twoDeviceOom();
    const report = oomReport(start, atOom)!;
    expect(report.device).toBe(0);
    expect(report.requestBytes).toBe(10 * GiB);
    expect(report.deviceFreeBytes).toBe(5 * GiB);
  });

  it("gives the figures and the holders of the OOM's device only", () => {
    const { start, atOom } = twoDeviceOom();
    const report = oomReport(start, atOom)!;
    // cuda:0 of cell03.pickle.gz (cuda:1 has 1008 KiB free, in one block)
    expect(report.segmentFreeBytes).toBe(17809408);
    expect(report.largestFreeBlockBytes).toBe(16 * MiB);
    expect(report.fragmentation).toBe(false);
    expect(new Set(report.held.map(b => b.device))).toEqual(new Set([0]));
    expect(report.held.every(isAllocated)).toBe(true);
    expect(report.held.reduce((n, b) => n + b.size, 0)).toBe(totalBytes(atOom, 'allocatedBytes', 0));
  });

  it("takes the request's own size from the history, not the segment size the kernel's observer reports", () => {
    // torch gives its OOM observers the segment it tried to map (rounded up to 2 or 20 MiB); the entry, the block
    const { start, atOom } = twoDeviceOom();
    const report = oomReport(start, atOom, { device: 0, alloc: 10 * GiB + 2 * MiB })!;
    expect(report.requestBytes).toBe(10 * GiB);
    // without the history's entry, the observer's figure is all there is
    const noEntry = { ...atOom, traces: atOom.traces.filter(e => e.action !== 'oom') };
    expect(oomReport(start, noEntry, { device: 0, alloc: 10 * GiB + 2 * MiB })!.requestBytes).toBe(10 * GiB + 2 * MiB);
  });

  it('says when the shortfall is more than this process held: freeing its tensors cannot make room', () => {
    const { start, atOom } = twoDeviceOom();
    const report = oomReport(start, atOom)!;
    expect(report.heldBytes).toBe(totalBytes(atOom, 'allocatedBytes', 0));
    expect(oomVerdict(report)).toEqual({ kind: 'short', bytes: report.shortBytes, beyondProcess: true });
    expect(report.shortBytes).toBeGreaterThan(report.heldBytes);
  });

  it("takes the reported device's own entry when the kernel names the device", () => {
    const { start, atOom } = twoDeviceOom();
    const report = oomReport(start, atOom, { device: 1, alloc: 999 * MiB })!;
    expect([report.device, report.deviceFreeBytes, report.segmentFreeBytes]).toEqual([1, 123 * MiB, 1032192]);
  });
});

describe('an OOM only in the cell history', () => {
  // oom--python with no OOM snapshot in its manifest (/work/adv/s/t_oom_nomanifest): cell 1's own
  // snapshot still holds the history's `oom` entry, 60 GiB asked with 39.29 GiB free.
  const dir = path.join(RECORDINGS, 'oom--python');
  function reports(withoutOomSnapshot: boolean) {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    if (withoutOomSnapshot) {
      manifest.cells[1].oom_snapshots = [];
    }
    return reportCells(
      loadSession(JSON.stringify(manifest), name => new Uint8Array(fs.readFileSync(path.join(dir, name))))
    );
  }

  it('is an OOM, with its request and the free figures of the cell end', () => {
    const cells = reports(true);
    expect(cells.map(c => c.oom)).toEqual([false, true, false]);
    const report = cells[1].oomReport!;
    expect(report.moment).toBe('cell-end');
    expect([report.device, report.requestBytes, report.deviceFreeBytes]).toEqual([0, 60 * GiB, 42183294976]);
    expect([report.segmentFreeBytes, report.largestFreeBlockBytes, report.fragmentation]).toEqual([0, 0, false]);
    expect(report.held.reduce((n, b) => n + b.size, 0)).toBe(100 * GiB);
    // the segments' figures are of the cell end, the device's free memory of the error: not added up
    expect(report.shortBytes).toBeNull();
    expect(oomVerdict(report)).toBeNull();
    expect(cells[0].oomReport).toBeNull();
    expect(cells[2].oomReport).toBeNull();
  });

  it('comes from the OOM snapshot when there is one', () => {
    const report = reports(false)[1].oomReport!;
    expect(report.moment).toBe('error');
    expect([report.requestBytes, report.deviceFreeBytes]).toEqual([60 * GiB, 42183294976]);
    // nothing free in segments: the request is more than all the free memory by what the device lacked,
    // less than the 100 GiB this process held
    expect(report.shortBytes).toBe(60 * GiB - 42183294976);
    expect(oomVerdict(report)).toEqual({ kind: 'short', bytes: 60 * GiB - 42183294976, beyondProcess: false });
  });
});

describe('fragmentation advice', () => {
  it('suggests expandable segments for fixed-size segments', () => {
    const { start, atOom } = fragmentedOom(false);
    const report = oomReport(start, atOom)!;
    expect([report.segmentFreeBytes, report.largestFreeBlockBytes]).toEqual([17784832, 16 * MiB]);
    expect(report.fragmentation).toBe(true);
    expect(report.fragmentationAdvice).toBe('enable-expandable-segments');
    expect(report.shortBytes).toBe(0);
    expect(oomVerdict(report)).toEqual({ kind: 'fragmentation', setting: 'enable-expandable-segments' });
  });

  it('says expandable segments are already on when the segments are expandable', () => {
    const { start, atOom } = fragmentedOom(true);
    const report = oomReport(start, atOom)!;
    expect(report.fragmentation).toBe(true);
    expect(report.fragmentationAdvice).toBe('expandable-segments-on');
  });

  it('gives none without fragmentation', () => {
    const { start, atOom } = twoDeviceOom();
    expect(oomReport(start, atOom)!.fragmentationAdvice).toBeNull();
  });

  it('cannot say how short the free memory fell where nothing says what the device had free', () => {
    const { start, atOom } = twoDeviceOom();
    const noEntry = { ...atOom, traces: atOom.traces.filter(e => e.action !== 'oom') };
    const report = oomReport(start, noEntry, { device: 0, alloc: 10 * GiB })!;
    expect([report.requestBytes, report.deviceFreeBytes, report.shortBytes]).toEqual([10 * GiB, null, null]);
  });
});

describe("a file's timeline of the device that ran out", () => {
  it('draws the device of the newest OOM, with its entries, whichever device has more events', () => {
    const { atOom } = twoDeviceOom();
    const zero = buildTimeline(atOom)!;
    expect(zero.device).toBe(0);
    expect(zero.ooms).toEqual([{ at: zero.events.length, bytes: 10 * GiB }]);
    // the same file whose newest OOM is cuda:1's: its timeline is cuda:1's, with the 999 MiB request
    const onOne = { ...atOom, traces: atOom.traces.filter(e => !(e.action === 'oom' && e.device === 0)) };
    const one = buildTimeline(onOne)!;
    expect(one.device).toBe(1);
    expect(one.ooms.map(o => o.bytes)).toEqual([999 * MiB]);
  });
});

describe('the post-mortem of a snapshot file alone', () => {
  const oomFile = () => readSnapshot(readBytes(path.join(RECORDINGS, 'oom--python', 'oom00.pickle.gz')));

  it("comes from the file's oom entry and what the device held, written at the error", () => {
    const report = fileOomReport(oomFile())!;
    expect(report.requestBytes).toBe(60 * GiB);
    expect(report.deviceFreeBytes).toBe(42183294976);
    expect(report.segmentFreeBytes).toBe(0);
    expect(report.held.reduce((n, b) => n + b.size, 0)).toBe(100 * GiB);
    expect(report.moment).toBe('error');
  });

  it('says a file whose trace goes on after the error was written later', () => {
    const snapshot = oomFile();
    const oom = snapshot.traces.find(e => e.action === 'oom')!;
    const free = { ...oom, action: 'free_completed', timeUs: (oom.timeUs ?? 0) + 1, address: 0, size: 512 };
    const later = fileOomReport({ ...snapshot, traces: [...snapshot.traces, free] })!;
    expect(later.moment).toBe('after-error');
    // its segments may have been released since the error: no shortfall is added up from them
    expect(later.shortBytes).toBeNull();
    expect(fileOomReport(snapshot)!.shortBytes).toBe(60 * GiB - 42183294976);
  });

  it('diffs nothing: a file has no cell start, and no caller reads a diff against an empty device', () => {
    const report = fileOomReport(oomFile())!;
    expect('diff' in report).toBe(false);
  });

  it('is null for a file without an oom entry', () => {
    expect(fileOomReport(readSnapshot(readBytes(path.join(RECORDINGS, 'oom--python', 'cell00.pickle.gz'))))).toBeNull();
  });
});
