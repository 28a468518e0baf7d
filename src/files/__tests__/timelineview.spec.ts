// The diff of two moments of a file's timeline, as a person reads it.
import { nullTranslator } from '@jupyterlab/translation';
import { CellCodeNames } from '../../engine';
import { showDiff } from '../timelineview';
import type { IMomentDiff } from '../../worker/files';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

function diff(sites: IMomentDiff['sites']): IMomentDiff {
  const bytes = sites.reduce((n, s) => n + s.netBytes, 0);
  return {
    from: 3,
    to: 7,
    fromBytes: 2 ** 20,
    toBytes: 2 ** 20 + bytes,
    bornBytes: bytes,
    freedBytes: 0,
    netBytes: bytes,
    sites,
    siteCount: sites.length
  };
}

describe('a diff of two moments', () => {
  it('says nothing changed between two moments that hold the same blocks, with no empty table', () => {
    const node = document.createElement('div');
    showDiff(node, diff([]), new CellCodeNames([]), trans);
    expect(node.querySelector('table')).toBeNull();
    expect(node.textContent).toContain('From moment 4 (1.00 MiB allocated) to moment 8 (1.00 MiB)');
    expect(node.textContent).toContain('No block was allocated or freed between these moments.');
  });

  it('lists the sites of two moments that differ', () => {
    const node = document.createElement('div');
    const site = { filename: 'train.py', line: 12, name: 'step' };
    showDiff(
      node,
      diff([{ netBytes: 2 ** 20, bornBytes: 2 ** 20, freedBytes: 0, count: 2, site, frames: [site] }]),
      new CellCodeNames([]),
      trans
    );
    const rows = [...node.querySelectorAll('tbody tr')].map(r => r.textContent);
    expect(rows).toEqual(['+1.00 MiB1.00 MiB0 B2step (train.py:12)']);
  });
});
