import { binaryTicks, binaryTickStep, cellLabels, chartLayout, labelStride, restartMarks, tickLabel } from '../chart';
import type { IChartInput } from '../chart';

const MiB = 2 ** 20;

describe('chartLayout', () => {
  const inputs = [
    { allocatedBytes: 128 * MiB, reservedBytes: 130 * MiB, oom: false, label: '[1]' },
    { allocatedBytes: 480 * MiB, reservedBytes: 500 * MiB, oom: true, label: '[2]' },
    { allocatedBytes: 0, reservedBytes: 500 * MiB, oom: false, label: '[3]' }
  ];
  const layout = chartLayout(inputs, { width: 320, height: 120 });

  it('gives each snapshot an equal step, left to right', () => {
    expect(layout.points.map(p => p.index)).toEqual([0, 1, 2]);
    const widths = layout.points.map(p => p.width);
    expect(new Set(widths.map(w => w.toFixed(6))).size).toBe(1);
    expect(layout.points[1].x).toBeCloseTo(layout.points[0].x + widths[0]);
    expect(layout.points[2].x + widths[2]).toBeCloseTo(320 - 8);
  });

  it('puts more memory higher, zero at the bottom, reserved above allocated', () => {
    const [a, b, c] = layout.points;
    expect(b.yAllocated).toBeLessThan(a.yAllocated);
    // zero on the plot's bottom, above the row of the steps' names (22 px)
    expect(c.yAllocated).toBe(120 - 22);
    expect(b.yReserved).toBeLessThanOrEqual(b.yAllocated);
  });

  it('draws step lines through every snapshot and labels the ticks in binary units', () => {
    // a step line has one horizontal and one vertical segment per snapshot
    expect((layout.allocatedPath.match(/[HVL]/g) ?? []).length).toBeGreaterThanOrEqual(3);
    expect(layout.allocatedPath.startsWith('M')).toBe(true);
    expect(layout.ticks.length).toBeGreaterThan(1);
    expect(layout.ticks.every(t => /B$/.test(t.label))).toBe(true);
    expect(layout.points.filter(p => p.oom).map(p => p.label)).toEqual(['[2]']);
  });

  it('lays out an empty session without failing', () => {
    const empty = chartLayout([], { width: 320, height: 120 });
    expect(empty.points).toEqual([]);
    expect(empty.allocatedPath).toBe('');
  });

  it('marks where the kernel restarted, at the first snapshot of the new session', () => {
    const restarted = chartLayout(
      [
        { ...inputs[0], kernelSession: 1 },
        { ...inputs[1], kernelSession: 1 },
        { ...inputs[2], kernelSession: 2 },
        { ...inputs[0], kernelSession: 2 }
      ],
      { width: 320, height: 120 }
    );
    expect(restarted.restarts.map(r => [r.x, r.index])).toEqual([[restarted.points[2].x, 2]]);
    expect(layout.restarts).toEqual([]);
  });

  it('marks each cell that ran out of memory, and drops an OOM label that would run into the last', () => {
    // eight cells on 240 px of plot, 30 px a step: labels 40 px wide over cells 1, 2 and 4
    const failing = new Set([1, 2, 4]);
    const cells: IChartInput[] = Array.from({ length: 8 }, (_, k) => ({
      allocatedBytes: MiB,
      reservedBytes: MiB,
      oom: failing.has(k),
      label: `[${k + 1}]`
    }));
    const chart = chartLayout(cells, { width: 312, height: 120 }, { oom: 40 });
    expect(chart.ooms.map(m => [m.index, m.x, m.label])).toEqual([
      [1, 64 + 45, true],
      // [2]'s label would overlap [1]'s ("OOMOOM"): the band still says it in its name
      [2, 64 + 75, false],
      [4, 64 + 135, true]
    ]);
    // with room for every label, all are written
    expect(chartLayout(cells, { width: 312, height: 120 }, { oom: 20 }).ooms.every(m => m.label)).toBe(true);
  });

  it('writes a restart label on the side of its line with room, and drops one that would run into the last', () => {
    // two restarts 20 px apart, labels 40 px wide, in the left half: the second label would overlap the first
    const marks = restartMarks(
      [
        { x: 100, index: 4 },
        { x: 120, index: 5 },
        { x: 150, index: 7 },
        { x: 250, index: 9 }
      ],
      200,
      40
    );
    expect(marks.map(m => m.index)).toEqual([4, 5, 7, 9]);
    expect(marks.map(m => m.label)).toEqual([
      { x: 103, anchor: 'start' },
      null,
      { x: 153, anchor: 'start' },
      // right of the middle the label goes left of its line, where it clears [153, 193]
      { x: 247, anchor: 'end' }
    ]);
    const spans = marks
      .filter(m => m.label)
      .map(m => (m.label!.anchor === 'start' ? [m.label!.x, m.label!.x + 40] : [m.label!.x - 40, m.label!.x]));
    spans.slice(1).forEach((s, k) => expect(s[0]).toBeGreaterThan(spans[k][1]));
  });
});

describe('binary ticks', () => {
  const GiB = 2 ** 30;

  it('step by powers of two, at most four intervals, covering the maximum', () => {
    expect(binaryTicks(572 * MiB).map(tickLabel)).toEqual(['0 B', '256 MiB', '512 MiB', '768 MiB']);
    expect(binaryTicks(481 * MiB).map(tickLabel)).toEqual(['0 B', '128 MiB', '256 MiB', '384 MiB', '512 MiB']);
    expect(binaryTicks(3 * GiB).map(tickLabel)).toEqual(['0 B', '1 GiB', '2 GiB', '3 GiB']);
    expect(binaryTicks(1.2 * GiB).map(tickLabel)).toEqual(['0 B', '512 MiB', '1 GiB', '1.5 GiB']);
    for (const max of [1, 1000, 5 * MiB, 140 * GiB]) {
      const ticks = binaryTicks(max);
      const step = binaryTickStep(max);
      expect(Math.log2(step) % 1).toBe(0);
      expect(ticks.length - 1).toBeLessThanOrEqual(4);
      expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(max);
      expect(ticks[ticks.length - 2]).toBeLessThan(max);
    }
  });

  it("puts the chart's ticks on those values", () => {
    const chart = chartLayout([{ allocatedBytes: 500 * MiB, reservedBytes: 572 * MiB, oom: false, label: '[1]' }], {
      width: 320,
      height: 120
    });
    expect(chart.ticks.map(t => t.label)).toEqual(['0 B', '256 MiB', '512 MiB', '768 MiB']);
    expect(chart.ticks[0].y).toBe(120 - 22);
    expect(chart.ticks[3].y).toBe(8);
  });
});

describe("the steps' names under the chart", () => {
  const cells = (count: number): IChartInput[] =>
    Array.from({ length: count }, (_, k) => ({
      allocatedBytes: MiB,
      reservedBytes: MiB,
      oom: false,
      label: `[${k + 1}] x = ${k}`,
      tick: `[${k + 1}]`
    }));

  it('names every step, centred under it, where the names fit', () => {
    // 4 steps of 60 px on a 312 px chart, names 20 px wide
    const chart = chartLayout(cells(4), { width: 312, height: 134 }, { cell: 20 });
    expect(chart.cellLabelStride).toBe(1);
    expect(chart.cellLabels.map(c => c.text)).toEqual(['[1]', '[2]', '[3]', '[4]']);
    chart.cellLabels.forEach((c, k) => {
      const p = chart.points[k];
      expect(c.x).toBeCloseTo(p.x + p.width / 2);
    });
    // below the plot, whose bottom is the zero tick
    expect(chart.cellLabelY).toBeGreaterThan(chart.ticks[0].y + 10);
    expect(chart.cellLabelY).toBeLessThanOrEqual(134);
  });

  it('thins the names to every 2nd, 5th, 10th ... step where they would touch, never letting two meet', () => {
    expect(labelStride(30, 20)).toBe(1);
    expect(labelStride(20, 20)).toBe(2);
    expect(labelStride(8, 20)).toBe(5);
    expect(labelStride(2, 20)).toBe(20);
    expect(labelStride(0.5, 20)).toBe(50);
    // 16 steps of 15 px, names 20 px wide: every other one, [1], [3], [5] ...
    const chart = chartLayout(cells(16), { width: 312, height: 134 }, { cell: 20 });
    expect(chart.cellLabelStride).toBe(2);
    expect(chart.cellLabels.map(c => c.text).slice(0, 3)).toEqual(['[1]', '[3]', '[5]']);
    chart.cellLabels.slice(1).forEach((c, k) => expect(c.x - chart.cellLabels[k].x).toBeGreaterThanOrEqual(20 + 3));
  });

  it('keeps a name inside the chart at its edges, and names no step without a short name', () => {
    // the last of 250 steps (1 px each) ends 8 px from the right edge: its 30 px name is moved inside
    const chart = chartLayout(cells(250), { width: 322, height: 134 }, { cell: 30 });
    const last = chart.points[249];
    const [name] = cellLabels([last], 1, 30, 322);
    expect(last.x + last.width / 2 + 15).toBeGreaterThan(322);
    expect(name.x + 15).toBe(322);
    expect(cellLabels([chart.points[0]], 1, 200, 322)[0].x - 100).toBe(0);
    const unnamed = cells(3).map(({ tick: _, ...rest }) => rest);
    expect(chartLayout(unnamed, { width: 312, height: 134 }, { cell: 20 }).cellLabels).toEqual([]);
  });
});

describe("the session's peak on the chart", () => {
  const step = (allocated: number, kernelSession: number): IChartInput => ({
    allocatedBytes: allocated * MiB,
    reservedBytes: allocated * MiB,
    oom: false,
    label: '',
    kernelSession
  });

  it('draws a level at the peak over the steps of the kernel that reached it, and the scale reaches it', () => {
    // the demo after a restart: 481 MiB left after [3], 541 MiB at the peak of [4] in kernel 2
    const inputs = [step(128, 1), step(481, 1), step(128, 2), step(160, 2), step(481, 2), step(513, 2)];
    const chart = chartLayout(inputs, { width: 312, height: 134 }, {}, 541 * MiB);
    expect(chart.peak).not.toBeNull();
    const peak = chart.peak!;
    expect(peak.bytes).toBe(541 * MiB);
    // from the first step of kernel 2 to the plot's right end
    expect(peak.x1).toBe(chart.points[2].x);
    expect(peak.x2).toBeCloseTo(312 - 8);
    // above every step of the chart, below its top tick (768 MiB)
    expect(chart.points.every(p => p.yAllocated > peak.y)).toBe(true);
    expect(chart.ticks.map(t => t.label)).toEqual(['0 B', '256 MiB', '512 MiB', '768 MiB']);
    expect(peak.y).toBeGreaterThan(chart.ticks[3].y);
  });

  it('raises the scale to a peak above every step', () => {
    const chart = chartLayout([step(100, 1)], { width: 312, height: 134 }, {}, 900 * MiB);
    expect(chart.ticks[chart.ticks.length - 1].label).toBe('1 GiB');
    expect(chart.peak!.y).toBeGreaterThanOrEqual(chart.ticks[chart.ticks.length - 1].y);
  });

  it("draws no peak on its kernel's highest step, which shows it already", () => {
    // a cell that filled the device and failed: the peak is what it held after
    const chart = chartLayout([step(20, 1), step(100, 1)], { width: 312, height: 134 }, {}, 100 * MiB);
    expect(chart.peak).toBeNull();
    // another kernel's higher step does not count: the level is drawn over this kernel's
    const restarted = chartLayout(
      [step(600, 1), step(100, 2), step(300, 2)],
      { width: 312, height: 134 },
      {},
      541 * MiB
    );
    expect(restarted.peak?.x1).toBe(restarted.points[1].x);
  });

  it('draws no peak without one, nor on an empty chart', () => {
    expect(chartLayout([step(100, 1)], { width: 312, height: 134 }).peak).toBeNull();
    expect(chartLayout([], { width: 312, height: 134 }, {}, 541 * MiB).peak).toBeNull();
  });
});
