/**
 * Geometry of the session chart, in pure functions: allocated and reserved
 * memory per snapshot as step lines, one step per cell execution, ticks at
 * binary sizes (128 MiB, 256 MiB, 1 GiB) and a mark where the kernel
 * restarted. d3 computes scales and paths; the React component only draws them.
 */
import { scaleLinear } from 'd3-scale';
import { curveStepAfter, line } from 'd3-shape';
import { formatBytes } from '../engine';

/** One snapshot on the chart. */
export interface IChartInput {
  allocatedBytes: number;
  reservedBytes: number;
  oom: boolean;
  label: string;
  /** The kernel session the snapshot came from; a change between two snapshots is a restart. */
  kernelSession?: number;
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

/** Everything the chart draws. */
export interface IChartLayout {
  points: IChartPoint[];
  allocatedPath: string;
  reservedPath: string;
  ticks: { y: number; label: string }[];
  /** Where a snapshot from a new kernel session follows one of an earlier session. */
  restarts: { x: number; index: number }[];
  width: number;
  height: number;
  plotLeft: number;
}

/** Sizes of the chart in pixels. */
export interface IChartSize {
  width: number;
  height: number;
}

const MARGIN = { top: 8, right: 8, bottom: 8, left: 64 };
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
  return formatBytes(bytes).replace(/(\.\d*?)0+ /, '$1 ').replace(/\. /, ' ');
}

/** Lay out the chart for snapshots in execution order. */
export function chartLayout(inputs: readonly IChartInput[], size: IChartSize): IChartLayout {
  const left = MARGIN.left;
  const right = Math.max(left + 1, size.width - MARGIN.right);
  const top = MARGIN.top;
  const bottom = Math.max(top + 1, size.height - MARGIN.bottom);
  const max = Math.max(1, ...inputs.map(p => Math.max(p.allocatedBytes, p.reservedBytes)));
  const ticks = binaryTicks(max);
  const y = scaleLinear().domain([0, ticks[ticks.length - 1]]).range([bottom, top]);
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
  return {
    points,
    allocatedPath: path(p => p.yAllocated),
    reservedPath: path(p => p.yReserved),
    ticks: ticks.map(v => ({ y: y(v), label: tickLabel(v) })),
    restarts: points
      .filter((p, k) => k > 0 && p.kernelSession !== undefined && p.kernelSession !== points[k - 1].kernelSession)
      .map(p => ({ x: p.x, index: p.index })),
    width: size.width,
    height: size.height,
    plotLeft: left
  };
}
