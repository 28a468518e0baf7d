/**
 * The ranks view: a multi-rank session (docs/ranks-format.md) opened from its
 * ranks.json. It says which rank grows and from where, draws every rank's
 * allocated memory on one chart, lists a chosen rank's capture points, and
 * compares two ranks at one point by allocation site. The files are parsed
 * in the engine worker; this view only shows figures.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { unreadableReason } from '../components/unreadable';
import { formatBytes } from '../engine';
import { ranksChart } from './chart';
import { IRanksSummary, ISiteSummary } from '../worker/ranks';
import { missingText, siteText, verdictText } from './words';

const WIDTH = 560;
const HEIGHT = 180;

/** Compares two ranks at a point (the engine worker's `compareRanks`). */
export type CompareRanks = (
  a: number,
  b: number,
  point: number
) => Promise<(ISiteSummary & { aBytes: number; bBytes: number })[]>;

export interface IRanksViewProps {
  summary: IRanksSummary;
  compare: CompareRanks;
  trans: TranslationBundle;
}

function RanksChart(props: { summary: IRanksSummary; trans: TranslationBundle }): JSX.Element {
  const { summary, trans } = props;
  const chart = React.useMemo(() => ranksChart(summary.ranks, { width: WIDTH, height: HEIGHT }), [summary]);
  return (
    <figure className="jp-CudaMemdiffRanks-chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={trans.__('Allocated memory of each rank at each capture point')}
      >
        {chart.ticks.map(t => (
          <g key={t.y} className="jp-CudaMemdiffChart-tick">
            <line x1={chart.plotLeft} x2={WIDTH} y1={t.y} y2={t.y} />
            <text x={chart.plotLeft - 4} y={t.y} dominantBaseline="middle" textAnchor="end">
              {formatBytes(t.bytes)}
            </text>
          </g>
        ))}
        {chart.lines.map((l, i) => (
          <g key={l.rank} className={`jp-CudaMemdiffRanks-line jp-CudaMemdiffRanks-line${i % 4}`} data-rank={l.rank}>
            <path d={l.path} />
            {l.points.map((p, k) => (
              <circle key={k} cx={p.x} cy={p.y} r={3} data-bytes={p.bytes}>
                <title>{trans.__('Rank %1, %2: %3 allocated', l.rank, p.label, formatBytes(p.bytes))}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <figcaption className="jp-CudaMemdiffRanks-legend">
        {chart.lines.map((l, i) => (
          <span key={l.rank} className={`jp-CudaMemdiffRanks-key jp-CudaMemdiffRanks-line${i % 4}`}>
            {trans.__('rank %1', l.rank)}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}

function RankPoints(props: { summary: IRanksSummary; trans: TranslationBundle }): JSX.Element {
  const { summary, trans } = props;
  const [rank, setRank] = React.useState(summary.ranks[0].rank);
  const shown = summary.ranks.find(r => r.rank === rank) ?? summary.ranks[0];
  return (
    <section className="jp-CudaMemdiffRanks-rank" aria-label={trans.__('One rank')}>
      <label>
        {trans.__('Rank')}{' '}
        <select value={shown.rank} onChange={e => setRank(Number(e.target.value))}>
          {summary.ranks.map(r => (
            <option key={r.rank} value={r.rank}>
              {r.host ? trans.__('rank %1 on %2', r.rank, r.host) : trans.__('rank %1', r.rank)}
            </option>
          ))}
        </select>
      </label>
      <table className="jp-CudaMemdiffRanks-table">
        <thead>
          <tr>
            <th scope="col">{trans.__('Capture point')}</th>
            <th scope="col">{trans.__('Allocated')}</th>
            <th scope="col">{trans.__('Change')}</th>
          </tr>
        </thead>
        <tbody>
          {shown.points.map((p, k) => (
            <tr key={k}>
              <th scope="row">{p.label}</th>
              <td>{formatBytes(p.allocatedBytes)}</td>
              <td>{k === 0 ? '' : formatBytes(p.allocatedBytes - shown.points[k - 1].allocatedBytes, true)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function RankComparison(props: IRanksViewProps): JSX.Element {
  const { summary, compare, trans } = props;
  const ranks = summary.ranks.map(r => r.rank);
  const common = Math.min(...summary.ranks.map(r => r.points.length));
  const [a, setA] = React.useState(ranks[0]);
  const [b, setB] = React.useState(ranks[Math.min(1, ranks.length - 1)]);
  const [point, setPoint] = React.useState(Math.max(0, common - 1));
  const [sites, setSites] = React.useState<Awaited<ReturnType<CompareRanks>> | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  React.useEffect(() => {
    let live = true;
    setSites(null);
    compare(a, b, point).then(
      s => live && (setSites(s), setError(null)),
      reason => live && setError(unreadableReason(reason))
    );
    return () => {
      live = false;
    };
  }, [a, b, point, compare]);
  const pick = (value: number, set: (n: number) => void, label: string) => (
    <select aria-label={label} value={value} onChange={e => set(Number(e.target.value))}>
      {ranks.map(r => (
        <option key={r} value={r}>
          {trans.__('rank %1', r)}
        </option>
      ))}
    </select>
  );
  const labels = summary.ranks[0].points.slice(0, common).map(p => p.label);
  return (
    <section className="jp-CudaMemdiffRanks-compare" aria-label={trans.__('Two ranks compared')}>
      <div className="jp-CudaMemdiffRanks-controls">
        {pick(a, setA, trans.__('First rank'))} {trans.__('against')} {pick(b, setB, trans.__('Second rank'))}{' '}
        {trans.__('at')}{' '}
        <select aria-label={trans.__('Capture point')} value={point} onChange={e => setPoint(Number(e.target.value))}>
          {labels.map((label, k) => (
            <option key={k} value={k}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {error ? (
        <p role="alert">{error}</p>
      ) : sites === null ? (
        <p role="status">{trans.__('Comparing…')}</p>
      ) : sites.length === 0 ? (
        <p role="status">{trans.__('Both ranks hold the same bytes at every allocation site.')}</p>
      ) : (
        <table className="jp-CudaMemdiffRanks-table">
          <thead>
            <tr>
              <th scope="col">{trans.__('rank %1', a)}</th>
              <th scope="col">{trans.__('rank %1', b)}</th>
              <th scope="col">{trans.__('Difference')}</th>
              <th scope="col">{trans.__('Allocation site')}</th>
            </tr>
          </thead>
          <tbody>
            {sites.slice(0, 20).map((s, k) => (
              <tr key={k}>
                <td>{formatBytes(s.aBytes)}</td>
                <td>{formatBytes(s.bBytes)}</td>
                <td>{formatBytes(s.bBytes - s.aBytes, true)}</td>
                <td className="jp-CudaMemdiffRanks-site" title={s.filename}>
                  {siteText(s, trans)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The whole view of one multi-rank session. */
export function RanksView(props: IRanksViewProps): JSX.Element {
  const { summary, trans } = props;
  return (
    <div className="jp-CudaMemdiffRanks">
      <p className="jp-CudaMemdiffRanks-verdict" role="status">
        {verdictText(summary, trans)}
      </p>
      {summary.missing.length > 0 && <p role="alert">{missingText(summary, trans)}</p>}
      <RanksChart summary={summary} trans={trans} />
      <RankPoints summary={summary} trans={trans} />
      <RankComparison {...props} />
    </div>
  );
}
