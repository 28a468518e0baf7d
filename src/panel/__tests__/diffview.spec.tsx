import { fireEvent, render, screen, within } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import {
  CellCodeNames,
  diffSnapshots,
  FrameTable,
  groupBySite,
  murmur2,
  normalizeSnapshot,
  readSnapshot
} from '../../engine';
import { DiffView } from '../diffview';
import { StackView } from '../../components/stack';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const REC = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

function recordedDiff() {
  const frames = new FrameTable();
  const read = (k: number) =>
    readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))), frames);
  const diff = diffSnapshots(read(1), read(2));
  const cells = new CellCodeNames(
    manifest.cells.map((c: any, i: number) => ({
      id: `cell-${i}`,
      source: c.source,
      executionCount: c.execution_count
    }))
  );
  return { diff, cells };
}

describe('DiffView on a real H200 diff', () => {
  it('lists sites with stable hooks, largest first, and expands into the stack and blocks', () => {
    const { diff, cells } = recordedDiff();
    const onReveal = jest.fn();
    const { container } = render(
      <DiffView
        diff={diff}
        groups={groupBySite(diff)}
        showAllFrames={false}
        onShowAllFrames={() => undefined}
        cells={cells}
        trans={trans}
        onReveal={onReveal}
        caption="After cell [3], against cell [2]"
      />
    );
    // Each figure stays with its unit and its word, so a narrow panel never prints "0" above "B".
    expect(screen.getByRole('status').textContent).toBe(
      'Born\u00a0321\u00a0MiB in\u00a026 blocks, freed\u00a00\u00a0B in\u00a00 blocks, net +321\u00a0MiB'
    );
    const rows = container.querySelectorAll('[data-cuda-memdiff-site]');
    expect(rows[0].getAttribute('data-cuda-memdiff-site')).toMatch(/ipykernel_447\/3447429980\.py:3$/);
    expect(Number(rows[0].getAttribute('data-cuda-memdiff-net-bytes'))).toBe(504406016 - 167813120);
    const head = within(rows[0] as HTMLElement).getAllByRole('button')[0];
    expect(head.textContent).toContain('Cell [3], line 3');
    expect(head.getAttribute('aria-expanded')).toBe('false');
    fireEvent.click(head);
    expect(head.getAttribute('aria-expanded')).toBe('true');
    const link = within(rows[0] as HTMLElement).getByRole('button', { name: 'Cell [3], line 3' });
    // cells 2 and 4 have the same source, so the frame names both: the ambiguity stays visible
    const frame = link.closest('li')!;
    expect(frame.textContent).toContain('Cell [3], line 3 or Cell [5], line 3');
    expect(frame.textContent).toContain('preds.append(model(b))');
    expect(frame.textContent).toContain('cells with identical source');
    fireEvent.click(link);
    expect(onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'cell-2' }), line: 3 });
    const table = within(rows[0] as HTMLElement).getByRole('table', { name: 'Blocks born' });
    // a block's state in words; torch's own term (before: the cell's text) where a PyTorch user looks, its tooltip
    const state = within(table).getAllByRole('row')[1].lastElementChild!;
    expect(state.textContent).toBe('allocated');
    expect(state.getAttribute('title')).toBe("torch's block state: active_allocated");
  });

  it('reports the show-all-frames switch', () => {
    const { diff, cells } = recordedDiff();
    const onShow = jest.fn();
    render(
      <DiffView
        diff={diff}
        groups={groupBySite(diff)}
        showAllFrames={false}
        onShowAllFrames={onShow}
        cells={cells}
        trans={trans}
        onReveal={() => undefined}
        caption=""
      />
    );
    fireEvent.click(screen.getByLabelText('Show all frames'));
    expect(onShow).toHaveBeenCalledWith(true);
  });
});

describe('StackView', () => {
  it('renders text from snapshots as text, never as markup', () => {
    const frames = new FrameTable();
    const evil = '<img src=x onerror=alert(1)>';
    const snapshot = normalizeSnapshot(
      {
        segments: [
          {
            address: 0,
            total_size: 1024,
            blocks: [
              {
                address: 0,
                size: 512,
                state: 'active_allocated',
                frames: [{ name: evil, filename: `/home/${evil}.py`, line: 1 }]
              }
            ]
          }
        ]
      },
      frames
    );
    const source = `x = 1  # ${evil}`;
    const cellStack = frames.internStack([frames.internFrame('<module>', `/tmp/ipykernel_1/${murmur2(source)}.py`, 1)]);
    const cells = new CellCodeNames([{ id: 'a', source, executionCount: 4 }]);
    const { container } = render(
      <div>
        <StackView
          frames={frames}
          stack={snapshot.blocks[0].stack}
          filter={{}}
          cells={cells}
          trans={trans}
          onReveal={() => undefined}
        />
        <StackView
          frames={frames}
          stack={cellStack}
          filter={{}}
          cells={cells}
          trans={trans}
          onReveal={() => undefined}
        />
      </div>
    );
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain(evil);
    expect(container.textContent).toContain(`/home/${evil}.py:1`);
    expect(screen.getByRole('button', { name: 'Cell [4], line 1' }).parentElement!.textContent).toContain(`# ${evil}`);
  });

  it('collapses C++ frames and explains a missing stack', () => {
    const frames = new FrameTable();
    const stack = frames.internStack([
      frames.internFrame('at::empty', '??', 0),
      frames.internFrame('f', '/home/me/a.py', 3)
    ]);
    const { container, rerender } = render(
      <StackView
        frames={frames}
        stack={stack}
        filter={{}}
        cells={new CellCodeNames([])}
        trans={trans}
        onReveal={() => undefined}
      />
    );
    expect(container.textContent).toContain('[1 C++ frame]');
    rerender(
      <StackView
        frames={frames}
        stack={0}
        filter={{}}
        cells={new CellCodeNames([])}
        trans={trans}
        onReveal={() => undefined}
      />
    );
    expect(container.textContent).toContain('No Python stack');
  });
});

describe('A frame of a run the cell was edited after', () => {
  const LEAKY = 'preds = []\nfor b in batches:\n    preds.append(model(b))';
  const FIXED =
    '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';

  function renderFrameOf(now: string) {
    const frames = new FrameTable();
    const stack = frames.internStack([frames.internFrame('<module>', `/tmp/ipykernel_7/${murmur2(LEAKY)}.py`, 3)]);
    const cells = new CellCodeNames(
      [{ id: 'preds', source: now, executionCount: 5 }],
      [{ id: 'preds', source: now, sourceAsRun: LEAKY, executionCount: 3, kernel: 1 }]
    );
    const onReveal = jest.fn();
    const { container } = render(
      <StackView frames={frames} stack={stack} filter={{}} cells={cells} trans={trans} onReveal={onReveal} />
    );
    return { container, onReveal };
  }

  it('is a link that says the cell was edited, shows the line as run, and lands where that code is now', () => {
    const { container, onReveal } = renderFrameOf(FIXED);
    const link = screen.getByRole('button', { name: 'Cell [3] in kernel 1, line 3 (since edited)' });
    expect(link.getAttribute('title')).toBe(
      'The cell was edited after this run. Its line 3 then read: preds.append(model(b)). Go to that code, now line 5.'
    );
    expect(container.querySelector('.jp-CudaMemdiffStack-source')!.textContent).toBe('preds.append(model(b))');
    fireEvent.click(link);
    expect(onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'preds' }), line: 5 });
  });

  it('lands on the cell when the edit removed that code', () => {
    const { onReveal } = renderFrameOf('preds = [model(b).detach() for b in batches]');
    const link = screen.getByRole('button', { name: 'Cell [3] in kernel 1, line 3 (since edited)' });
    expect(link.getAttribute('title')).toBe(
      'The cell was edited after this run. Its line 3 then read: preds.append(model(b)). That code is no longer in the cell: go to the cell.'
    );
    fireEvent.click(link);
    expect(onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'preds' }), line: null });
  });

  it('names its site in the diff as edited, apart from the same line now', () => {
    const frames = new FrameTable();
    const block = (address: number, code: string) => ({
      address,
      size: 512,
      state: 'active_allocated',
      frames: [{ name: '<module>', filename: `/tmp/ipykernel_7/${murmur2(code)}.py`, line: 3 }]
    });
    const before = normalizeSnapshot({ segments: [{ address: 0, total_size: 2048, blocks: [] }] }, frames);
    const after = normalizeSnapshot(
      { segments: [{ address: 0, total_size: 2048, blocks: [block(0, LEAKY), block(512, FIXED)] }] },
      frames
    );
    const diff = diffSnapshots(before, after);
    const cells = new CellCodeNames(
      [{ id: 'preds', source: FIXED, executionCount: 5 }],
      [{ id: 'preds', source: FIXED, sourceAsRun: LEAKY, executionCount: 3 }]
    );
    const { container } = render(
      <DiffView
        diff={diff}
        groups={groupBySite(diff)}
        showAllFrames={false}
        onShowAllFrames={() => undefined}
        cells={cells}
        trans={trans}
        onReveal={() => undefined}
        caption="After cell [5]"
      />
    );
    const labels = Array.from(container.querySelectorAll('.jp-CudaMemdiffSite-label')).map(l => l.textContent);
    expect(labels.sort()).toEqual(['Cell [3], line 3 (since edited)', 'Cell [5], line 3']);
  });
});

describe('A frame of a run of a deleted cell', () => {
  const LEAKY = 'preds = []\nfor b in batches:\n    preds.append(model(b))';
  const leakyFile = `/tmp/ipykernel_7/${murmur2(LEAKY)}.py`;
  // The notebook after the user deleted the leaking cell: only the model's cell is left.
  const notebook = [{ id: 'model', source: 'model = make()', executionCount: 1 }];
  const gone = { id: 'preds', source: LEAKY, executionCount: 3, deleted: true };

  function renderFrame(deleted: typeof gone & { kernel?: number }) {
    const frames = new FrameTable();
    const stack = frames.internStack([frames.internFrame('<module>', leakyFile, 3)]);
    const onReveal = jest.fn();
    const { container } = render(
      <StackView
        frames={frames}
        stack={stack}
        filter={{}}
        cells={new CellCodeNames(notebook, [deleted])}
        trans={trans}
        onReveal={onReveal}
      />
    );
    return { container, onReveal };
  }

  it('says the cell was deleted, shows the line as it ran, and is no link', () => {
    const { container, onReveal } = renderFrame(gone);
    const frame = container.querySelector('.jp-CudaMemdiffStack-cell')!;
    expect(frame.textContent).toBe('A deleted cell [3], line 3preds.append(model(b))');
    expect(container.querySelector('.jp-CudaMemdiffStack-source')!.textContent).toBe('preds.append(model(b))');
    // not a link that does nothing: no button, no link, and a click asks for no cell
    expect(screen.queryByRole('button')).toBeNull();
    expect(screen.queryByRole('link')).toBeNull();
    const label = screen.getByText('A deleted cell [3], line 3');
    expect(label.getAttribute('title')).toBe(
      'The cell was deleted after this run: there is no cell to go to. Its line 3 read: preds.append(model(b))'
    );
    fireEvent.click(label);
    expect(onReveal).not.toHaveBeenCalled();
  });

  it("names the run's kernel as the run names do once the session restarted", () => {
    renderFrame({ ...gone, kernel: 1 });
    expect(screen.getByText('A deleted cell [3] in kernel 1, line 3')).toBeTruthy();
  });

  it('names its site in the diff, not its file', () => {
    const frames = new FrameTable();
    const block = {
      address: 0,
      size: 512,
      state: 'active_allocated',
      frames: [{ name: '<module>', filename: leakyFile, line: 3 }]
    };
    const before = normalizeSnapshot({ segments: [{ address: 0, total_size: 2048, blocks: [] }] }, frames);
    const after = normalizeSnapshot({ segments: [{ address: 0, total_size: 2048, blocks: [block] }] }, frames);
    const diff = diffSnapshots(before, after);
    const { container } = render(
      <DiffView
        diff={diff}
        groups={groupBySite(diff)}
        showAllFrames={false}
        onShowAllFrames={() => undefined}
        cells={new CellCodeNames(notebook, [gone])}
        trans={trans}
        onReveal={() => undefined}
        caption="After cell [3]"
      />
    );
    const labels = Array.from(container.querySelectorAll('.jp-CudaMemdiffSite-label')).map(l => l.textContent);
    expect(labels).toEqual(['A deleted cell [3], line 3']);
    expect(container.textContent).not.toContain(leakyFile);
  });
});

describe("DiffView of two runs' snapshots", () => {
  it('says so above the figures, with what tells, and says nothing of one run', () => {
    const { diff, cells } = recordedDiff();
    const props = {
      diff,
      groups: groupBySite(diff),
      showAllFrames: false,
      onShowAllFrames: () => undefined,
      cells,
      trans,
      onReveal: () => undefined,
      caption: 'b.pickle, against a.pickle'
    };
    const { container, rerender } = render(
      <DiffView
        {...props}
        differentRuns={{
          evidence: [
            { code: 'device-count', before: 1, after: 2 },
            { code: 'segments-apart', beforeSegments: 5, afterSegments: 23 }
          ]
        }}
      />
    );
    const note = container.querySelector('.jp-CudaMemdiffDiff-runs')!;
    expect(note.textContent).toBe(
      'These snapshots look like they come from different runs (one saw 1 device, the other 2; none of the 5 ' +
        'segments of one is among the 23 of the other), so the figures below are not a leak: every block counts ' +
        'as freed or born.'
    );
    // Above the figures it qualifies.
    expect(note.compareDocumentPosition(screen.getByRole('status')) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    rerender(<DiffView {...props} differentRuns={null} />);
    expect(container.querySelector('.jp-CudaMemdiffDiff-runs')).toBeNull();
  });
});
