import { fireEvent, render, screen, within } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import { CellCodeNames } from '../../engine';
import { DiffPanelModel } from '../../panel/model';
import { LeakFinderModel } from '../model';
import { holdersNoteText, LeakView, problemText } from '../view';
import { recordedStore } from './recorded';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const REC = path.resolve(__dirname, '../../../test-data/recordings/out_cache--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function setup(sources = manifest.cells.map((c: { source: string }) => c.source)) {
  const { store } = recordedStore(REC);
  const cells = () => sources.map((source: string, i: number) => ({ id: `cell-${i}`, source }));
  const panel = new DiffPanelModel();
  panel.setNotebook({ title: 'out_cache.ipynb', store, cells });
  const leaks = new LeakFinderModel(panel);
  const handlers = { onShowCell: jest.fn(), onReveal: jest.fn(), onShowDiff: jest.fn() };
  const view = render(
    <LeakView model={leaks} frames={store.frames} cells={new CellCodeNames(cells())} trans={trans} {...handlers} />
  );
  return { leaks, handlers, ...view };
}

describe('LeakView on the out_cache session', () => {
  it('shows nothing until the finder runs, then the cell to look at first and why', () => {
    const { leaks, container, handlers } = setup();
    expect(container.textContent).toBe('');
    React.act(() => void leaks.run());
    expect(screen.getByRole('status').textContent).toMatch(/^Look at Cell \[2\] first\. No kernel to ask/);
    const top = container.querySelector('.jp-CudaMemdiffLeak.jp-mod-top') as HTMLElement;
    expect(top.getAttribute('data-verdict')).toBe('leak');
    expect(top.getAttribute('data-cell-id')).toBe('cell-1');
    expect(within(top).getByText('Leak')).toBeTruthy();
    expect(within(top).getByText('64.0 MiB')).toBeTruthy();
    expect(top.querySelector('.jp-CudaMemdiffLeak-holders code')!.textContent).toBe('Out[2]');
    expect(within(top).getByLabelText('What to do').textContent).toBe('end the line with ; or del Out[2]');
    expect(within(top).getByText('del Out[2]').tagName).toBe('CODE');
    fireEvent.click(within(top).getByText('Cell [2]'));
    expect(handlers.onShowCell).toHaveBeenCalledWith(expect.objectContaining({ label: 'Cell [2]' }));
    fireEvent.click(within(top).getByText('Show its diff'));
    expect(handlers.onShowDiff.mock.calls[0][0].record.cellId).toBe('cell-1');
    // cells that left nothing behind are counted, not listed
    expect(container.querySelectorAll('.jp-CudaMemdiffLeak')).toHaveLength(1);
    expect(screen.getByText('2 more cell runs left nothing behind.')).toBeTruthy();
    // the evidence opens onto the stack, whose cell frame links back
    fireEvent.click(within(top).getByText(/^Cell \[.\], line 1$/));
    expect(handlers.onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'cell-1' }), line: 1 });
    fireEvent.click(screen.getByLabelText('Close the leak finder'));
    expect(container.textContent).toBe('');
  });

  it('renders sources and names as text, never as markup', () => {
    const evil = '<img src=x onerror="window.__pwned=1">';
    const { leaks, container } = setup([manifest.cells[0].source, `${manifest.cells[1].source}  # ${evil}`, manifest.cells[2].source]);
    React.act(() => void leaks.run());
    expect(container.querySelector('img')).toBeNull();
  });

  it('words the model\'s codes: holder notes and why nothing is ranked', () => {
    expect(holdersNoteText({ kind: 'partial', elapsedMs: 2001 }, trans)).toBe('The kernel ran out of time after 2001 ms: holders are partial.');
    expect(holdersNoteText({ kind: 'failed', reason: 'timeout' }, trans)).toMatch(/^The kernel could not say who holds the memory \(timeout\)/);
    expect(holdersNoteText({ kind: 'replay', session: 's' }, trans)).toMatch(/^Replayed session \(s\): no live tensors/);
    expect(problemText('no-cuda', trans)).toBe("This kernel's torch has no CUDA: there is no GPU memory to rank.");
    expect(problemText('no-snapshots', trans)).toBe('No GPU memory snapshots yet: run some cells first.');
  });
});
