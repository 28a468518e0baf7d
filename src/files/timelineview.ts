/**
 * The timeline of a snapshot file, drawn in one owned SVG element: allocated
 * memory over the file's allocation events (as PyTorch's MemoryViz draws it),
 * cell boundaries where the trace marks a snapshot, the stack of the event
 * under the pointer, and a diff between two clicked moments. Geometry is in
 * pure functions; the engine worker answers every question about the trace.
 */
import { DOMUtils } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { frameText, nativeFramesText } from '../components/stack';
import { CellCodeNames, formatBytes, formatCount, ITimelineOom, ITimelineSeries } from '../engine';
import { binaryTicks, tickLabel } from '../panel/chart';
import type { IMoment, IMomentDiff, MomentFrame } from '../worker/files';
import { momentWords } from './words';

/** The drawing's size in SVG units (it scales to the view's width). */
export const TIMELINE_WIDTH = 800;
export const TIMELINE_HEIGHT = 200;
/** A click this close to a cell boundary (in SVG units) picks the boundary. */
const SNAP = 6;

/** A mark of the memory scale: a round size (binary: 32 GiB, 128 MiB) at its height. */
export interface ITimelineTick {
  readonly bytes: number;
  /** Height in SVG units, from the top. */
  readonly y: number;
  readonly label: string;
}

/** Where things are drawn: pure functions of the series. */
export interface ITimelineGeometry {
  /** The filled area under the allocated total. */
  readonly path: string;
  /** Bytes at the top of the drawing. */
  readonly yMaxBytes: number;
  /** The memory scale, from 0 B up to the highest round size under the top of the drawing. */
  readonly ticks: readonly ITimelineTick[];
  /**
   * The cell boundaries drawn: those between two events. One before the
   * first event or after the last (a dump written after its cell's last
   * allocation) would lie on the drawing's edge, where nobody sees a line.
   */
  readonly boundaries: readonly number[];
  /** Height in SVG units of a byte count. */
  y(bytes: number): number;
  /** Horizontal position of an event count (the moment before event `k`). */
  x(events: number): number;
  /** The moment (an event index, -1 before the first) at a horizontal position; `snap` picks a boundary close by. */
  momentAt(x: number, snap?: boolean): number;
}

/** Geometry of a timeline drawn `width` by `height`. */
export function timelineGeometry(
  series: ITimelineSeries,
  width = TIMELINE_WIDTH,
  height = TIMELINE_HEIGHT
): ITimelineGeometry {
  const n = Math.max(1, series.eventCount);
  const yMaxBytes = Math.max(1, series.peakBytes) * 1.05;
  const y = (bytes: number) => height - (bytes / yMaxBytes) * height;
  const x = (events: number) => (events / n) * width;
  const parts = [`M0,${height}`];
  const columns = series.start.length;
  for (let c = 0; c < columns; c++) {
    const top = y(series.high[c]).toFixed(2);
    const x0 = x(series.start[c]).toFixed(2);
    const x1 = x(c + 1 < columns ? series.start[c + 1] : n).toFixed(2);
    parts.push(`L${x0},${top}`, `L${x1},${top}`);
  }
  parts.push(`L${width},${height}`, 'Z');
  const momentAt = (px: number, snap = false): number => {
    for (const b of snap ? series.boundaries : []) {
      if (Math.abs(x(b) - px) <= SNAP) {
        return b - 1;
      }
    }
    return Math.max(0, Math.min(n - 1, Math.floor((px / width) * n)));
  };
  const ticks = binaryTicks(yMaxBytes)
    .filter(bytes => bytes <= yMaxBytes)
    .map(bytes => ({ bytes, y: y(bytes), label: tickLabel(bytes) }));
  const boundaries = series.boundaries.filter(b => b > 0 && b < series.eventCount);
  return { path: parts.join(''), yMaxBytes, ticks, boundaries, y, x, momentAt };
}

/**
 * The moment a key moves the timeline's cursor to from `moment`, of
 * `count` (0 to count - 1): the arrows by one pixel column of the drawing
 * (a single event with Shift; right and up on, left and down back), Page Up and Page Down to the previous or
 * next cell boundary (`boundaries` as the series gives them, event counts;
 * a tenth of the timeline where there is none that way), Home and End to
 * the ends. Null for a key the timeline leaves alone.
 */
export function timelineKeyTarget(
  key: string,
  shift: boolean,
  moment: number,
  count: number,
  boundaries: readonly number[]
): number | null {
  const last = Math.max(0, count - 1);
  const clamp = (m: number) => Math.max(0, Math.min(last, m));
  const column = shift ? 1 : Math.max(1, Math.round(count / TIMELINE_WIDTH));
  const tenth = Math.max(1, Math.round(count / 10));
  switch (key) {
    case 'ArrowRight':
    case 'ArrowUp': // a slider's keys: up is on, as a screen reader's user expects
      return clamp(moment + column);
    case 'ArrowLeft':
    case 'ArrowDown':
      return clamp(moment - column);
    case 'PageDown': {
      const next = boundaries.map(b => b - 1).find(b => b > moment && b <= last);
      return next ?? clamp(moment + tenth);
    }
    case 'PageUp': {
      const earlier = boundaries.map(b => b - 1).filter(b => b < moment && b >= 0);
      return earlier.length ? earlier[earlier.length - 1] : clamp(moment - tenth);
    }
    case 'Home':
      return 0;
    case 'End':
      return last;
    default:
      return null;
  }
}

/** What the view asks of the worker, and how it names frames. */
export interface ITimelineSource {
  describe(moment: number): Promise<IMoment | null>;
  diff(from: number, to: number): Promise<IMomentDiff>;
  /** The followed notebook's cells, asked at each hover and click: a frame of one reads `Cell [5], line 3`. */
  cells(): CellCodeNames;
}

const SVG = 'http://www.w3.org/2000/svg';

/** Build the timeline's DOM under `host`; returns a function that removes its listeners. */
export function renderTimeline(
  host: HTMLElement,
  series: ITimelineSeries,
  source: ITimelineSource,
  trans: TranslationBundle
): () => void {
  const g = timelineGeometry(series);
  const root = document.createElement('section');
  root.className = 'jp-CudaMemdiffTimeline';
  root.setAttribute('aria-label', trans.__('Allocation timeline'));
  const caption = document.createElement('p');
  caption.className = 'jp-CudaMemdiffTimeline-caption';
  caption.id = DOMUtils.createDomID();
  // Dashed lines are named only where some are drawn (a dump written at an OOM has none).
  const lines = g.boundaries.length
    ? trans.__(
        'Allocated memory on cuda:%1 over %2 allocations and frees (peak %3); dashed lines are cell boundaries. Click a moment, then another, to see what changed between them (or move with the arrow keys and press Enter at each).',
        series.device,
        formatCount(series.eventCount),
        formatBytes(series.peakBytes)
      )
    : trans.__(
        'Allocated memory on cuda:%1 over %2 allocations and frees (peak %3). Click a moment, then another, to see what changed between them (or move with the arrow keys and press Enter at each).',
        series.device,
        formatCount(series.eventCount),
        formatBytes(series.peakBytes)
      );
  caption.textContent = series.ooms.length ? `${lines} ${oomWords(series.ooms, trans)}` : lines;
  root.appendChild(caption);

  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'jp-CudaMemdiffTimeline-chart');
  svg.setAttribute('viewBox', `0 0 ${TIMELINE_WIDTH} ${TIMELINE_HEIGHT}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  // A slider over the moments: the keyboard moves a cursor as the pointer does, and Enter picks as a click does.
  svg.setAttribute('role', 'slider');
  svg.setAttribute('tabindex', '0');
  svg.setAttribute('aria-label', trans.__('Moment of the allocation timeline'));
  svg.setAttribute('aria-valuemin', '1');
  svg.setAttribute('aria-valuemax', String(Math.max(1, series.eventCount)));
  svg.setAttribute('aria-describedby', caption.id); // what it draws, and the keys
  svg.dataset.yMaxBytes = String(g.yMaxBytes);
  svg.dataset.eventCount = String(series.eventCount);
  const area = document.createElementNS(SVG, 'path');
  area.setAttribute('class', 'jp-CudaMemdiffTimeline-area');
  area.setAttribute('d', g.path);
  svg.appendChild(area);
  // Grid lines of the memory scale, over the area so they cross it.
  for (const tick of g.ticks) {
    const grid = document.createElementNS(SVG, 'line');
    grid.setAttribute('class', 'jp-CudaMemdiffTimeline-grid');
    grid.setAttribute('x1', '0');
    grid.setAttribute('x2', String(TIMELINE_WIDTH));
    grid.setAttribute('y1', tick.y.toFixed(2));
    grid.setAttribute('y2', tick.y.toFixed(2));
    svg.appendChild(grid);
  }
  // One line per pixel column at most: a long history has thousands of
  // boundaries (2,500 in the 1 GB bench file), which drawn one by one made the
  // first picture's task 100-180 ms; lines closer than a pixel look the same.
  for (const { item: b, index: k, x } of onePerColumn(g.boundaries, b => g.x(b))) {
    const line = titledLine(x, 'jp-CudaMemdiffTimeline-boundary', trans.__('snapshot %1 (a cell boundary)', k + 1));
    line.dataset.boundary = String(k);
    line.dataset.moment = String(b - 1);
    svg.appendChild(line);
  }
  // Where an allocation failed; a dump written at the error has it after the last event, at the right edge.
  // A retry loop can record thousands.
  const oomX = (oom: ITimelineOom) => Math.max(OOM_INSET, Math.min(g.x(oom.at), TIMELINE_WIDTH - OOM_INSET));
  for (const { item: oom, x } of onePerColumn(series.ooms, oomX)) {
    svg.appendChild(titledLine(x, 'jp-CudaMemdiffTimeline-oom', oomTitle(oom, trans)));
  }
  const cursor = vertical(-10, 'jp-CudaMemdiffTimeline-cursor');
  const marks = [vertical(-10, 'jp-CudaMemdiffTimeline-mark'), vertical(-10, 'jp-CudaMemdiffTimeline-mark')];
  svg.append(cursor, ...marks);
  root.appendChild(plotWithAxes(svg, g, series, trans));
  const hover = document.createElement('div');
  hover.className = 'jp-CudaMemdiffTimeline-hover';
  hover.setAttribute('aria-live', 'polite');
  root.appendChild(hover);
  const result = document.createElement('div');
  result.className = 'jp-CudaMemdiffTimeline-diff';
  result.setAttribute('role', 'status');
  root.appendChild(result);
  host.appendChild(root);

  const svgX = (event: MouseEvent) => {
    const box = svg.getBoundingClientRect();
    return ((event.clientX - box.left) / Math.max(1, box.width)) * TIMELINE_WIDTH;
  };
  let asked = -2;
  let disposed = false;
  // Describe the moment under the cursor (the pointer's, or the keyboard's) below the drawing.
  const describe = (moment: number) => {
    if (moment === asked) {
      return;
    }
    asked = moment;
    void source.describe(Math.max(0, moment)).then(m => {
      if (!disposed && m && asked === moment) {
        showMoment(hover, m, source.cells(), trans);
      }
    });
  };
  const onMove = (event: MouseEvent) => {
    const x = svgX(event);
    place(cursor, x);
    describe(g.momentAt(x));
  };
  let keyed = 0; // the keyboard's moment: where a key last moved the cursor, or the last pick
  const setValue = (moment: number) => {
    keyed = moment;
    svg.setAttribute('aria-valuenow', String(moment + 1));
    svg.setAttribute(
      'aria-valuetext',
      trans.__('moment %1 of %2', formatCount(moment + 1), formatCount(series.eventCount))
    );
  };
  setValue(0);
  const moveTo = (moment: number) => {
    setValue(moment);
    place(cursor, g.x(moment + 1));
    describe(moment);
  };
  const picked: number[] = [];
  const pick = (moment: number) => {
    setValue(moment);
    if (picked.length === 2) {
      picked.length = 0;
      place(marks[1], -10);
    }
    picked.push(moment);
    place(marks[picked.length - 1], g.x(moment + 1));
    if (picked.length === 1) {
      result.textContent = trans.__('Moment %1 picked: pick another moment to compare.', formatCount(moment + 1));
      return;
    }
    const [from, to] = picked[0] <= picked[1] ? picked : [picked[1], picked[0]];
    result.textContent = trans.__('Comparing…');
    source.diff(from, to).then(
      d => !disposed && showDiff(result, d, source.cells(), trans),
      reason => !disposed && (result.textContent = String(reason))
    );
  };
  const onClick = (event: MouseEvent) => pick(g.momentAt(svgX(event), true));
  const onKey = (event: KeyboardEvent) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      moveTo(keyed);
      pick(keyed);
      return;
    }
    const target = timelineKeyTarget(event.key, event.shiftKey, keyed, series.eventCount, series.boundaries);
    if (target !== null) {
      event.preventDefault();
      moveTo(target);
    }
  };
  svg.addEventListener('mousemove', onMove);
  svg.addEventListener('click', onClick);
  svg.addEventListener('keydown', onKey);
  return () => {
    disposed = true;
    svg.removeEventListener('mousemove', onMove);
    svg.removeEventListener('click', onClick);
    svg.removeEventListener('keydown', onKey);
  };
}

/**
 * The items to draw as lines, one a pixel column: the first of those that
 * fall in one (lines closer than a pixel look the same), with its index and x.
 */
function onePerColumn<T>(items: readonly T[], xOf: (item: T) => number): { item: T; index: number; x: number }[] {
  const drawn: { item: T; index: number; x: number }[] = [];
  let lastColumn = -Infinity;
  items.forEach((item, index) => {
    const x = xOf(item);
    if (Math.round(x) !== lastColumn) {
      lastColumn = Math.round(x);
      drawn.push({ item, index, x });
    }
  });
  return drawn;
}

/** A vertical line with its tooltip. */
function titledLine(x: number, className: string, text: string): SVGLineElement {
  const line = vertical(x, className);
  const title = document.createElementNS(SVG, 'title');
  title.textContent = text;
  line.appendChild(title);
  return line;
}

/** How far inside the edges (in SVG units) a mark at the first or last moment is drawn, so all of its stroke shows. */
const OOM_INSET = 2;

/** The caption's sentence on the out-of-memory marks: where the allocation failed, and what it asked for. */
function oomWords(ooms: readonly ITimelineOom[], trans: TranslationBundle): string {
  const asked = ooms[ooms.length - 1].bytes;
  return ooms.length === 1
    ? asked
      ? trans.__('The red line is where an allocation of %1 failed: out of memory.', formatBytes(asked))
      : trans.__('The red line is where an allocation failed: out of memory.')
    : trans._n(
        'Red lines are where allocations failed (%2 time): out of memory.',
        'Red lines are where allocations failed (%2 times): out of memory.',
        ooms.length,
        formatCount(ooms.length)
      );
}

/** A mark's tooltip: the moment it follows and what the failed allocation asked for. */
function oomTitle(oom: ITimelineOom, trans: TranslationBundle): string {
  // moments count from 1: an OOM before any event comes before the first
  const when = oom.at ? trans.__('after moment %1', formatCount(oom.at)) : trans.__('before moment 1');
  return oom.bytes
    ? trans.__('out of memory %1: an allocation of %2 failed', when, formatBytes(oom.bytes))
    : trans.__('out of memory %1: an allocation failed', when);
}

/**
 * The drawing with its scales, as HTML beside it (the drawing stretches to
 * the view's width, which would stretch text drawn inside it): the memory
 * scale's labels at the heights of their grid lines, left; the first and the
 * last moment below.
 */
function plotWithAxes(
  svg: SVGSVGElement,
  g: ITimelineGeometry,
  series: ITimelineSeries,
  trans: TranslationBundle
): HTMLElement {
  const plot = document.createElement('div');
  plot.className = 'jp-CudaMemdiffTimeline-plot';
  const yAxis = document.createElement('div');
  yAxis.className = 'jp-CudaMemdiffTimeline-yAxis';
  yAxis.setAttribute('aria-hidden', 'true');
  for (const tick of g.ticks) {
    const label = document.createElement('span');
    label.className = 'jp-CudaMemdiffTimeline-tick';
    label.style.top = `${((tick.y / TIMELINE_HEIGHT) * 100).toFixed(3)}%`;
    label.textContent = tick.label;
    yAxis.appendChild(label);
  }
  const xAxis = document.createElement('div');
  xAxis.className = 'jp-CudaMemdiffTimeline-xAxis';
  for (const text of [trans.__('moment %1', 1), trans.__('moment %1', formatCount(series.eventCount))]) {
    xAxis.appendChild(document.createElement('span')).textContent = text;
  }
  plot.append(yAxis, svg, xAxis);
  return plot;
}

function vertical(x: number, className: string): SVGLineElement {
  const line = document.createElementNS(SVG, 'line');
  line.setAttribute('class', className);
  line.setAttribute('y1', '0');
  line.setAttribute('y2', String(TIMELINE_HEIGHT));
  place(line, x);
  return line;
}

function place(line: SVGLineElement, x: number): void {
  line.setAttribute('x1', x.toFixed(2));
  line.setAttribute('x2', x.toFixed(2));
}

function showMoment(node: HTMLElement, m: IMoment, cells: CellCodeNames, trans: TranslationBundle): void {
  node.textContent = '';
  const head = document.createElement('p');
  const words = momentWords(m, trans);
  head.textContent = words.text;
  head.title = words.title;
  node.appendChild(head);
  node.appendChild(stackList(m.frames, cells, trans));
}

/** The diff of two clicked moments: a summary, then its allocation sites, or a line saying there are none. */
export function showDiff(node: HTMLElement, d: IMomentDiff, cells: CellCodeNames, trans: TranslationBundle): void {
  node.textContent = '';
  const head = document.createElement('p');
  head.className = 'jp-CudaMemdiffTimeline-diffSummary';
  head.textContent = trans.__(
    'From moment %1 (%2 allocated) to moment %3 (%4): born %5, freed %6, net %7',
    formatCount(d.from + 1),
    formatBytes(d.fromBytes),
    formatCount(d.to + 1),
    formatBytes(d.toBytes),
    formatBytes(d.bornBytes),
    formatBytes(d.freedBytes),
    formatBytes(d.netBytes, true)
  );
  node.appendChild(head);
  if (!d.sites.length) {
    // Headers over no rows read as a table still loading.
    const none = document.createElement('p');
    none.textContent = trans.__('No block was allocated or freed between these moments.');
    node.appendChild(none);
    return;
  }
  const table = document.createElement('table');
  table.className = 'jp-CudaMemdiffTimeline-sites';
  const headRow = table.createTHead().insertRow();
  for (const h of [
    trans.__('Net'),
    trans.__('Born'),
    trans.__('Freed'),
    trans.__('Blocks'),
    trans.__('Allocation site')
  ]) {
    const th = document.createElement('th');
    th.textContent = h;
    headRow.appendChild(th);
  }
  const body = table.createTBody();
  for (const s of d.sites) {
    const row = body.insertRow();
    for (const v of [
      formatBytes(s.netBytes, true),
      formatBytes(s.bornBytes),
      formatBytes(s.freedBytes),
      formatCount(s.count)
    ]) {
      row.insertCell().textContent = v;
    }
    const site = row.insertCell();
    site.textContent = s.site ? frameText(s.site, cells, trans) : trans.__('(no Python stack)');
    site.title = s.frames.map(f => momentFrameText(f, cells, trans)).join('\n');
  }
  node.appendChild(table);
  if (d.siteCount > d.sites.length) {
    const more = document.createElement('p');
    more.textContent = trans.__('%1 more allocation sites not shown', formatCount(d.siteCount - d.sites.length));
    node.appendChild(more);
  }
}

function stackList(frames: readonly MomentFrame[], cells: CellCodeNames, trans: TranslationBundle): HTMLElement {
  const list = document.createElement('ol');
  list.className = 'jp-CudaMemdiffTimeline-stack';
  for (const f of frames) {
    const item = document.createElement('li');
    item.textContent = momentFrameText(f, cells, trans);
    list.appendChild(item);
  }
  return list;
}

function momentFrameText(frame: MomentFrame, cells: CellCodeNames, trans: TranslationBundle): string {
  return 'native' in frame ? nativeFramesText(frame.native, trans) : frameText(frame, cells, trans);
}
