// The diff grouped by role and the segment map coloured by role, on the H200 training session recorded with roles.
import { fireEvent, render, screen, within } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import {
  CellCodeNames,
  diffSnapshots,
  formatBytes,
  groupByRole,
  groupBySite,
  loadSession,
  sessionRoles
} from '../../engine';
import { DiffView } from '../diffview';
import { SegmentMap } from '../segmentview';
import { rolesPresent } from '../segments';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const DIR = path.resolve(__dirname, '../../../test-data/roles/training_roles--python');
const read = (name: string) => new Uint8Array(fs.readFileSync(path.join(DIR, name)));

function recorded() {
  const session = loadSession(fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf-8'), read);
  const roles = sessionRoles(session.manifest, read).map(r => r!.blocks!);
  const cells = new CellCodeNames(
    session.manifest.cells.map((c, i) => ({ id: `cell-${i}`, source: c.source ?? '', executionCount: i + 1 }))
  );
  return { session, roles, cells };
}

/** The diff of the eval pass (cell 4) against the training steps, grouped by role. */
function renderDiff(roleGroups: ReturnType<typeof groupByRole> | null, onGrouping = jest.fn()) {
  const { session, cells } = recorded();
  const diff = diffSnapshots(session.snapshots[3], session.snapshots[4]);
  return render(
    <DiffView
      diff={diff}
      groups={groupBySite(diff)}
      showAllFrames={false}
      onShowAllFrames={jest.fn()}
      cells={cells}
      trans={trans}
      onReveal={jest.fn()}
      caption="Cell [5], against Cell [4]"
      grouping="role"
      onGrouping={onGrouping}
      roleGroups={roleGroups}
    />
  );
}

describe('DiffView by role', () => {
  it("lists the eval pass's change by role, largest first, each role opening into its sites", () => {
    const { session, roles } = recorded();
    const byRole = groupByRole(diffSnapshots(session.snapshots[3], session.snapshots[4]), roles[3], roles[4]);
    const onGrouping = jest.fn();
    const { container } = renderDiff(byRole, onGrouping);
    const list = screen.getByRole('list', { name: 'Roles' });
    const rows = Array.from(list.children) as HTMLElement[];
    expect(rows.map(r => r.dataset.cudaMemdiffRole)).toEqual(byRole.map(g => g.role));
    expect(rows[0].dataset.cudaMemdiffRole).toBe('activation');
    const head = within(rows[0]).getByRole('button');
    expect(head.textContent).toContain(formatBytes(byRole[0].netBytes, true));
    expect(head.textContent).toContain('activation');
    fireEvent.click(head);
    const sites = within(rows[0]).getByRole('list', { name: 'Allocation sites of activation' });
    expect(sites.children).toHaveLength(byRole[0].sites.length);
    // the toggle offers both groupings and says which is on
    fireEvent.click(screen.getByRole('radio', { name: 'allocation site' }));
    expect(onGrouping).toHaveBeenCalledWith('site');
    expect((screen.getByRole('radio', { name: 'role, then site' }) as HTMLInputElement).checked).toBe(true);
    expect(container.querySelector('.jp-CudaMemdiffDiff-note')).toBeNull();
  });

  it('says so and groups by site when the snapshots have no per-block roles', () => {
    renderDiff(null);
    expect(screen.getByText(/No per-block roles for these snapshots/)).toBeTruthy();
    expect(screen.getByRole('list', { name: 'Allocation sites' }).children.length).toBeGreaterThan(0);
  });
});

describe('SegmentMap by role', () => {
  it('colours each allocated block by its role and names each colour with its bytes', () => {
    const { session, roles, cells } = recorded();
    const snapshot = session.snapshots[4];
    const { container } = render(
      <SegmentMap
        snapshot={snapshot}
        roles={roles[4]}
        cells={cells}
        showAllFrames={false}
        trans={trans}
        onReveal={jest.fn()}
      />
    );
    const button = screen.getByRole('button', { name: 'colour by role' });
    expect(button.getAttribute('aria-pressed')).toBe('false');
    fireEvent.click(button);
    expect(button.getAttribute('aria-pressed')).toBe('true');
    const legend = screen.getByRole('list', { name: 'Colours of the segment map' });
    const present = rolesPresent(snapshot, roles[4]);
    expect(present.map(p => p.role)).toEqual(
      expect.arrayContaining(['parameter', 'gradient', 'optimizer_state', 'activation'])
    );
    const items = Array.from(legend.querySelectorAll('li')).slice(0, present.length);
    expect(items.map(li => li.textContent)).toEqual(
      present.map(p => `${p.role.replace(/_/g, ' ')} (${formatBytes(p.bytes)})`)
    );
    // every drawn block that is not a summary band has its role's colour
    const drawn = Array.from(container.querySelectorAll('rect.jp-CudaMemdiffSegments-block:not(.jp-mod-band)'));
    expect(drawn.length).toBeGreaterThan(0);
    drawn.forEach(rect => expect(rect.getAttribute('class')).toMatch(/jp-CudaMemdiffSegments-role jp-mod-[a-z_]+/));
    const activation = container.querySelectorAll('rect.jp-CudaMemdiffSegments-role.jp-mod-activation');
    expect(activation.length).toBeGreaterThan(0);
    expect(container.querySelector('svg')!.getAttribute('aria-label')).toMatch(/blocks coloured by role$/);
    // hovering a block names its role, what its colour means
    expect(activation[0].querySelector('title')!.textContent).toMatch(
      /^\d[\d.]* [KMG]?i?B activation at 0x[0-9a-f]+, allocated\n {2}/
    );
    const optimizer = container.querySelector('rect.jp-CudaMemdiffSegments-role.jp-mod-optimizer_state')!;
    expect(optimizer.querySelector('title')!.textContent).toMatch(
      /^\d[\d.]* [KMG]?i?B optimizer state at 0x[0-9a-f]+, allocated\n/
    );
    // coloured by code again, the hover says what it said
    fireEvent.click(button);
    const block = container.querySelector('rect.jp-CudaMemdiffSegments-block:not(.jp-mod-band)')!;
    expect(block.querySelector('title')!.textContent).toMatch(/^\d[\d.]* [KMG]?i?B at 0x[0-9a-f]+, allocated\n/);
    // a picked block's detail names its role in either colouring: what the memory is for
    fireEvent.click(block);
    expect(container.querySelector('.jp-CudaMemdiffSegments-detail p')!.textContent).toMatch(
      /^Block \d[\d.]* [KMG]?i?B (parameter|gradient|optimizer state|activation|user|workspace) at 0x[0-9a-f]+ \(allocated\)$/
    );
    fireEvent.click(button);
    fireEvent.click(container.querySelector('rect.jp-CudaMemdiffSegments-role.jp-mod-optimizer_state')!);
    expect(container.querySelector('.jp-CudaMemdiffSegments-detail p')!.textContent).toMatch(
      /^Block \d[\d.]* [KMG]?i?B optimizer state at 0x[0-9a-f]+ \(allocated\)$/
    );
  });

  it('offers no role colouring when the kernel gave no roles', () => {
    const { session, cells } = recorded();
    render(
      <SegmentMap
        snapshot={session.snapshots[4]}
        cells={cells}
        showAllFrames={false}
        trans={trans}
        onReveal={jest.fn()}
      />
    );
    expect(screen.queryByRole('button', { name: 'colour by role' })).toBeNull();
  });
});
