/**
 * The panel's React body: the session chart and the diff of the selected
 * cell, for the notebook the panel follows; an explanation when there is
 * nothing to show yet.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { CellRecord } from '../capture/store';
import { IChartInput } from './chart';
import { SessionChart } from './chartview';
import { DiffView } from './diffview';
import { DiffPanelModel } from './model';
import { ICellLocation } from './stack';

/** Props of the panel body. */
export interface IPanelBodyProps {
  model: DiffPanelModel;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}

/** Re-render when the model says it changed. */
function useModel(model: DiffPanelModel): void {
  const [, setVersion] = React.useState(0);
  React.useEffect(() => {
    const update = () => setVersion(v => v + 1);
    model.changed.connect(update);
    return () => {
      model.changed.disconnect(update);
    };
  }, [model]);
}

function recordLabel(record: CellRecord, model: DiffPanelModel): string {
  const cell = model.notebook?.cells().find(c => c.id === record.cellId);
  const count = record.executionCount ?? ' ';
  const first = cell?.source.split('\n').find(line => line.trim())?.trim() ?? '';
  return `[${count}] ${first.length > 40 ? first.slice(0, 39) + '…' : first}`;
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
    </div>
  );
}

/** The panel body. */
export function PanelBody(props: IPanelBodyProps): JSX.Element {
  const { model, trans } = props;
  useModel(model);
  const records = model.records;
  const selected = model.selected;
  const inputs: IChartInput[] = React.useMemo(
    () =>
      records.map(r => ({
        allocatedBytes: r.allocatedBytes,
        reservedBytes: r.snapshot.totals.reduce((n, t) => n + t.reservedBytes, 0),
        oom: model.notebook?.store.hadOom(r) ?? false,
        label: recordLabel(r, model)
      })),
    [records, model]
  );
  if (!model.notebook || !selected) {
    return <EmptyState trans={trans} />;
  }
  const diff = model.diff;
  const pair = model.comparison!;
  const cells = model.cellNames();
  const describe = (r: CellRecord | null) =>
    r ? trans.__('cell [%1]', r.executionCount ?? ' ') : trans.__('an empty device');
  return (
    <div className="jp-CudaMemdiffPanel-content">
      <h3 className="jp-CudaMemdiffPanel-title">{model.notebook.title}</h3>
      <SessionChart
        inputs={inputs}
        selected={records.indexOf(selected)}
        onSelect={i => model.select(records[i])}
        trans={trans}
      />
      {diff ? (
        <DiffView
          diff={diff}
          groups={model.groups}
          showAllFrames={model.showAllFrames}
          onShowAllFrames={v => (model.showAllFrames = v)}
          cells={cells}
          trans={trans}
          onReveal={props.onReveal}
          caption={trans.__('After %1, against %2', describe(pair.after), describe(pair.before))}
        />
      ) : null}
    </div>
  );
}
