import { chartLayout } from '../chart';

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
    expect(c.yAllocated).toBe(120 - 8);
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
});
