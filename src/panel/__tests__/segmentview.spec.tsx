import { act, fireEvent, render, screen } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import { CellCodeNames, readSnapshot } from '../../engine';
import { SegmentMap } from '../segmentview';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const REC = path.resolve(__dirname, '../../../test-data/recordings/gpu_memory_demo--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

/** The recording's snapshot after its cell `k`, read afresh (as after a reload). */
const snapshotOf = (k: number) =>
  readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))));

/** The recorded notebook's cells, as the page reads them from it: one id each, kept in the file. */
const sessionCells = () =>
  new CellCodeNames(
    manifest.cells.map((c: any, i: number) => ({
      id: `cell-${i}`,
      source: c.source,
      executionCount: c.execution_count
    }))
  );

/** The colour class the legend gives each cell (`Cell [1]`), as a person reads the legend. */
function legendColours(): Map<string, string> {
  const legend = screen.getByRole('list', { name: 'Colours of the segment map' });
  const named = Array.from(legend.querySelectorAll('li')).map(
    li => [li.textContent!, li.querySelector('span')!.className.split(' ').pop()!] as const
  );
  return new Map(named.filter(([text]) => /^Cell \[\d\]$/.test(text)));
}

describe('SegmentMap', () => {
  it('draws each segment, colours blocks by the cell that allocated them and names the colours', () => {
    const snapshot = snapshotOf(2);
    const ids = manifest.cells.map((_: unknown, i: number) => `cell-${i}`);
    const cells = new CellCodeNames(
      manifest.cells.map((c: any, i: number) => ({ id: ids[i], source: c.source, executionCount: c.execution_count }))
    );
    const onReveal = jest.fn();
    const { container } = render(
      <SegmentMap snapshot={snapshot} cells={cells} showAllFrames={false} trans={trans} onReveal={onReveal} />
    );
    expect(container.querySelectorAll('[data-cuda-memdiff-segment]')).toHaveLength(snapshot.segments.length);
    // the model's weights come from cell 0, the batches from cell 1, the kept graphs from cell 2:
    // each has a colour, and the legend names it as the notebook does
    const legend = screen.getByRole('list', { name: 'Colours of the segment map' });
    const named = Array.from(legend.querySelectorAll('li')).map(li => [
      li.querySelector('span')!.className.split(' ').pop(),
      li.textContent
    ]);
    const cellColours = new Map(
      named.filter(([, text]) => /^Cell \[\d\]$/.test(text!)).map(([cls, text]) => [text, cls])
    );
    expect([...cellColours.keys()].sort()).toEqual(['Cell [1]', 'Cell [2]', 'Cell [3]']);
    for (const cls of cellColours.values()) {
      expect(container.querySelectorAll(`rect.${cls}`).length).toBeGreaterThan(0);
    }
    expect(legend.textContent).toContain('free space inside a segment');
    // sizes are written, and the summary says what the rows mean
    expect(container.querySelector('.jp-CudaMemdiffSegments-size')!.textContent).toMatch(/^\d+(\.\d+)? [KMG]iB$/);
    // on every row: the demo's two 64 MiB segments lie one under the other, and each says its size
    const rows = container.querySelectorAll('[data-cuda-memdiff-segment]');
    const sizes = Array.from(rows, row => row.querySelector('.jp-CudaMemdiffSegments-size')?.textContent);
    expect(sizes.filter(size => size === '64.0 MiB').length).toBeGreaterThan(1);
    expect(sizes.every(size => size)).toBe(true);
    expect(container.querySelector('.jp-CudaMemdiffSegments-summary')!.textContent).toMatch(
      /segments, .* reserved, .* free\. Rows are drawn to scale/
    );
    const block = container.querySelector(`rect.${cellColours.get('Cell [3]')}`) as SVGRectElement;
    // hovering shows the block's stack, the cell named as the notebook shows it (not an ipykernel path)
    const title = block.querySelector('title')!.textContent!;
    expect(title).toMatch(
      /^\d[\d.]* [KMG]?i?B at 0x[0-9a-f]+, allocated\n  Cell \[3\], line 3: preds\.append\(model\(b\)\)/m
    );
    expect(title).not.toMatch(/active_allocated/);
    expect(title).not.toMatch(/ipykernel_/);
    fireEvent.click(block);
    fireEvent.click(screen.getByRole('button', { name: 'Cell [3], line 3' }));
    expect(onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'cell-2' }), line: 3 });
  });

  it("moves through the blocks from the keyboard, one in the tab order, showing each one's stack", () => {
    const snapshot = snapshotOf(2);
    const cells = new CellCodeNames(
      manifest.cells.map((c: any, i: number) => ({
        id: `cell-${i}`,
        source: c.source,
        executionCount: c.execution_count
      }))
    );
    const map = (shown: typeof snapshot) => (
      <SegmentMap snapshot={shown} cells={cells} showAllFrames={false} trans={trans} onReveal={jest.fn()} />
    );
    const { rerender } = render(map(snapshot));
    // a grid: a row a segment, a cell a drawn block
    expect(screen.getByRole('grid').getAttribute('aria-label')).toMatch(/^\d+ segments; blocks coloured by the cell/);
    const rows = screen.getAllByRole('row');
    expect(rows).toHaveLength(snapshot.segments.length);
    // each row is named by its segment, as its free space's hover names it
    expect(rows[0].getAttribute('aria-label')).toMatch(
      /^Segment 1 of \d+, cuda:0 0x[0-9a-f]+: [\d.]+ [KMG]iB, [\d.]+ [KMG]?i?B free$/
    );
    const options = screen.getAllByRole('gridcell');
    // a block's name: its size, address and state, then its first frame (not the whole stack at each key)
    expect(options[0].getAttribute('aria-label')).toMatch(/^[\d.]+ [KMG]?i?B at 0x[0-9a-f]+, allocated; Cell \[\d\]/);
    expect(options[0].getAttribute('aria-label')).not.toContain('\n');
    const tabbable = options.filter(o => o.getAttribute('tabindex') === '0');
    expect(tabbable).toHaveLength(1);
    expect(tabbable[0]).toBe(options[0]);
    expect(screen.queryByText(/^Block /)).toBeNull();

    // Enter shows the first block's stack; the right arrow moves the focus and the stack on
    act(() => options[0].focus());
    fireEvent.keyDown(options[0], { key: 'Enter' });
    expect(options[0].getAttribute('aria-selected')).toBe('true');
    const first = screen.getByText(/^Block /).textContent;
    fireEvent.keyDown(options[0], { key: 'ArrowRight' });
    const now = document.activeElement!;
    expect(now).toBe(options[1]);
    expect(now.getAttribute('tabindex')).toBe('0');
    expect(options[0].getAttribute('tabindex')).toBe('-1');
    expect(now.getAttribute('aria-selected')).toBe('true');
    expect(options[0].getAttribute('aria-selected')).toBe('false');
    expect(screen.getByText(/^Block /).textContent).not.toBe(first);

    // down goes to a block of another segment's row
    fireEvent.keyDown(now, { key: 'ArrowDown' });
    const below = document.activeElement!;
    expect(below.getAttribute('role')).toBe('gridcell');
    expect(below.closest('[role="row"]')).not.toBe(options[1].closest('[role="row"]'));
    // a key the map leaves alone changes nothing
    fireEvent.keyDown(below, { key: 'x' });
    expect(document.activeElement).toBe(below);

    // another snapshot has nothing picked, and coming back to this one does not bring the pick back
    const other = snapshotOf(1);
    rerender(map(other));
    expect(screen.queryByText(/^Block /)).toBeNull();
    expect(document.querySelectorAll('[aria-selected="true"]')).toHaveLength(0);
    rerender(map(snapshot));
    expect(screen.queryByText(/^Block /)).toBeNull();
    expect(screen.getAllByRole('gridcell')[0].getAttribute('tabindex')).toBe('0');
  });

  it('keeps each cell its colour when the map shows another snapshot of the session', () => {
    const cells = sessionCells();
    const colours = legendColours;
    const map = (k: number) => (
      <SegmentMap snapshot={snapshotOf(k)} cells={cells} showAllFrames={false} trans={trans} onReveal={jest.fn()} />
    );
    // [4]'s map, then [2]'s, as the chart's arrow keys step back
    const { rerender } = render(map(3));
    const atFour = colours();
    rerender(map(1));
    const atTwo = colours();
    expect([...atTwo.keys()]).toEqual(expect.arrayContaining(['Cell [1]', 'Cell [2]']));
    expect(atTwo.get('Cell [1]')).toBe(atFour.get('Cell [1]'));
    // the cells shown together keep colours apart
    expect(new Set(atTwo.values()).size).toBe(atTwo.size);
    rerender(map(3));
    expect(colours()).toEqual(atFour);
  });

  it('gives each cell the same colour after a reload, whichever snapshot is shown first', () => {
    const cells = sessionCells;
    const colours = legendColours;
    const map = (k: number, names: CellCodeNames) => (
      <SegmentMap snapshot={snapshotOf(k)} cells={names} showAllFrames={false} trans={trans} onReveal={jest.fn()} />
    );
    // Before the reload: [2]'s map, then [4]'s.
    const before = cells();
    const page = render(map(1, before));
    const atTwo = colours();
    page.rerender(map(3, before));
    const atFour = colours();
    page.unmount();
    // After it: a new page, new snapshot objects, [4]'s map first.
    const after = cells();
    const reloaded = render(map(3, after));
    expect(colours()).toEqual(atFour);
    reloaded.rerender(map(1, after));
    expect(colours()).toEqual(atTwo);
    // Cell [1] (the model's weights) is in both, in one colour
    expect(atTwo.get('Cell [1]')).toBeDefined();
    expect(atFour.get('Cell [1]')).toBe(atTwo.get('Cell [1]'));
  });

  it('colours a snapshot with no notebook cells by allocation site', () => {
    const snapshot = snapshotOf(2);
    const { container } = render(
      <SegmentMap
        snapshot={snapshot}
        cells={new CellCodeNames([])}
        showAllFrames={false}
        trans={trans}
        onReveal={jest.fn()}
      />
    );
    const legend = screen.getByRole('list', { name: 'Colours of the segment map' });
    const sites = Array.from(legend.querySelectorAll('li')).filter(li => / \(.*:\d+\)$/.test(li.textContent!));
    expect(sites.length).toBeGreaterThan(1);
    // each site its own colour
    const groups = new Set(
      Array.from(
        container.querySelectorAll('rect[class*="jp-mod-group"]'),
        rect => rect.getAttribute('class')!.match(/jp-mod-group\d/)![0]
      )
    );
    expect(groups.size).toBeGreaterThan(1);
  });
});
