/**
 * Geometry of the session chart, in pure functions: allocated and reserved
 * memory per snapshot as step lines, one step per cell execution, ticks at
 * binary sizes (128 MiB, 256 MiB, 1 GiB), each step named under it by its
 * cell's prompt (`[3]`, thinned where they would touch), a mark where the
 * kernel restarted and where a cell ran out of memory, the session's peak,
 * and allocated memory stacked by role where the kernel gave roles. d3
 * computes scales and paths; the React component only draws them.
 */
import { scaleLinear } from 'd3-scale';
import { area, curveStepAfter, line } from 'd3-shape';
import { formatBytes, RoleBytes, ROLES } from '../engine';

/** One snapshot on the chart. */
export interface IChartInput {
  allocatedBytes: number;
  reservedBytes: number;
  oom: boolean;
  label: string;
  /** The short name under its step, as the cell's prompt shows its run: `[3]`. */
  tick?: string;
  /** The kernel session the snapshot came from; a change between two snapshots is a restart. */
  kernelSession?: number;
  /** Allocated bytes by role after the snapshot's cell; absent or null when the kernel gave none. */
  roles?: RoleBytes | null;
}

/** One role's band of allocated memory, stacked on the roles before it. */
export interface IRoleArea {
  role: string;
  path: string;
}

/** A snapshot's place on the chart. */
export interface IChartPoint extends IChartInput {
  index: number;
  /** Left edge of the snapshot's step, and its width. */
  x: number;
  width: number;
  yAllocated: number;
  yReserved: number;
}

/** A step's short name under the plot, centred on its step (kept inside the chart at its ends). */
export interface ICellLabel {
  index: number;
  x: number;
  text: string;
}

/**
 * The session's peak of allocated memory, as a level line over the steps of
 * the kernel that reached it (a restarted kernel's counters start again).
 */
export interface IPeakMark {
  bytes: number;
  y: number;
  x1: number;
  x2: number;
}

/** Everything the chart draws. */
export interface IChartLayout {
  points: IChartPoint[];
  allocatedPath: string;
  reservedPath: string;
  ticks: { y: number; label: string }[];
  /** The steps' short names, thinned to every `cellLabelStride`-th where they would touch. */
  cellLabels: ICellLabel[];
  cellLabelStride: number;
  /** The baseline of the step names, below the plot. */
  cellLabelY: number;
  /** The session's peak; null when none was given. */
  peak: IPeakMark | null;
  /** Where a snapshot from a new kernel session follows one of an earlier session. */
  restarts: IRestartMark[];
  /** The snapshots whose cell ran out of memory. */
  ooms: IOomMark[];
  /** Allocated memory stacked by role, in the kernel's role order; empty when no snapshot has roles. */
  roleAreas: IRoleArea[];
  width: number;
  height: number;
  plotLeft: number;
}

/**
 * A kernel restart's dashed line, before the snapshot `index`, and where its
 * label goes: beside the line on the side with room, or nowhere (`label`
 * null) where it would run into the label of an earlier restart.
 */
export interface IRestartMark {
  x: number;
  index: number;
  label: { x: number; anchor: 'start' | 'end' } | null;
}

/**
 * An out-of-memory mark over the snapshot `index`, centred on its step at
 * `x`; `label` false where the label would run into the one before it (the
 * band's tooltip and accessible name still say it ran out of memory).
 */
export interface IOomMark {
  x: number;
  index: number;
  label: boolean;
}

/** Drawn widths of the chart's labels, in pixels: what is measured to keep them apart. */
export interface ILabelWidths {
  restart?: number;
  oom?: number;
  /** The widest of the steps' short names. */
  cell?: number;
}

/** Sizes of the chart in pixels. */
export interface IChartSize {
  width: number;
  height: number;
}

/** Room around the plot; below it, the row of the steps' names. */
const MARGIN = { top: 8, right: 8, bottom: 22, left: 64 };
/** The steps' names' baseline, below the plot's bottom (clear of the "0 B" tick label beside it). */
const CELL_LABEL_DROP = 15;
/** Room between a restart line and its label, and the least between two labels, in pixels. */
const LABEL_GAP = 3;
/** How far above its kernel's highest step, in pixels, the peak must be to be drawn apart from it. */
const PEAK_MIN_RISE = 2;
/** How many steps apart the kept names of steps may be: round numbers, so the names read as a scale. */
const STRIDES = [1, 2, 5];
/** Most intervals between ticks on the memory axis. */
export const MAX_TICK_INTERVALS = 4;

/**
 * The smallest power-of-two step (1 B, 2 B, ... 128 MiB, 256 MiB, 1 GiB) that
 * covers `max` in at most `intervals` steps; memory sizes read at a glance on
 * such ticks, where a decimal "nice" scale gives 191 MiB, 381 MiB, 572 MiB.
 */
export function binaryTickStep(max: number, intervals = MAX_TICK_INTERVALS): number {
  let step = 1;
  while (step * intervals < max) {
    step *= 2;
  }
  return step;
}

/** Tick values from 0 up to the first multiple of the step that reaches `max`. */
export function binaryTicks(max: number, intervals = MAX_TICK_INTERVALS): number[] {
  const step = binaryTickStep(Math.max(1, max), intervals);
  const count = Math.max(1, Math.ceil(Math.max(1, max) / step));
  return Array.from({ length: count + 1 }, (_, k) => k * step);
}

/** A tick's label: "512 MiB", "1 GiB", "1.5 GiB" (no trailing zeros). */
export function tickLabel(bytes: number): string {
  return formatBytes(bytes)
    .replace(/(\.\d*?)0+ /, '$1 ')
    .replace(/\. /, ' ');
}

/**
 * Lay out the chart for snapshots in execution order; `labels` gives the
 * drawn widths of its labels, `peakBytes` the session's peak of allocated
 * memory (0 for none), which the memory scale then reaches.
 */
export function chartLayout(
  inputs: readonly IChartInput[],
  size: IChartSize,
  labels: ILabelWidths = {},
  peakBytes = 0
): IChartLayout {
  const left = MARGIN.left;
  const right = Math.max(left + 1, size.width - MARGIN.right);
  const top = MARGIN.top;
  const bottom = Math.max(top + 1, size.height - MARGIN.bottom);
  const peak = inputs.length ? Math.max(0, peakBytes) : 0;
  const max = Math.max(1, peak, ...inputs.map(p => Math.max(p.allocatedBytes, p.reservedBytes)));
  const ticks = binaryTicks(max);
  const y = scaleLinear()
    .domain([0, ticks[ticks.length - 1]])
    .range([bottom, top]);
  const step = inputs.length ? (right - left) / inputs.length : 0;
  const points: IChartPoint[] = inputs.map((p, index) => ({
    ...p,
    index,
    x: left + index * step,
    width: step,
    yAllocated: y(p.allocatedBytes),
    yReserved: y(p.reservedBytes)
  }));
  // A step line needs a closing point at the right edge of the last step.
  const path = (value: (p: IChartPoint) => number) => {
    const vertices: [number, number][] = points.map(p => [p.x, value(p)]);
    if (points.length) {
      vertices.push([right, value(points[points.length - 1])]);
    }
    return line().curve(curveStepAfter)(vertices) ?? '';
  };
  const cellWidth = labels.cell ?? 0;
  const stride = labelStride(step, cellWidth);
  return {
    points,
    allocatedPath: path(p => p.yAllocated),
    reservedPath: path(p => p.yReserved),
    ticks: ticks.map(v => ({ y: y(v), label: tickLabel(v) })),
    cellLabels: cellLabels(points, stride, cellWidth, size.width),
    cellLabelStride: stride,
    cellLabelY: bottom + CELL_LABEL_DROP,
    peak: peak > 0 ? peakMark(points, peak, y(peak), right) : null,
    roleAreas: roleAreas(points, right, y),
    restarts: restartMarks(
      points
        .filter((p, k) => k > 0 && p.kernelSession !== undefined && p.kernelSession !== points[k - 1].kernelSession)
        .map(p => ({ x: p.x, index: p.index })),
      (left + right) / 2,
      labels.restart ?? 0
    ),
    ooms: oomMarks(points, labels.oom ?? 0),
    width: size.width,
    height: size.height,
    plotLeft: left
  };
}

/**
 * How many steps apart the steps' names go: the least of 1, 2, 5, 10, 20,
 * 50, ... steps that leaves LABEL_GAP between names `width` wide on steps
 * `step` wide. A name on every other cell reads as well as on each, where
 * names that touch read as none.
 */
export function labelStride(step: number, width: number): number {
  if (width <= 0) {
    return 1;
  }
  if (step <= 0) {
    return Infinity;
  }
  for (let scale = 1; ; scale *= 10) {
    for (const k of STRIDES) {
      if (k * scale * step >= width + LABEL_GAP) {
        return k * scale;
      }
    }
  }
}

/**
 * The names of every `stride`-th step, from the first, each centred on its
 * step; a name that would pass an edge of the chart (`width` pixels) is
 * moved inside it.
 */
export function cellLabels(
  points: readonly IChartPoint[],
  stride: number,
  labelWidth: number,
  width: number
): ICellLabel[] {
  const half = labelWidth / 2;
  return points
    .filter(p => p.tick && p.index % stride === 0)
    .map(p => ({
      index: p.index,
      x: Math.max(half, Math.min(width - half, p.x + p.width / 2)),
      text: p.tick!
    }));
}

/**
 * The session's peak as a level line at `y`, over the steps of the last
 * point's kernel session (every step where sessions are not told); null
 * where it would lie on that kernel's highest step (less than
 * PEAK_MIN_RISE above it): the step line already shows that peak.
 */
export function peakMark(points: readonly IChartPoint[], bytes: number, y: number, right: number): IPeakMark | null {
  const last = points[points.length - 1];
  const span = points.filter(p => p.kernelSession === last.kernelSession);
  const highest = Math.min(...span.map(p => p.yAllocated));
  if (highest - y < PEAK_MIN_RISE) {
    return null;
  }
  return { bytes, y, x1: span[0].x, x2: right };
}

/**
 * Place each restart's label beside its line, right of it in the left half of
 * the plot and left of it in the right half, and drop a label that would come
 * within LABEL_GAP of the last one kept: two restarts a few cells apart would
 * otherwise print "restarstart". The line stays, and its tooltip names it.
 */
export function restartMarks(
  restarts: readonly { x: number; index: number }[],
  middle: number,
  labelWidth: number
): IRestartMark[] {
  const placed = restarts.map(({ x }) => {
    const anchor: 'start' | 'end' = x > middle ? 'end' : 'start';
    const labelX = anchor === 'end' ? x - LABEL_GAP : x + LABEL_GAP;
    return { labelX, anchor, from: anchor === 'end' ? labelX - labelWidth : labelX };
  });
  const kept = keptApart(
    placed.map(p => p.from),
    labelWidth
  );
  return restarts.map(({ x, index }, k) => ({
    x,
    index,
    label: kept[k] ? { x: placed[k].labelX, anchor: placed[k].anchor } : null
  }));
}

/**
 * An OOM mark centred over each snapshot whose cell ran out of memory; a
 * label that would come within LABEL_GAP of the last one kept is dropped, so
 * a run of failing cells on narrow steps does not print "OOMOOMOOM".
 */
export function oomMarks(points: readonly IChartPoint[], labelWidth: number): IOomMark[] {
  const marks = points.filter(p => p.oom).map(p => ({ x: p.x + p.width / 2, index: p.index }));
  const kept = keptApart(
    marks.map(m => m.x - labelWidth / 2),
    labelWidth
  );
  return marks.map((m, k) => ({ ...m, label: kept[k] }));
}

/**
 * Which labels of one row to draw: each label (its left edge in `starts`,
 * left to right, all `width` wide) is kept when it starts LABEL_GAP past the
 * last one kept.
 */
function keptApart(starts: readonly number[], width: number): boolean[] {
  let keptRight = -Infinity;
  return starts.map(from => {
    if (from < keptRight + LABEL_GAP) {
      return false;
    }
    keptRight = from + width;
    return true;
  });
}

/**
 * Stacked step areas, one per role that holds memory somewhere: each
 * snapshot's roles piled up from the axis (a snapshot without roles adds
 * nothing, so the stack dips to the axis there).
 */
export function roleAreas(points: readonly IChartPoint[], right: number, y: (bytes: number) => number): IRoleArea[] {
  const used = ROLES.filter(role => points.some(p => (p.roles?.[role] ?? 0) > 0));
  if (!used.length) {
    return [];
  }
  const base = points.map(() => 0);
  const shape = area<[number, number, number]>()
    .curve(curveStepAfter)
    .x(v => v[0])
    .y0(v => v[1])
    .y1(v => v[2]);
  return used.map(role => {
    const vertices: [number, number, number][] = points.map((p, k) => {
      const low = base[k];
      base[k] += p.roles?.[role] ?? 0;
      return [p.x, y(low), y(base[k])];
    });
    if (vertices.length) {
      vertices.push([right, ...vertices[vertices.length - 1].slice(1)] as [number, number, number]);
    }
    return { role, path: shape(vertices) ?? '' };
  });
}
