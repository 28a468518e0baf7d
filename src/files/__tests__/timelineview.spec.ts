// The diff of two moments of a file's timeline, as a person reads it.
import { nullTranslator } from '@jupyterlab/translation';
import { CellCodeNames, ITimelineSeries } from '../../engine';
import {
  renderTimeline,
  showDiff,
  TIMELINE_HEIGHT,
  TIMELINE_WIDTH,
  timelineGeometry,
  timelineKeyTarget
} from '../timelineview';
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
      'Allocated memory on cuda:0 over 5 allocations and frees (peak 100 GiB). Click a moment, then another, to see what changed between them (or move with the arrow keys and press Enter at each).';
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

describe('the timeline from the keyboard', () => {
  it('steps a pixel column with the arrows, an event with Shift, and jumps to the ends', () => {
    // 8,000 events over 800 columns: ten a column
    expect(timelineKeyTarget('ArrowRight', false, 0, 8000, [])).toBe(10);
    expect(timelineKeyTarget('ArrowRight', true, 0, 8000, [])).toBe(1);
    expect(timelineKeyTarget('ArrowLeft', false, 5, 8000, [])).toBe(0);
    // a slider's up and down: on and back
    expect(timelineKeyTarget('ArrowUp', false, 0, 8000, [])).toBe(10);
    expect(timelineKeyTarget('ArrowDown', true, 10, 8000, [])).toBe(9);
    expect(timelineKeyTarget('ArrowRight', false, 7995, 8000, [])).toBe(7999);
    // fewer events than columns: one an arrow
    expect(timelineKeyTarget('ArrowRight', false, 2, 5, [])).toBe(3);
    expect(timelineKeyTarget('Home', false, 3, 5, [])).toBe(0);
    expect(timelineKeyTarget('End', false, 0, 5, [])).toBe(4);
    expect(timelineKeyTarget('x', false, 0, 5, [])).toBeNull();
  });

  it('goes by cell boundary with Page Up and Down, by a tenth where there is none', () => {
    // boundaries after events 2,000 and 5,000: moments 1,999 and 4,999 (0-based), where a click snaps
    const b = [2000, 5000];
    expect(timelineKeyTarget('PageDown', false, 0, 8000, b)).toBe(1999);
    expect(timelineKeyTarget('PageDown', false, 1999, 8000, b)).toBe(4999);
    expect(timelineKeyTarget('PageDown', false, 4999, 8000, b)).toBe(5799);
    expect(timelineKeyTarget('PageUp', false, 7000, 8000, b)).toBe(4999);
    expect(timelineKeyTarget('PageUp', false, 1999, 8000, b)).toBe(1199);
    expect(timelineKeyTarget('PageUp', false, 500, 8000, b)).toBe(0);
  });

  it('moves its cursor, says the moment, and picks two moments with Enter to diff them', async () => {
    const host = document.createElement('div');
    const asked: number[][] = [];
    const described: number[] = [];
    renderTimeline(
      host,
      series([]),
      {
        describe: m => {
          described.push(m);
          return Promise.resolve(null);
        },
        diff: (from, to) => {
          asked.push([from, to]);
          return Promise.resolve({ ...diff([]), from, to });
        },
        cells: () => new CellCodeNames([])
      },
      trans
    );
    const slider = host.querySelector('[role="slider"]') as SVGElement;
    expect(slider.getAttribute('tabindex')).toBe('0');
    expect(slider.getAttribute('aria-valuetext')).toBe('moment 1 of 5');
    // described by the caption, which says what it draws and which keys move it
    const caption = host.querySelector(`#${slider.getAttribute('aria-describedby')}`);
    expect(caption?.textContent).toContain('move with the arrow keys and press Enter');
    // nothing is asked of the worker before a key or the pointer moves
    expect(described).toEqual([]);
    const key = (k: string, shiftKey = false) =>
      slider.dispatchEvent(new KeyboardEvent('keydown', { key: k, shiftKey, bubbles: true, cancelable: true }));
    expect(key('End')).toBe(false); // handled: the page does not scroll
    expect(slider.getAttribute('aria-valuenow')).toBe('5');
    expect(described).toEqual([4]);
    const cursor = host.querySelector('.jp-CudaMemdiffTimeline-cursor')!;
    expect(Number(cursor.getAttribute('x1'))).toBe(TIMELINE_WIDTH);
    key('Enter');
    expect(host.querySelector('.jp-CudaMemdiffTimeline-diff')!.textContent).toBe(
      'Moment 5 picked: pick another moment to compare.'
    );
    key('ArrowLeft');
    key('ArrowLeft');
    expect(slider.getAttribute('aria-valuetext')).toBe('moment 3 of 5');
    key(' ');
    expect(asked).toEqual([[2, 4]]);
    await Promise.resolve();
    expect(host.querySelector('.jp-CudaMemdiffTimeline-diff')!.textContent).toContain('From moment 3');
    // a key the timeline leaves alone is not taken from the page
    expect(key('a')).toBe(true);
  });
});
