import { sleep } from '@jupyterlab/testing';
import * as fs from 'fs';
import * as path from 'path';
import { Widget } from '@lumino/widgets';
import { MemdiffPanel } from '..';
import { SnapshotStore } from '../../capture/store';
import { readSnapshot } from '../../engine';
import { PANEL_ID } from '../../tokens';

describe('MemdiffPanel', () => {
  let panel: MemdiffPanel;

  beforeEach(() => {
    panel = new MemdiffPanel();
    Widget.attach(panel, document.body);
  });

  afterEach(() => {
    panel.dispose();
  });

  it('carries the stable id and a region named by its heading', () => {
    expect(panel.id).toBe(PANEL_ID);
    expect(document.getElementById(PANEL_ID)).toBe(panel.node);
    expect(panel.node.getAttribute('role')).toBe('region');
    const heading = document.getElementById(panel.node.getAttribute('aria-labelledby')!);
    expect(heading?.tagName).toBe('H2');
    expect(heading?.textContent).toBe('CUDA Memory');
    // in JupyterLab's side panel header, above the toolbar and the content
    expect(heading?.parentElement).toBe(panel.header.node);
    expect(panel.title.caption).toBe('CUDA Memory');
  });

  it('names the notebook it follows in its header, and nothing when it follows none', () => {
    const name = () => panel.header.node.querySelector('.jp-CudaMemdiffPanel-notebook') as HTMLElement;
    expect(name().classList).toContain('lm-mod-hidden');
    panel.model.setNotebook({ title: 'train.ipynb', store: new SnapshotStore(), cells: () => [] });
    expect(name().textContent).toBe('train.ipynb');
    expect(name().classList).not.toContain('lm-mod-hidden');
    panel.model.setNotebook(null);
    expect(name().classList).toContain('lm-mod-hidden');
  });

  it('names a run by the code it ran, where its cell was edited since', async () => {
    const demo = path.resolve(__dirname, '../../../test-data/recordings/gpu_memory_demo--python');
    const manifest = JSON.parse(fs.readFileSync(path.join(demo, 'manifest.json'), 'utf-8'));
    const store = new SnapshotStore();
    manifest.cells.forEach((c: { snapshot_file: string; source: string }, k: number) =>
      store.add({
        cellId: `cell-${k}`,
        executionCount: k + 1,
        reason: 'cell',
        seq: k + 1,
        snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(demo, c.snapshot_file))), store.frames),
        devices: [],
        error: null,
        source: c.source,
        replay: null
      })
    );
    const now = manifest.cells.map((c: { source: string }) => c.source);
    now[2] =
      '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';
    panel.model.setNotebook({
      title: 'demo.ipynb',
      store,
      cells: () => now.map((source: string, k: number) => ({ id: `cell-${k}`, source }))
    });
    let options: string[] = [];
    for (let i = 0; i < 100 && !options.length; i++) {
      await sleep(20);
      options = Array.from(panel.node.querySelectorAll('[data-cuda-memdiff-side="after"] option')).map(
        o => o.textContent ?? ''
      );
    }
    expect(options).toContain('[3] preds = []');
    expect(options.some(o => o.includes('evaluation only'))).toBe(false);
    // a native select cuts a long label short: hovering it gives the chosen one whole
    const after = panel.node.querySelector('[data-cuda-memdiff-side="after"]') as HTMLSelectElement;
    expect(after.title).toBe(after.selectedOptions[0].textContent);
    expect(after.title).not.toBe('');
  });

  it('renders the empty state until snapshots exist', async () => {
    // React 18 renders asynchronously after the widget's update request.
    let status: Element | null = null;
    for (let i = 0; i < 100 && !status; i++) {
      await sleep(20);
      status = panel.node.querySelector('[role="status"]');
    }
    expect(status?.textContent).toContain('No GPU memory snapshots yet');
  });
});
