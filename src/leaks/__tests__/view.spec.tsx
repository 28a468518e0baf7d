import { fireEvent, render, screen, within } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import { SnapshotStore } from '../../capture/store';
import { CellCodeNames, holderKey, IHolderAnswer, isAllocated } from '../../engine';
import { DiffPanelModel } from '../../panel/model';
import { LeakFinderModel } from '../model';
import { holdersNoteText, LeakView, problemText } from '../view';
import { recordedStore } from './recorded';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const REC = path.resolve(__dirname, '../../../test-data/recordings/out_cache--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function setup(
  sources = manifest.cells.map((c: { source: string }) => c.source),
  requestHolders?: (store: SnapshotStore) => Promise<IHolderAnswer>
) {
  const { store } = recordedStore(REC);
  const cells = () => sources.map((source: string, i: number) => ({ id: `cell-${i}`, source }));
  const panel = new DiffPanelModel();
  panel.setNotebook({
    title: 'out_cache.ipynb',
    store,
    cells,
    requestHolders: requestHolders && (() => requestHolders(store))
  });
  const leaks = new LeakFinderModel(panel);
  const handlers = { onShowCell: jest.fn(), onReveal: jest.fn(), onShowDiff: jest.fn() };
  const view = render(
    <LeakView model={leaks} frames={store.frames} cells={new CellCodeNames(cells())} trans={trans} {...handlers} />
  );
  return { leaks, handlers, ...view };
}

describe('LeakView on the out_cache session', () => {
  it('shows nothing until the finder runs, then the cell to look at first and why', async () => {
    const { leaks, container, handlers } = setup();
    expect(container.textContent).toBe('');
    let run: ReturnType<typeof leaks.run>;
    React.act(() => void (run = leaks.run()));
    // ranking in the engine worker: the section says so meanwhile
    expect(screen.getByRole('status').textContent).toBe('Ranking the cells\u2026');
    await React.act(async () => void (await run.findings));
    expect(screen.getByRole('status').textContent).toMatch(/^Look at Cell \[2\] first\. No kernel to ask/);
    const top = container.querySelector('.jp-CudaMemdiffLeak.jp-mod-top') as HTMLElement;
    expect(top.getAttribute('data-verdict')).toBe('leak');
    expect(top.getAttribute('data-cell-id')).toBe('cell-1');
    expect(within(top).getByText('Leak')).toBeTruthy();
    expect(within(top).getByText('64.0 MiB')).toBeTruthy();
    expect(top.querySelector('.jp-CudaMemdiffLeak-holders code')!.textContent).toBe('Out[2]');
    expect(within(top).getByLabelText('What to do').textContent).toBe('End the line with ; or del Out[2].');
    expect(top.querySelector('.jp-CudaMemdiffLeak-reasons')!.textContent).toBe(
      "64.0 MiB made by the cell's last expression is kept by the output cache Out[2]."
    );
    expect(within(top).getByText('del Out[2]').tagName).toBe('CODE');
    fireEvent.click(within(top).getByText('Cell [2]'));
    expect(handlers.onShowCell).toHaveBeenCalledWith(expect.objectContaining({ label: 'Cell [2]' }));
    // each cell's button names its cell for a screen reader, after the words it shows
    fireEvent.click(within(top).getByRole('button', { name: 'Show its diff, Cell [2]' }));
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

  it('renders the names the kernel gives as text, never as markup', async () => {
    // A dict key in a holder's path is whatever the user's code made it: here, markup.
    const evil = `cache['<img src=x onerror="window.__pwned=1">']`;
    const { leaks, container } = setup(undefined, store => {
      const last = store.records[store.records.length - 1].snapshot;
      const holders = new Map(
        last.blocks
          .filter(isAllocated)
          .map(b => [holderKey(b.device, b.address), [{ kind: 'output-cache' as const, path: evil }]])
      );
      return Promise.resolve({ holders, partial: false, elapsedMs: 1, replay: null, error: null });
    });
    await React.act(async () => void (await leaks.run().refined));
    const top = container.querySelector('.jp-CudaMemdiffLeak.jp-mod-top') as HTMLElement;
    // the name reaches the view, in the holders and in the finding the kernel's names refine ...
    expect(top.querySelector('.jp-CudaMemdiffLeak-holders code')!.textContent).toBe(evil);
    expect(top.querySelector('.jp-CudaMemdiffLeak-reasons')!.textContent).toContain(evil);
    // ... as text only
    expect(container.querySelector('img')).toBeNull();
    expect((window as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it("words the model's codes: holder notes and why nothing is ranked", () => {
    expect(holdersNoteText({ kind: 'partial', elapsedMs: 2001 }, trans)).toBe(
      'The kernel ran out of time after 2001 ms: holders are partial.'
    );
    expect(holdersNoteText({ kind: 'failed', reason: 'timeout' }, trans)).toMatch(
      /^The kernel could not say who holds the memory \(timeout\)/
    );
    expect(holdersNoteText({ kind: 'replay', session: 's', recording: null }, trans)).toMatch(
      /^Replaying a recorded session: no live tensors/
    );
    const recording = { scenario: 'gpu_memory_demo', device: 'NVIDIA H200', device_count: 1 };
    expect(
      holdersNoteText({ kind: 'recorded', session: 'gpu_memory_demo--holders', recording, partial: false }, trans)
    ).toBe(
      'Replaying a recorded session (NVIDIA H200): holders as the kernel named them when the session was recorded.'
    );
    expect(problemText('no-cuda', trans)).toBe("This kernel's torch has no CUDA: there is no GPU memory to rank.");
    expect(problemText('no-snapshots', trans)).toBe('No GPU memory snapshots yet: run some cells first.');
  });
});

/** A finder over `store`, followed as the notebook `title` with `cells`, drawn in a LeakView. */
function renderFinder(title: string, store: SnapshotStore, cells: () => { id: string; source: string }[]) {
  const panel = new DiffPanelModel();
  panel.setNotebook({ title, store, cells });
  const leaks = new LeakFinderModel(panel);
  const handlers = { onShowCell: jest.fn(), onReveal: jest.fn(), onShowDiff: jest.fn() };
  const view = render(
    <LeakView model={leaks} frames={store.frames} cells={new CellCodeNames(cells())} trans={trans} {...handlers} />
  );
  return { leaks, ...view };
}

describe('LeakView after a cell ran since the findings', () => {
  it('keeps them, says they leave the new runs out, and goes quiet once the finder runs again', async () => {
    // The demo's first three cells ranked; then its fourth runs, as a person goes on with the notebook.
    const demo = path.resolve(__dirname, '../../../test-data/live/gpu_memory_demo--holders');
    const { manifest: recorded, store, addCell } = recordedStore(demo, 3);
    const cells = () => recorded.cells.map((c, i) => ({ id: `cell-${i}`, source: c.source ?? '' }));
    const { leaks, container } = renderFinder('gpu_memory_demo.ipynb', store, cells);
    await React.act(async () => void (await leaks.run().findings));
    const since = () => container.querySelector('.jp-CudaMemdiffLeaks-since')?.textContent ?? null;
    expect(since()).toBeNull();
    React.act(() => addCell(3));
    expect(since()).toBe(
      'A cell ran since these findings, which leave it out: run Find Leaking Cell again to rank it.'
    );
    expect(screen.getByRole('status').textContent).toMatch(/^Look at Cell \[3\] first\./);
    await React.act(async () => void (await leaks.run().findings));
    expect(since()).toBeNull();
  });
});

describe('LeakView on a session recorded with allocation history off', () => {
  // eval_without_no_grad as history `off` records it: every block's stack empty, no trace.
  const dir = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
  const evalManifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));

  it('says that no stacks were recorded and how to record them, not "No cell leaks"', async () => {
    // Before: every cell "Retained: keeps … of gradients and workspaces of the backward pass", and "No cell leaks".
    const { store: recorded } = recordedStore(dir);
    const store = new SnapshotStore();
    for (const r of recorded.records) {
      const s = r.snapshot;
      const snapshot = {
        ...s,
        traces: [],
        blocks: s.blocks.map(b => ({ ...b, stack: 0 })),
        segments: s.segments.map(g => ({ ...g, stack: 0 }))
      };
      store.add({ ...r, snapshot });
    }
    const cells = () =>
      evalManifest.cells.map((c: { source: string }, i: number) => ({ id: `cell-${i}`, source: c.source }));
    const { leaks, container } = renderFinder('eval_without_no_grad.ipynb', store, cells);
    await React.act(async () => void (await leaks.run().findings));
    const status = screen.getByRole('status');
    expect(status.textContent).not.toMatch(/No cell leaks/);
    expect(status.textContent).toMatch(
      /^No allocation stacks were recorded \(allocation history was off\): for 513 MiB in 5 cell runs, .*whether it leaks is unknown.* Set Allocation history to all \(Settings Editor, CUDA Memory\) and run the cells again\./
    );
    expect(within(status).getByText('all').tagName).toBe('CODE');
    const entries = [...container.querySelectorAll('.jp-CudaMemdiffLeak')] as HTMLElement[];
    expect(entries.map(e => e.getAttribute('data-verdict'))).toEqual([
      'unknown',
      'unknown',
      'unknown',
      'unknown',
      'unknown'
    ]);
    expect(container.querySelector('.jp-CudaMemdiffLeak.jp-mod-top')).toBeNull();
    const first = entries[0];
    expect(within(first).getByText('Unknown')).toBeTruthy();
    expect(within(first).getByText('low confidence')).toBeTruthy();
    expect(first.querySelector('.jp-CudaMemdiffLeak-reasons')!.textContent).toBe(
      '201 MiB has no allocation stack (history was off): what made it, and where, is unknown.'
    );
    expect(container.textContent).not.toMatch(/backward pass/);
  });
});

describe('LeakView naming a run its cell no longer shows', () => {
  // The demo after a restart, its cells run again in kernel 2 ([1] to [4]); `preds = []` (cell 5/10 of the
  // notebook, after markdown cells) is the leak. Each cell's prompt shows `prompts[k]` now.
  const DEMO = path.resolve(__dirname, '../../../test-data/live/gpu_memory_demo--holders');
  const PLACES = [2, 3, 5, 7];

  async function headline(prompts: readonly (number | null)[]) {
    const { manifest: demo, store, addCell } = recordedStore(DEMO);
    store.newKernelSession();
    demo.cells.forEach((_, k) => addCell(k));
    const cells = () =>
      demo.cells.map((c, i) => ({
        id: `cell-${i}`,
        source: c.source,
        position: { index: PLACES[i], total: 10 },
        prompt: prompts[i]
      }));
    const panel = new DiffPanelModel();
    panel.setNotebook({ title: 'gpu_memory_demo.ipynb', store, cells });
    const leaks = new LeakFinderModel(panel);
    const handlers = { onShowCell: jest.fn(), onReveal: jest.fn(), onShowDiff: jest.fn() };
    const view = render(
      <LeakView model={leaks} frames={store.frames} cells={new CellCodeNames(cells())} trans={trans} {...handlers} />
    );
    await React.act(async () => void (await leaks.run().findings));
    const top = view.container.querySelector('.jp-CudaMemdiffLeak.jp-mod-top') as HTMLElement;
    const earlier = [...view.container.querySelectorAll('.jp-CudaMemdiffLeak-earlier')].map(e => e.textContent);
    const text = screen.getByRole('status').textContent!.replace(/ No kernel to ask.*$/, '');
    const notes = [...view.container.querySelectorAll('.jp-CudaMemdiffLeaks-fine')].map(e => e.textContent);
    view.unmount();
    return { text, top, earlier, notes };
  }

  it('names it by its count where the prompt shows that run', async () => {
    const { text, earlier } = await headline([1, 2, 3, 4]);
    expect(text).toBe('Look at Cell [3] in kernel 2 first.');
    expect(earlier).toEqual([]);
  });

  it('names the cell by its first line and place once it ran again, and the run as the one before', async () => {
    // Cell 3 ran again as [7] and the replay had no snapshot for that run: the leak is its run [3].
    const { text, top, earlier } = await headline([1, 2, 7, 4]);
    expect(text).toBe(
      'Look at the highlighted cell first (preds = [], cell 5/10): its run [3] in kernel 2, before the one its ' +
        'prompt shows now, [7].'
    );
    expect(top.getAttribute('data-cell-id')).toBe('cell-2');
    expect(within(top).getByText('an earlier run: the cell shows [7] now')).toBeTruthy();
    expect(earlier).toHaveLength(1);
  });

  it('says the prompt no longer shows the run where it shows none (cleared, or running)', async () => {
    const { text, earlier } = await headline([1, 2, null, 4]);
    expect(text).toBe(
      'Look at the highlighted cell first (preds = [], cell 5/10): its run [3] in kernel 2, which its prompt no ' +
        'longer shows.'
    );
    expect(earlier).toEqual(['an earlier run: the cell shows no count now']);
  });

  it('says once, above the list, that no cell shows a count, where none does (cleared, or reopened)', async () => {
    const { text, earlier, notes } = await headline([null, null, null, null]);
    expect(text).toBe(
      'Look at the highlighted cell first (preds = [], cell 5/10): its run [3] in kernel 2, which its prompt no ' +
        'longer shows.'
    );
    expect(earlier).toEqual([]);
    expect(notes[0]).toBe(
      'No cell shows a count now (its outputs were cleared, or the notebook was opened without them): each entry ' +
        'names its run as the chart does; a click on it highlights its cell.'
    );
  });
});
