/**
 * Geometry of the session chart, in pure functions: allocated and reserved
 * memory per snapshot as step lines, one step per cell execution. d3 computes
 * scales and paths; the React component only draws them.
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
const TICKS = 4;

/** Lay out the chart for snapshots in execution order. */
export function chartLayout(inputs: readonly IChartInput[], size: IChartSize): IChartLayout {
  const left = MARGIN.left;
  const right = Math.max(left + 1, size.width - MARGIN.right);
  const top = MARGIN.top;
  const bottom = Math.max(top + 1, size.height - MARGIN.bottom);
  const max = Math.max(1, ...inputs.map(p => Math.max(p.allocatedBytes, p.reservedBytes)));
  const y = scaleLinear().domain([0, max]).nice(TICKS).range([bottom, top]);
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
    ticks: y.ticks(TICKS).map(v => ({ y: y(v), label: formatBytes(v) })),
    width: size.width,
    height: size.height,
    plotLeft: left
  };
}
