import { chartLayout } from '../chart';
import { ROLES } from '../../engine';

const MiB = 2 ** 20;
const roles = (parts: Record<string, number>) => ({ ...Object.fromEntries(ROLES.map(r => [r, 0])), ...parts });

/** The y of a path's first vertex at x (the start of an area's top edge). */
function topAt(path: string): number {
  return Number(/^M[\d.]+,([\d.]+)/.exec(path)![1]);
}

describe('chart stacked by role', () => {
  const inputs = [
    {
      allocatedBytes: 300 * MiB,
      reservedBytes: 320 * MiB,
      oom: false,
      label: '[1]',
      roles: roles({ parameter: 100 * MiB, gradient: 100 * MiB, user: 100 * MiB })
    },
    {
      allocatedBytes: 400 * MiB,
      reservedBytes: 420 * MiB,
      oom: false,
      label: '[2]',
      roles: roles({ parameter: 100 * MiB, gradient: 100 * MiB, activation: 200 * MiB })
    },
    { allocatedBytes: 100 * MiB, reservedBytes: 420 * MiB, oom: false, label: '[3]', roles: null }
  ];
  const layout = chartLayout(inputs, { width: 320, height: 120 });

  it('stacks the roles that hold memory, in the kernel order, up to the allocated line', () => {
    expect(layout.roleAreas.map(a => a.role)).toEqual(['parameter', 'gradient', 'activation', 'user']);
    // the last role's top at the first snapshot is the allocated line there
    expect(topAt(layout.roleAreas[3].path)).toBeCloseTo(layout.points[0].yAllocated);
    expect(topAt(layout.roleAreas[0].path)).toBeGreaterThan(layout.points[0].yAllocated);
  });

  it('draws nothing by role when no snapshot has roles', () => {
    const plain = chartLayout(
      inputs.map(i => ({ ...i, roles: null })),
      { width: 320, height: 120 }
    );
    expect(plain.roleAreas).toEqual([]);
  });
});
