import { sleep } from '@jupyterlab/testing';
import { Widget } from '@lumino/widgets';
import { MemdiffPanel } from '..';
import { SnapshotStore } from '../../capture/store';
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
