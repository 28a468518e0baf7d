import { sleep } from '@jupyterlab/testing';
import { Widget } from '@lumino/widgets';
import { MemdiffPanel } from '..';
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

  it('carries the stable id and an accessible name', () => {
    expect(panel.id).toBe(PANEL_ID);
    expect(document.getElementById(PANEL_ID)).toBe(panel.node);
    expect(panel.node.getAttribute('aria-label')).toBe('CUDA Memory');
    expect(panel.title.caption).toBe('CUDA Memory');
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
