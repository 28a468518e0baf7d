/**
 * `cuda-memdiff` on multi-rank sessions: the ranks side by side, which rank
 * grows and from where, and one rank against another at a capture point.
 * The findings are data (`ranksJson`); the text is one wording of them.
 */
import {
  compareRanks,
  formatBytes,
  formatRankRanges,
  IFrameFilterOptions,
  IRankedSession,
  IRankGrowth,
  rankGrowth,
  rankCount,
  rankPoints,
  RanksVerdict,
  ranksVerdict,
  shownOf
} from '../engine';
import { moreSitesText, siteJson, siteLabel } from './report';
import { renderTable } from './table';

function growthOf(ranked: IRankedSession, filter: IFrameFilterOptions): IRankGrowth[] {
  return ranked.ranks.map(r => rankGrowth(r, filter));
}

export function ranksJson(ranked: IRankedSession, filter: IFrameFilterOptions) {
  const growth = growthOf(ranked, filter);
  return {
    world_size: ranked.worldSize,
    missing_ranks: ranked.missing,
    ranks: ranked.ranks.map((r, i) => ({
      rank: r.rank,
      folder: r.folder,
      host: r.host,
      points: rankPoints(r).map(p => ({
        index: p.index,
        label: p.label,
        step: p.step,
        allocated_bytes: p.allocatedBytes,
        reserved_bytes: p.reservedBytes,
        memory_allocated: p.memoryAllocated
      })),
      growth: {
        steps: growth[i].steps,
        bytes_per_step: growth[i].bytesPerStep,
        grows: growth[i].grows,
        sites: growth[i].sites.map(s => ({
          ...siteJson(ranked.frames, s.frameId),
          bytes_per_step: s.bytesPerStep,
          total_bytes: s.totalBytes
        }))
      }
    })),
    verdict: verdictJson(ranksVerdict(growth))
  };
}

/** The verdict as `--json` gives it: `unmeasured` only where a rank had too few steps, so a job whose ranks were
 * all measured reads as before the key existed. */
function verdictJson(verdict: RanksVerdict) {
  if (verdict.code === 'too-few-steps' || verdict.unmeasured.length > 0) {
    return verdict;
  }
  return Object.fromEntries(Object.entries(verdict).filter(([key]) => key !== 'unmeasured'));
}

function growthText(ranked: IRankedSession, g: IRankGrowth): string {
  const top = g.sites[0];
  const from = top ? ` from ${siteLabel(ranked.frames, top.frameId)}` : '';
  return `rank ${g.rank} grows ${formatBytes(g.bytesPerStep)} per step${from}`;
}

/** `rank 1 is`, `ranks 0, 2 are`: ranks and the verb that follows them. */
function ranksAre(ranks: readonly number[]): string {
  return ranks.length === 1 ? `rank ${ranks[0]} is` : `ranks ${ranks.join(', ')} are`;
}

function verdictText(ranked: IRankedSession, growth: IRankGrowth[], verdict: RanksVerdict): string {
  const byRank = (rank: number) => growth.find(g => g.rank === rank)!;
  if (verdict.code === 'too-few-steps') {
    return 'Fewer than two optimizer-step capture points per rank: no growth to measure yet.';
  }
  // "Every rank" would include ranks with too few steps to tell.
  const some = verdict.unmeasured.length > 0;
  const unmeasured = some
    ? ` ${verdict.unmeasured.length === 1 ? `Rank ${verdict.unmeasured[0]} has` : `Ranks ${verdict.unmeasured.join(', ')} have`} fewer than two optimizer-step capture points: too few steps to tell.`
    : '';
  switch (verdict.code) {
    case 'all-flat': {
      const flat = growth.map(g => g.rank).filter(r => !verdict.unmeasured.includes(r));
      const text = some ? `${ranksAre(flat)} flat from step to step.` : 'every rank is flat from step to step.';
      return `${text[0].toUpperCase()}${text.slice(1)}${unmeasured}`;
    }
    case 'all-grow':
      return `Every rank${some ? ' measured' : ''} grows: ${verdict.growing.map(r => growthText(ranked, byRank(r))).join('; ')}.${unmeasured}`;
    case 'rank-grows':
      return `${verdict.growing.map(r => growthText(ranked, byRank(r))).join('; ')}; ${ranksAre(verdict.flat)} flat.${unmeasured}`;
  }
}

export function ranksText(ranked: IRankedSession, filter: IFrameFilterOptions): string {
  const growth = growthOf(ranked, filter);
  const points = ranked.ranks.map(rankPoints);
  const rows = Math.max(...points.map(p => p.length));
  const table = renderTable(
    [{ header: 'point' }, ...ranked.ranks.map(r => ({ header: `rank ${r.rank}`, right: true }))],
    Array.from({ length: rows }, (_, k) => [
      points.find(p => p[k])?.[k].label ?? String(k),
      ...points.map(p => (p[k] ? formatBytes(p[k].allocatedBytes) : '-'))
    ])
  );
  const lines = [
    `${ranked.ranks.length} of ${ranked.worldSize} ranks, allocated memory at each capture point:`,
    '',
    table,
    ''
  ];
  if (ranked.missing.length) {
    const ranks = rankCount(ranked.missing) === 1 ? 'rank' : 'ranks';
    lines.push(`Missing: no folder for ${ranks} ${formatRankRanges(ranked.missing)}.`);
  }
  lines.push(verdictText(ranked, growth, ranksVerdict(growth)));
  return lines.join('\n');
}

/** The label of capture point `point` (`step 5`), which the ranks table shows in place of its index. */
function pointLabel(ranked: IRankedSession, rank: number, point: number): string | null {
  const r = ranked.ranks.find(x => x.rank === rank);
  return (r && rankPoints(r)[point]?.label) ?? null;
}

/** `step 5 (point 4)`: a capture point as the table names it, with the index `--point` takes. */
function pointText(ranked: IRankedSession, rank: number, point: number): string {
  const label = pointLabel(ranked, rank, point);
  return label === null || label === `point ${point}` ? `point ${point}` : `${label} (point ${point})`;
}

/** Rank `a` against rank `b` at one capture point, by site. */
export function compareJson(ranked: IRankedSession, a: number, b: number, point: number, filter: IFrameFilterOptions) {
  const sites = compareRanks(ranked, a, b, point, filter);
  return {
    point,
    label: pointLabel(ranked, a, point),
    a,
    b,
    sites: sites.map(s => ({
      ...siteJson(ranked.frames, s.frameId),
      a_bytes: s.aBytes,
      b_bytes: s.bBytes,
      delta_bytes: s.bBytes - s.aBytes
    }))
  };
}

export function compareText(
  ranked: IRankedSession,
  a: number,
  b: number,
  point: number,
  filter: IFrameFilterOptions,
  limit = 20
): string {
  const sites = compareRanks(ranked, a, b, point, filter);
  if (sites.length === 0) {
    return `Rank ${a} and rank ${b} hold the same bytes at every site at ${pointText(ranked, a, point)}.`;
  }
  const shown = shownOf(sites, limit);
  const table = renderTable(
    [
      { header: `rank ${a}`, right: true },
      { header: `rank ${b}`, right: true },
      { header: 'difference', right: true },
      { header: 'site' }
    ],
    shown.map(s => [
      formatBytes(s.aBytes),
      formatBytes(s.bBytes),
      formatBytes(s.bBytes - s.aBytes, true),
      siteLabel(ranked.frames, s.frameId)
    ])
  );
  const more = sites.length > shown.length ? `\n(${moreSitesText(sites.length - shown.length)} left out)` : '';
  return `Rank ${a} against rank ${b} at ${pointText(ranked, a, point)}, live memory by allocation site:\n\n${table}${more}`;
}
