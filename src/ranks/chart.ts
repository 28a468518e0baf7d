/**
 * Geometry of the ranks chart, in pure functions: each rank's allocated
 * memory at each capture point as a line, on one scale, so a rank that
 * grows stands apart from the flat ones. d3 computes scales and paths.
 */
import { scaleLinear } from 'd3-scale';
import { line } from 'd3-shape';

export interface IRankLine {
  rank: number;
  path: string;
  points: { x: number; y: number; bytes: number; label: string }[];
}

export interface IRanksChart {
  lines: IRankLine[];
  ticks: { y: number; bytes: number }[];
  width: number;
  height: number;
  plotLeft: number;
}

const MARGIN = { top: 10, right: 12, bottom: 10, left: 72 };

/** Lines for `ranks`, each a list of (label, allocated bytes) per capture point. */
export function ranksChart(
  ranks: readonly { rank: number; points: readonly { label: string; allocatedBytes: number }[] }[],
  size: { width: number; height: number }
): IRanksChart {
  const count = Math.max(1, ...ranks.map(r => r.points.length));
  let top = 0;
  for (const r of ranks) {
    for (const p of r.points) {
      top = Math.max(top, p.allocatedBytes);
    }
  }
  const x = scaleLinear()
    .domain([0, Math.max(1, count - 1)])
    .range([MARGIN.left, size.width - MARGIN.right]);
  const y = scaleLinear()
    .domain([0, top || 1])
    .nice(4)
    .range([size.height - MARGIN.bottom, MARGIN.top]);
  const draw = line<{ x: number; y: number }>()
    .x(p => p.x)
    .y(p => p.y);
  const lines = ranks.map(r => {
    const points = r.points.map((p, k) => ({
      x: x(k),
      y: y(p.allocatedBytes),
      bytes: p.allocatedBytes,
      label: p.label
    }));
    return { rank: r.rank, path: draw(points) ?? '', points };
  });
  const ticks = y.ticks(4).map(bytes => ({ y: y(bytes), bytes }));
  return { lines, ticks, width: size.width, height: size.height, plotLeft: MARGIN.left };
}
