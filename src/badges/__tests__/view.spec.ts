import { CellRecord } from '../../capture/store';
import { FrameTable } from '../../engine';
import { badgeView, DEFAULT_THRESHOLDS } from '../view';

const GiB = 2 ** 30;

function record(net: number, extra: Partial<CellRecord> = {}): CellRecord {
  return {
    cellId: 'c',
    executionCount: 3,
    reason: 'cell',
    kernelSession: 0,
    snapshot: { segments: [], blocks: [], traces: [], totals: [], frames: new FrameTable() },
    devices: [
      {
        device: 0,
        allocated: 3 * GiB,
        reserved: 4 * GiB,
        peak_allocated: 5 * GiB,
        peak_reserved: 6 * GiB,
        device_free: 100 * GiB,
        device_total: 140 * GiB
      }
    ],
    allocatedBytes: 3 * GiB,
    netBytes: net,
    reservedNetBytes: 2 * GiB,
    peakBytes: 5 * GiB,
    peakExact: true,
    source: null,
    seq: 1,
    error: null,
    replay: null,
    ...extra
  };
}

describe('badgeView', () => {
  it('shows the allocated change and the peak', () => {
    const v = badgeView(record(1.2 * GiB), { oom: false, currentKernelSession: 0 });
    expect(v.text).toBe('+1.20 GiB · peak 5.00 GiB');
    expect(v.netBytes).toBe(1.2 * GiB);
    expect(v.level).toBe('warn');
    expect(v.stale).toBe(false);
  });

  it("says the peak is the device's total at the cell's highest moment, not the cell's own rise", () => {
    // A cell that adds 1 MiB after a cell that keeps 5 GiB peaks at 5 GiB: the tooltip must not read as its own.
    const v = badgeView(record(2 ** 20), { oom: false, currentKernelSession: 0 });
    expect(v.text).toBe('+1.00 MiB · peak 5.00 GiB');
    expect(v.description.split('\n').slice(0, 2)).toEqual([
      'GPU memory left by this cell: +1.00 MiB allocated, +2.00 GiB reserved; 3.00 GiB allocated after it.',
      "Peak 5.00 GiB: all memory allocated at the cell's highest moment, what earlier cells keep included (torch.cuda.max_memory_allocated())."
    ]);
  });

  it('says when the peak is only a bound, because the peak counter was left alone', () => {
    const v = badgeView(record(GiB, { peakExact: false }), { oom: false, currentKernelSession: 0 });
    expect(v.text).toBe('+1.00 GiB · peak ≤ 5.00 GiB');
    expect(v.description).toContain('max_memory_allocated() stays yours');
  });

  it('colours by the thresholds', () => {
    const level = (net: number) => badgeView(record(net), { oom: false, currentKernelSession: 0 }).level;
    expect(level(0)).toBe('flat');
    expect(level(-5)).toBe('freed');
    expect(level(DEFAULT_THRESHOLDS.warnBytes - 1)).toBe('grew');
    expect(level(DEFAULT_THRESHOLDS.dangerBytes)).toBe('danger');
    expect(
      badgeView(record(10), { oom: false, currentKernelSession: 0, thresholds: { warnBytes: 5, dangerBytes: 50 } })
        .level
    ).toBe('warn');
  });

  it('describes reserved change, device free/total and memory outside the allocator', () => {
    const v = badgeView(record(GiB), { oom: false, currentKernelSession: 0 });
    expect(v.description).toContain('+2.00 GiB reserved');
    expect(v.description).toContain('100 GiB free of 140 GiB');
    // used on the device (140 - 100) minus reserved (4) = 36 GiB outside PyTorch's allocator
    expect(v.description).toContain("36.0 GiB used outside PyTorch's allocator");
  });

  it('says OOM, replay and a previous kernel session', () => {
    const v = badgeView(record(0, { replay: 'demo', kernelSession: 0 }), { oom: true, currentKernelSession: 1 });
    expect(v.text.startsWith('OOM ')).toBe(true);
    expect(v.level).toBe('oom');
    expect(v.stale).toBe(true);
    expect(v.description).toMatch(
      /ran out of GPU memory[\s\S]*Replayed from a recorded session\. Recording: folder demo\.?[\s\S]*previous kernel session/
    );
  });

  it('names a replayed recording as it says it was made, its folder after', () => {
    const recording = { scenario: 'gpu_memory_demo', device: 'NVIDIA H200', device_count: 1 };
    const v = badgeView(record(0, { replay: 'gpu_memory_demo--holders' }), {
      oom: false,
      currentKernelSession: 0,
      recording
    });
    expect(v.description).toMatch(
      /^Replayed from a recorded session \(NVIDIA H200\)\. Recording: gpu_memory_demo \(folder gpu_memory_demo--holders\)$/m
    );
  });
});
