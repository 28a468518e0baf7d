/**
 * The panel's React body: the session chart, a picker for any two
 * snapshots (the notebook's or opened files), their diff and the segment map
 * of the later one; an explanation when there is nothing to show yet.
 * Snapshot files can be dropped anywhere on it.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { CellRecord } from '../capture/store';
import { totalBytes } from '../engine';
import { IChartInput } from './chart';
import { SessionChart } from './chartview';
import { DiffView } from './diffview';
import { DiffPanelModel, SnapshotRef } from './model';
import { SegmentMap } from './segmentview';
import { LeakFinderModel } from '../leaks/model';
import { LeakView } from '../leaks/view';
import { useSignal } from './signal';
import { ICellLocation } from './stack';

/** Props of the panel body. */
export interface IPanelBodyProps {
  model: DiffPanelModel;
  leaks: LeakFinderModel;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
  onShowCell: (cellId: string) => void;
}


function recordLabel(record: CellRecord, model: DiffPanelModel): string {
  const cell = model.notebook?.cells().find(c => c.id === record.cellId);
  const count = record.executionCount ?? ' ';
  const first = cell?.source.split('\n').find(line => line.trim())?.trim() ?? '';
  return `[${count}] ${first.length > 40 ? first.slice(0, 39) + '…' : first}`;
}

function refLabel(ref: SnapshotRef, model: DiffPanelModel, trans: TranslationBundle): string {
  switch (ref.kind) {
    case 'empty':
      return trans.__('an empty device');
    case 'file':
      return trans.__('file %1', ref.file.name);
    default:
      return trans.__('cell %1', recordLabel(ref.record, model));
  }
}

/** Every snapshot the user can compare, with a stable key for the picker. */
function choices(model: DiffPanelModel, trans: TranslationBundle): { key: string; ref: SnapshotRef; label: string }[] {
  const out: { key: string; ref: SnapshotRef; label: string }[] = [
    { key: 'empty', ref: { kind: 'empty' }, label: trans.__('Empty device') }
  ];
  model.records.forEach((record, i) => out.push({ key: `r${i}`, ref: { kind: 'record', record }, label: recordLabel(record, model) }));
  model.files.forEach((file, i) => out.push({ key: `f${i}`, ref: { kind: 'file', file }, label: trans.__('file %1', file.name) }));
  return out;
}

function sameRef(a: SnapshotRef, b: SnapshotRef): boolean {
  return (
    a.kind === b.kind &&
    (a.kind !== 'record' || a.record === (b as typeof a).record) &&
    (a.kind !== 'file' || a.file === (b as typeof a).file)
  );
}

/** Two selects: what to compare. */
function ComparePicker(props: { model: DiffPanelModel; trans: TranslationBundle }): JSX.Element | null {
  const { model, trans } = props;
  const pair = model.comparison;
  if (!pair) {
    return null;
  }
  const options = choices(model, trans);
  const keyOf = (ref: SnapshotRef) => options.find(o => sameRef(o.ref, ref))?.key ?? 'empty';
  const refOf = (key: string) => options.find(o => o.key === key)?.ref ?? { kind: 'empty' as const };
  const select = (side: 'before' | 'after', value: SnapshotRef) =>
    model.compare(side === 'before' ? value : pair.before, side === 'after' ? value : pair.after);
  return (
    <div className="jp-CudaMemdiffCompare">
      {(['before', 'after'] as const).map(side => (
        <label key={side}>
          {side === 'before' ? trans.__('Before') : trans.__('After')}{' '}
          <select
            className="jp-CudaMemdiffCompare-select"
            data-cuda-memdiff-side={side}
            value={keyOf(pair[side])}
            onChange={e => select(side, refOf(e.currentTarget.value))}
          >
            {options.map(o => (
              <option key={o.key} value={o.key}>
                {o.label}
              </option>
            ))}
          </select>
        </label>
      ))}
      {model.isCustomComparison && model.records.length ? (
        <button className="jp-mod-styled jp-mod-reject" onClick={() => model.select(model.selected)}>
          {trans.__('Back to the selected cell')}
        </button>
      ) : null}
    </div>
  );
}

/** The empty state: what the panel will show and how to fill it. */
function EmptyState(props: { trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-CudaMemdiffPanel-empty" role="status">
      <p className="jp-CudaMemdiffPanel-emptyTitle">{trans.__('No GPU memory snapshots yet')}</p>
      <p>
        {trans.__(
          'Run cells of a notebook whose kernel uses PyTorch with CUDA: each cell will get a snapshot of the CUDA caching allocator, and this panel will compare them.'
        )}
      </p>
      <p>
        {trans.__(
          'Or drop snapshot files written by torch.cuda.memory._dump_snapshot() here, or open them from the file browser with "Open With" > "CUDA Memory Snapshot".'
        )}
      </p>
    </div>
  );
}

/** Read dropped files into the model. */
async function dropFiles(model: DiffPanelModel, event: React.DragEvent): Promise<void> {
  event.preventDefault();
  for (const file of Array.from(event.dataTransfer.files)) {
    model.addFile(file.name, new Uint8Array(await file.arrayBuffer()));
  }
}

/** The panel body. */
export function PanelBody(props: IPanelBodyProps): JSX.Element {
  const { model, trans } = props;
  useSignal(model.changed);
  const records = model.records;
  const device = model.device;
  const inputs: IChartInput[] = React.useMemo(() => {
    return records.map(r => ({
      allocatedBytes: totalBytes(r.snapshot, 'allocatedBytes', device),
      reservedBytes: totalBytes(r.snapshot, 'reservedBytes', device),
      oom: model.notebook?.store.hadOom(r) ?? false,
      label: recordLabel(r, model)
    }));
  }, [records, model, device]);
  const devices = model.devices;
  const pair = model.comparison;
  const diff = model.diff;
  const cells = model.cellNames();
  const selected = model.selected;
  return (
    <div
      className="jp-CudaMemdiffPanel-content"
      onDragOver={e => e.preventDefault()}
      onDrop={e => void dropFiles(model, e)}
    >
      <LeakView
        model={props.leaks}
        frames={model.frames}
        cells={cells}
        trans={trans}
        onReveal={props.onReveal}
        onShowCell={entry => entry.record.cellId && props.onShowCell(entry.record.cellId)}
        onShowDiff={entry => model.select(entry.record)}
      />
      {model.fileError ? (
        <p className="jp-CudaMemdiffPanel-error" role="alert">
          {trans.__('Could not read %1', model.fileError)}
        </p>
      ) : null}
      {!pair || !diff ? (
        <EmptyState trans={trans} />
      ) : (
        <>
          {model.notebook ? <h3 className="jp-CudaMemdiffPanel-title">{model.notebook.title}</h3> : null}
          {devices.length > 1 ? (
            <label className="jp-CudaMemdiffPanel-device">
              {trans.__('Device')}{' '}
              <select
                value={device === null ? 'all' : String(device)}
                onChange={e => (model.device = e.currentTarget.value === 'all' ? null : Number(e.currentTarget.value))}
              >
                <option value="all">{trans.__('All devices')}</option>
                {devices.map(d => (
                  <option key={d} value={String(d)}>
                    cuda:{d}
                  </option>
                ))}
              </select>
            </label>
          ) : null}
          {records.length ? (
            <SessionChart
              inputs={inputs}
              selected={selected ? records.indexOf(selected) : -1}
              onSelect={i => model.select(records[i])}
              trans={trans}
            />
          ) : null}
          <ComparePicker model={model} trans={trans} />
          <DiffView
            diff={diff}
            groups={model.groups}
            showAllFrames={model.showAllFrames}
            onShowAllFrames={v => (model.showAllFrames = v)}
            cells={cells}
            trans={trans}
            onReveal={props.onReveal}
            caption={trans.__('%1, against %2', refLabel(pair.after, model, trans), refLabel(pair.before, model, trans))}
          />
          <SegmentMap
            snapshot={model.snapshotOf(pair.after)}
            cells={cells}
            cellOrder={model.notebook?.cells().map(c => c.id) ?? []}
            showAllFrames={model.showAllFrames}
            trans={trans}
            onReveal={props.onReveal}
          />
        </>
      )}
    </div>
  );
}
