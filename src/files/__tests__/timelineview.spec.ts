// The diff of two moments of a file's timeline, as a person reads it.
import { nullTranslator } from '@jupyterlab/translation';
import { CellCodeNames, ITimelineSeries } from '../../engine';
import { renderTimeline, showDiff, TIMELINE_HEIGHT, TIMELINE_WIDTH, timelineGeometry } from '../timelineview';
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

  it('reads moments past a thousand as the axis and the moment line do, with separators', () => {
    const node = document.createElement('div');
    showDiff(node, { ...diff([]), from: 734, to: 1963 }, new CellCodeNames([]), trans);
    expect(node.textContent).toContain('From moment 735 (1.00 MiB allocated) to moment 1,964 (1.00 MiB)');
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

const GiB = 2 ** 30;

/** A file's timeline: five allocations of 20 GiB, as the H200's OOM dump holds, the cell boundaries and OOMs given. */
function series(boundaries: number[], ooms: ITimelineSeries['ooms'] = []): ITimelineSeries {
  return {
    device: 0,
    eventCount: 5,
    start: Float64Array.from([0, 1, 2, 3, 4]),
    low: Float64Array.from([20, 40, 60, 80, 100].map(g => g * GiB)),
    high: Float64Array.from([20, 40, 60, 80, 100].map(g => g * GiB)),
    boundaries,
    ooms,
    peakBytes: 100 * GiB,
    peakEvent: 4
  };
}

const source = {
  describe: () => Promise.resolve(null),
  diff: () => Promise.reject(new Error('not asked')),
  cells: () => new CellCodeNames([])
};

describe('the memory scale of a timeline', () => {
  it('marks round binary sizes from 0 B up to the top of the drawing, at their heights', () => {
    const g = timelineGeometry(series([]));
    // 5% headroom over the 100 GiB peak: the top is 105 GiB, the scale goes in 32 GiB steps below it
    expect(g.yMaxBytes).toBeCloseTo(105 * GiB);
    expect(g.ticks.map(t => t.label)).toEqual(['0 B', '32 GiB', '64 GiB', '96 GiB']);
    expect(g.ticks.map(t => t.y)).toEqual(g.ticks.map(t => g.y(t.bytes)));
    expect(g.ticks[0].y).toBe(TIMELINE_HEIGHT);
    expect(g.ticks.every(t => t.y >= 0 && t.y <= TIMELINE_HEIGHT)).toBe(true);
  });

  it('is drawn: a label and a grid line per mark, and the first and last moments', () => {
    const host = document.createElement('div');
    renderTimeline(host, series([]), source, trans);
    expect([...host.querySelectorAll('.jp-CudaMemdiffTimeline-tick')].map(t => t.textContent)).toEqual([
      '0 B',
      '32 GiB',
      '64 GiB',
      '96 GiB'
    ]);
    expect(host.querySelectorAll('.jp-CudaMemdiffTimeline-grid')).toHaveLength(4);
    expect(host.querySelector('.jp-CudaMemdiffTimeline-xAxis')?.textContent).toBe('moment 1moment 5');
    expect(host.textContent).not.toContain('top of the chart');
  });
});

describe('the caption of a timeline', () => {
  const caption = (boundaries: number[]) => {
    const host = document.createElement('div');
    renderTimeline(host, series(boundaries), source, trans);
    return host.querySelector('.jp-CudaMemdiffTimeline-caption')!.textContent;
  };

  it('names the dashed lines only where it draws cell boundaries', () => {
    const plain =
      'Allocated memory on cuda:0 over 5 allocations and frees (peak 100 GiB). Click a moment, then another, to see what changed between them.';
    expect(caption([])).toBe(plain);
    // The H200's OOM dump: its one boundary comes after the last allocation, on the drawing's edge.
    expect(caption([5])).toBe(plain);
    expect(caption([2, 4])).toContain('dashed lines are cell boundaries');
  });

  it('marks where an allocation failed, in sight at the right edge, and says what it asked for', () => {
    const host = document.createElement('div');
    renderTimeline(host, series([5], [{ at: 5, bytes: 60 * GiB }]), source, trans);
    expect(host.querySelector('.jp-CudaMemdiffTimeline-caption')!.textContent).toMatch(
      / The red line is where an allocation of 60\.0 GiB failed: out of memory\.$/
    );
    const marks = host.querySelectorAll('.jp-CudaMemdiffTimeline-oom');
    expect(marks).toHaveLength(1);
    const x = Number(marks[0].getAttribute('x1'));
    expect(x).toBeLessThan(TIMELINE_WIDTH);
    expect(x).toBeGreaterThan(TIMELINE_WIDTH - 5);
    expect(marks[0].textContent).toBe('out of memory after moment 5: an allocation of 60.0 GiB failed');
    expect(caption([5])).not.toContain('red line');
  });

  it('marks OOMs before the first moment and of unknown size, one line a pixel column', () => {
    const host = document.createElement('div');
    const ooms = [{ at: 0, bytes: 0 }, ...Array.from({ length: 1000 }, () => ({ at: 3, bytes: GiB }))];
    renderTimeline(host, series([], ooms), source, trans);
    const marks = host.querySelectorAll('.jp-CudaMemdiffTimeline-oom');
    expect(Array.from(marks, m => m.textContent)).toEqual([
      'out of memory before moment 1: an allocation failed',
      'out of memory after moment 3: an allocation of 1.00 GiB failed'
    ]);
    expect(Number(marks[0].getAttribute('x1'))).toBeGreaterThan(0);
    expect(host.querySelector('.jp-CudaMemdiffTimeline-caption')!.textContent).toMatch(
      / Red lines are where allocations failed \(1,001 times\): out of memory\.$/
    );
  });

  it('draws the boundaries between events, none on the edges', () => {
    expect(timelineGeometry(series([0, 2, 5])).boundaries).toEqual([2]);
    const host = document.createElement('div');
    renderTimeline(host, series([0, 2, 5]), source, trans);
    expect(host.querySelectorAll('.jp-CudaMemdiffTimeline-boundary')).toHaveLength(1);
  });
});
