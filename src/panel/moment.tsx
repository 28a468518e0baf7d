/**
 * The selected cell's moment of truth, from its allocation history: for a
 * cell that ran out of memory, the post-mortem (the request against the free
 * memory, fragmentation, what filled the device, by site and by cell, as a
 * diff against the cell's start); otherwise what was alive at its peak, as a
 * diff against its start. Shown first in the panel; nothing without history.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { CellRecord } from '../capture/store';
import {
  CellCodeNames,
  cellSites,
  formatBytes,
  groupBySite,
  ICellSite,
  IOomReport,
  IPeakAnatomy,
  SnapshotDiff,
  shownOf
} from '../engine';
import { DiffView } from './diffview';
import { DiffPanelModel } from './model';
import { Section } from '../components/section';
import { oomFacts } from '../components/oomwords';
import { copiesText, ICellLocation, siteText } from '../components/stack';
import { keepFiguresWhole } from '../components/nobreak';
import { HOLDER_HEADS_CLASS, holderColumns, HolderKind } from '../components/holdercolumns';

/** Rows of the holder tables. */
const ROWS_SHOWN = 5;

export interface IMomentSectionProps {
  model: DiffPanelModel;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}

/**
 * The OOM post-mortem (`show: 'oom'`: open, meant to come first) of the
 * selected cell, or the peak (`show: 'peak'`: collapsed until asked for) of
 * the cell whose diff the panel shows, in a section of its own; null when the
 * cell has none. The peak follows the diff, next to which it is shown: none
 * while the diff shows a file or an empty device, where no cell is compared.
 */
export function MomentSection(props: IMomentSectionProps & { show: 'oom' | 'peak' }): JSX.Element | null {
  const { model, trans } = props;
  const [expanded, setExpanded] = React.useState(props.show === 'oom');
  const record = props.show === 'oom' ? model.selected : model.shownRecord;
  const store = model.notebook?.store;
  if (!record || !store) {
    return null;
  }
  const oom = store.oomOf(record);
  const peak = oom ? null : store.peakOf(record);
  if ((props.show === 'oom' && !oom) || (props.show === 'peak' && !peak)) {
    return null;
  }
  const cell = model.runTag(record);
  return (
    <Section
      name={oom ? 'oom' : 'peak'}
      title={oom ? trans.__('Out of memory in Cell %1', cell) : trans.__('Peak of Cell %1', cell)}
      expanded={expanded}
      onToggle={() => setExpanded(e => !e)}
      trans={trans}
      resetKey={record}
    >
      {oom ? <OomBody {...props} record={record} oom={oom} /> : <PeakBody {...props} record={record} peak={peak!} />}
    </Section>
  );
}

/** Bytes by allocating cell (all its lines together), largest first. */
function byCell(sites: readonly ICellSite[], trans: TranslationBundle): { label: string; bytes: number }[] {
  const sums = new Map<string, number>();
  for (const s of sites) {
    const label = s.cell
      ? copiesText(s.sameSource ?? [s.cell], s.line, trans, 'cellLabel')
      : trans.__('outside the notebook');
    sums.set(label, (sums.get(label) ?? 0) + s.bytes);
  }
  return [...sums.entries()].map(([label, bytes]) => ({ label, bytes })).sort((p, q) => q.bytes - p.bytes);
}

/**
 * The largest rows, then one that sums the rows left out (`more` words their
 * number), so the table adds up to what it breaks down.
 */
function HolderTable(props: {
  caption: string;
  rows: { label: string; bytes: number }[];
  name: HolderKind;
  more: (count: number) => string;
  trans: TranslationBundle;
}): JSX.Element {
  const shown = shownOf(props.rows, ROWS_SHOWN);
  const rest = props.rows.slice(shown.length);
  const [memory, holder] = holderColumns(props.name, props.trans);
  return (
    <table className="jp-CudaMemdiffMoment-table" data-cuda-memdiff-holders={props.name}>
      <caption>{props.caption}</caption>
      <thead className={HOLDER_HEADS_CLASS}>
        <tr>
          <th scope="col">{memory}</th>
          <th scope="col">{holder}</th>
        </tr>
      </thead>
      <tbody>
        {shown.map(r => (
          <tr key={r.label}>
            <td className="jp-CudaMemdiffMoment-bytes">{formatBytes(r.bytes)}</td>
            <td>{keepFiguresWhole(r.label)}</td>
          </tr>
        ))}
        {rest.length ? (
          <tr className="jp-CudaMemdiffMoment-more">
            <td className="jp-CudaMemdiffMoment-bytes">{formatBytes(rest.reduce((n, r) => n + r.bytes, 0))}</td>
            <td>{props.more(rest.length)}</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

/** The moment against the cell's start, as the diff section shows a pair. */
function MomentDiff(
  props: IMomentSectionProps & { diff: SnapshotDiff; caption: string; cells: CellCodeNames }
): JSX.Element {
  const { model, diff } = props;
  return (
    <DiffView
      diff={diff}
      groups={groupBySite(diff, { allFrames: model.showAllFrames })}
      showAllFrames={model.showAllFrames}
      onShowAllFrames={v => (model.showAllFrames = v)}
      cells={props.cells}
      trans={props.trans}
      onReveal={props.onReveal}
      caption={props.caption}
    />
  );
}

function OomBody(props: IMomentSectionProps & { record: CellRecord; oom: IOomReport }): JSX.Element {
  const { model, trans, oom } = props;
  // The frames are the failing run's kernel's: its runs name the cells.
  const cells = model.cellNames(props.record.kernelSession);
  const runOf = model.notebook?.store.runsAtOom(props.record);
  const sites = cellSites(oom.held, oom.atOom.frames, cells, { allFrames: model.showAllFrames }, runOf);
  const words = oomFacts(oom, trans);
  return (
    <div className="jp-CudaMemdiffMoment">
      <p className="jp-CudaMemdiffMoment-summary" role="alert">
        {words.summary}
      </p>
      <dl className="jp-CudaMemdiffMoment-facts">
        {words.facts.map(([label, value]) => (
          <React.Fragment key={label}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </React.Fragment>
        ))}
      </dl>
      {words.advice ? <p className="jp-CudaMemdiffMoment-advice">{words.advice}</p> : null}
      <HolderTable
        name="site"
        caption={trans.__('What filled the device, by site')}
        rows={sites.map(s => ({ label: siteText(s, trans), bytes: s.bytes }))}
        more={n => trans._n('%1 more site', '%1 more sites', n)}
        trans={trans}
      />
      <HolderTable
        name="cell"
        caption={trans.__('By cell')}
        rows={byCell(sites, trans)}
        more={n => trans._n('%1 more cell', '%1 more cells', n)}
        trans={trans}
      />
      <MomentDiff
        {...props}
        diff={oom.diff}
        cells={cells}
        caption={trans.__("At the error, against the cell's start")}
      />
    </div>
  );
}

function PeakBody(props: IMomentSectionProps & { record: CellRecord; peak: IPeakAnatomy }): JSX.Element {
  const { model, trans, peak } = props;
  const cells = model.cellNames(props.record.kernelSession);
  const runOf = model.notebook?.store.runsAtPeak(props.record);
  const sites = cellSites(peak.alive, props.record.snapshot.frames, cells, { allFrames: model.showAllFrames }, runOf);
  return (
    <div className="jp-CudaMemdiffMoment">
      <p className="jp-CudaMemdiffMoment-summary">
        {peak.complete
          ? trans.__('At its peak the cell had %1 allocated.', formatBytes(peak.bytes))
          : trans.__(
              'At its peak the cell had %1 or more allocated (the history lost entries).',
              formatBytes(peak.bytes)
            )}
      </p>
      <HolderTable
        name="site"
        caption={trans.__('Alive at the peak, by site')}
        rows={sites.map(s => ({ label: siteText(s, trans), bytes: s.bytes }))}
        more={n => trans._n('%1 more site', '%1 more sites', n)}
        trans={trans}
      />
      <MomentDiff
        {...props}
        diff={peak.diff}
        cells={cells}
        caption={trans.__("The peak moment, against the cell's start")}
      />
    </div>
  );
}
