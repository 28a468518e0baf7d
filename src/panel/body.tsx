/**
 * The panel's React body: the leak finder's ranking, the session chart, a
 * picker for any two snapshots (the notebook's or opened files), their diff
 * and the segment map of the later one, each in a section that collapses and
 * fails alone; an explanation when there is nothing to show yet. Snapshot
 * files can be dropped anywhere on it.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { closeIcon } from '@jupyterlab/ui-components';
import { CellRecord } from '../capture/store';
import { formatBytes, runTag, totalBytes } from '../engine';
import { IChartInput } from './chart';
import { SessionChart } from './chartview';
import { DiffView } from './diffview';
import { DiffPanelModel, IComparison, PanelSection, SnapshotRef } from './model';
import { MomentSection } from './moment';
import { FileOomBody } from './fileoom';
import { Section, sectionHeading } from '../components/section';
import { SegmentMap } from './segmentview';
import { LeakFinderModel } from '../leaks/model';
import { LeakView } from '../leaks/view';
import { useSignal } from '../components/signal';
import { IFocusKeeper, useFocusKeeper } from './focuskeeper';
import { ICellLocation } from '../components/stack';
import { sourceHeadline } from '../components/cells';
import { cellNameText } from '../components/runNames';
import { EmptyState } from './emptystate';

/** Props of the panel body. */
export interface IPanelBodyProps {
  model: DiffPanelModel;
  leaks: LeakFinderModel;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
  onShowCell: (cellId: string) => void;
  /** Files dropped on the panel: they go to the engine worker, as opened files do. */
  onDropFiles: (files: readonly File[]) => void;
}

/**
 * A record as the pickers and the chart name it: `[3] first line`, and
 * `[3] in kernel 2: first line` after a restart (the colon keeps the
 * kernel's number apart from the code). The line is the run's: a cell
 * edited since reads otherwise now, and a run of a cell deleted since reads
 * `[3] (deleted): first line`.
 */
function recordLabel(record: CellRecord, model: DiffPanelModel, trans: TranslationBundle): string {
  const { tag, source, deleted, colon } = recordParts(record, model);
  return joinSource(deleted ? trans.__('%1 (deleted)', tag) : tag, source, colon);
}

/** `[3] first line`, or `[3] in kernel 2: first line` where a colon keeps the tag apart from the code. */
function joinSource(tag: string, source: string, colon: boolean): string {
  return !source ? tag : colon ? `${tag}: ${source}` : `${tag} ${source}`;
}

/**
 * A run's tag, the first line of the code it ran, whether its cell is gone
 * from the followed notebook (deleted after it ran: still named by the code
 * its record keeps), and whether a colon keeps the tag apart from the code
 * (a kernel's number, or `(deleted)`, ends the tag).
 */
function recordParts(
  record: CellRecord,
  model: DiffPanelModel
): { tag: string; source: string; deleted: boolean; colon: boolean } {
  const notebook = model.notebook;
  const cell = notebook?.cells().find(c => c.id === record.cellId);
  const deleted = !!notebook && !cell && record.cellId !== null;
  const code = record.source ?? cell?.source;
  const source = cell || deleted ? sourceHeadline(code ?? '') : '';
  const colon = deleted || model.runOf(record).kernel !== null;
  return { tag: model.runTag(record), source, deleted, colon };
}

function refLabel(ref: SnapshotRef, model: DiffPanelModel, trans: TranslationBundle): string {
  switch (ref.kind) {
    case 'empty':
      return trans.__('an empty device');
    case 'file':
      return trans.__('file %1', model.fileLabel(ref.file));
    default: {
      // `Cell [3] preds = []`; `A deleted cell [3]: preds = []`
      const { tag, source, deleted, colon } = recordParts(ref.record, model);
      return joinSource(cellNameText(tag, deleted, trans), source, colon);
    }
  }
}

/** Every snapshot the user can compare, with a stable key for the picker. */
function choices(model: DiffPanelModel, trans: TranslationBundle): { key: string; ref: SnapshotRef; label: string }[] {
  const out: { key: string; ref: SnapshotRef; label: string }[] = [
    { key: 'empty', ref: { kind: 'empty' }, label: trans.__('Empty device') }
  ];
  model.records.forEach((record, i) =>
    out.push({ key: `r${i}`, ref: { kind: 'record', record }, label: recordLabel(record, model, trans) })
  );
  model.files.forEach((file, i) =>
    out.push({ key: `f${i}`, ref: { kind: 'file', file }, label: trans.__('file %1', model.fileLabel(file)) })
  );
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
            // a native select cuts a long first line short: the whole label on hover
            title={options.find(o => sameRef(o.ref, pair[side]))?.label}
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
        <button className="jp-CudaMemdiffCompare-back" onClick={() => model.select(model.selected)}>
          {trans.__('Back to the selected cell')}
        </button>
      ) : null}
      {model.files.length ? (
        <ul className="jp-CudaMemdiffFiles" aria-label={trans.__('Opened snapshot files')}>
          {model.files.map((file, i) => (
            <li key={i} title={file.path ?? file.name}>
              <span className="jp-CudaMemdiffFiles-name">{model.fileLabel(file)}</span>
              <button
                className="jp-CudaMemdiffFiles-close"
                onClick={() => model.removeFile(file)}
                aria-label={trans.__('Close %1', model.fileLabel(file))}
                title={trans.__('Close %1', model.fileLabel(file))}
              >
                <closeIcon.react tag="span" />
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** Which sections are open. */
type Expanded = Record<PanelSection, boolean>;

const ALL_OPEN: Expanded = { leaks: true, chart: true, fileOom: true, diff: true, segments: true };

/**
 * Scroll `container` so that `target` starts at its top (only the container
 * moves, never the page). Where what follows the target is shorter than the
 * container, the scroll could not get there: the section above would stay
 * half in sight, its sticky heading over its own content. `tail`, an empty
 * block at the end of the container, gets the height that is missing.
 *
 * The missing height is measured from where the content ends (the tail's
 * top), not from the scroll range: content shorter than the container has no
 * scroll range at all, which hid how much was missing, and the browser then
 * stopped the scroll part way, with the chart under its own heading.
 */
function scrollToTop(container: HTMLElement, target: HTMLElement, tail: HTMLElement): void {
  tail.style.height = '0px';
  const box = container.getBoundingClientRect();
  const wanted = container.scrollTop + target.getBoundingClientRect().top - box.top;
  const end = container.scrollTop + tail.getBoundingClientRect().top - box.top;
  const padding = parseFloat(getComputedStyle(container).paddingBottom) || 0;
  tail.style.height = `${Math.max(0, Math.ceil(wanted + container.clientHeight - end - padding))}px`;
  container.scrollTop = wanted;
}

/**
 * Trim the tail `scrollToTop` added to what the scroll position still needs:
 * the part below the visible bottom goes (it never moves what is in sight),
 * so scrolling back up takes the blank space away.
 */
function trimTail(container: HTMLElement, tail: HTMLElement): void {
  const height = tail.offsetHeight;
  if (!height) {
    return;
  }
  const below = container.scrollHeight - container.scrollTop - container.clientHeight;
  if (below > 0) {
    tail.style.height = `${Math.max(0, height - Math.floor(below))}px`;
  }
}

/** The chart of the session, with the device selector. */
function ChartBody(props: { model: DiffPanelModel; trans: TranslationBundle }): JSX.Element | null {
  const { model, trans } = props;
  const records = model.records;
  const device = model.device;
  // Made anew when a cell is added, edited or deleted: the labels then change (a deleted cell's run says so).
  const cellNames = model.cellNames();
  const inputs: IChartInput[] = React.useMemo(
    () =>
      records.map(r => ({
        allocatedBytes: totalBytes(r.snapshot, 'allocatedBytes', device),
        reservedBytes: totalBytes(r.snapshot, 'reservedBytes', device),
        oom: model.notebook?.store.hadOom(r) ?? false,
        label: recordLabel(r, model, trans),
        tick: runTag(r.executionCount),
        kernelSession: r.kernelSession,
        // The kernel's roles are summed over devices: stacked only when the chart shows them all.
        roles: device === null ? (r.roles?.bytes ?? null) : null
      })),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- cellNames stands for the notebook's cells, which recordLabel reads
    [records, model, device, trans, cellNames]
  );
  const devices = model.devices;
  // The chart highlights what the diff below shows, picked on the chart or in the pickers; the earlier
  // side only when picked by hand (by default it is the cell before, which needs no mark).
  const pair = model.comparison;
  const indexOf = (ref: SnapshotRef | undefined) => (ref?.kind === 'record' ? records.indexOf(ref.record) : -1);
  // The high-water mark torch reported in this kernel: kept whole even when
  // the badges only bound a cell's peak (the helper leaves the counters alone).
  const store = model.notebook?.store;
  const sessionPeak = store?.sessionPeakBytes ?? 0;
  // After a restart the counter is the new kernel's: the chart's earlier steps may stand higher than it.
  const peakKernel = records.length ? model.runOf(records[records.length - 1]).kernel : null;
  const peakTitle =
    store?.helper.peaks === 'per-cell'
      ? trans.__("The highest of the cells' peaks (the peak counters are reset before each cell).")
      : trans.__('torch.cuda.max_memory_allocated() as the kernel last reported it, summed over devices.');
  return (
    <>
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
      {sessionPeak > 0 ? (
        <p className="jp-CudaMemdiffPanel-sessionPeak" title={peakTitle}>
          {peakKernel === null
            ? trans.__('Session peak: %1 allocated', formatBytes(sessionPeak))
            : trans.__('Peak in kernel %1: %2 allocated', peakKernel, formatBytes(sessionPeak))}
        </p>
      ) : null}
      <SessionChart
        inputs={inputs}
        selected={indexOf(pair?.after)}
        compared={model.isCustomComparison ? indexOf(pair?.before) : -1}
        onSelect={i => model.select(records[i])}
        // The peak is summed over devices: drawn where the chart is too.
        peakBytes={device === null ? sessionPeak : 0}
        trans={trans}
      />
    </>
  );
}

/** The pickers and the diff of the comparison. */
function DiffBody(props: IPanelBodyProps & { pair: IComparison }): JSX.Element {
  const { model, trans, pair } = props;
  const diff = model.diff!;
  return (
    <>
      <ComparePicker model={model} trans={trans} />
      <DiffView
        diff={diff}
        groups={model.groups}
        showAllFrames={model.showAllFrames}
        onShowAllFrames={v => (model.showAllFrames = v)}
        // Offered where both snapshots have per-block roles (the kernel's; files and older helpers have none).
        grouping={model.canGroupByRole ? model.grouping : 'site'}
        onGrouping={model.canGroupByRole ? v => (model.grouping = v) : undefined}
        roleGroups={model.grouping === 'role' && model.canGroupByRole ? model.roleGroups : null}
        roleMoves={model.grouping === 'role' && model.canGroupByRole ? model.roleMoves : null}
        differentRuns={model.differentRuns}
        cells={model.cellNamesFor(pair.after, pair.before)}
        trans={trans}
        onReveal={props.onReveal}
        caption={trans.__('%1, against %2', refLabel(pair.after, model, trans), refLabel(pair.before, model, trans))}
      />
    </>
  );
}

/**
 * The panel body: sections that collapse, in one scrolling column. The leak
 * finder, the chart, the diff and the segment map share the height by
 * collapsing what is not needed; actions scroll what they open into view.
 */
export function PanelBody(props: IPanelBodyProps): JSX.Element {
  const { model, trans } = props;
  useSignal(model.changed);
  useSignal(props.leaks.changed);
  const [expanded, setExpanded] = React.useState<Expanded>(ALL_OPEN);
  // A section to bring to the top after the next render; `focus`: and give its heading the keyboard.
  const [pending, setPending] = React.useState<{ section: PanelSection; focus?: boolean } | null>(null);
  const scroller = React.useRef<HTMLDivElement>(null);
  const tail = React.useRef<HTMLDivElement>(null);
  // One object for the component's life: the effect below depends on it.
  const refs = React.useRef({
    leaks: React.createRef<HTMLElement>(),
    chart: React.createRef<HTMLElement>(),
    fileOom: React.createRef<HTMLElement>(),
    diff: React.createRef<HTMLElement>(),
    segments: React.createRef<HTMLElement>()
  }).current;
  React.useEffect(() => {
    const onReveal = (_: unknown, section: PanelSection) => {
      setExpanded(e => ({ ...e, [section]: true }));
      setPending({ section });
    };
    model.revealRequested.connect(onReveal);
    return () => {
      model.revealRequested.disconnect(onReveal);
    };
  }, [model]);
  // After the render that opened it, bring the requested section to the
  // top, in the next frame: measuring now would force the layout of all that
  // was just rendered into this task (60-80 ms for a 40,000-block file).
  React.useLayoutEffect(() => {
    if (!pending) {
      return;
    }
    const { section, focus } = pending;
    requestAnimationFrame(() => {
      const target = refs[section].current;
      if (target && scroller.current && tail.current) {
        scrollToTop(scroller.current, target, tail.current);
        if (focus) {
          sectionHeading(target)?.focus({ preventScroll: true });
        }
      }
    });
    setPending(null);
  }, [pending, refs]);
  const toggle = (section: PanelSection) => () => setExpanded(e => ({ ...e, [section]: !e[section] }));
  const focusKeeper = useFocusKeeper(scroller);
  const records = model.records;
  const pair = model.comparison;
  const snapshotKey = pair
    ? pair.after.kind === 'record'
      ? pair.after.record
      : pair.after.kind === 'file'
        ? pair.after.file
        : null
    : null;
  return (
    <DropZone onDropFiles={props.onDropFiles} focusKeeper={focusKeeper} trans={trans}>
      {model.fileError ? (
        <FileError message={model.fileError} onDismiss={() => model.dismissFileError()} trans={trans} />
      ) : null}
      <div
        ref={scroller}
        className="jp-CudaMemdiffPanel-content"
        tabIndex={0}
        role="region"
        aria-label={trans.__('CUDA Memory content')}
        onScroll={() => scroller.current && tail.current && trimTail(scroller.current, tail.current)}
      >
        <MomentSection model={model} trans={trans} onReveal={props.onReveal} show="oom" />
        <LeakView
          model={props.leaks}
          frames={model.frames}
          cells={model.cellNames()}
          trans={trans}
          expanded={expanded.leaks}
          onToggle={toggle('leaks')}
          sectionRef={refs.leaks}
          onReveal={props.onReveal}
          onShowCell={entry => entry.record.cellId && props.onShowCell(entry.record.cellId)}
          onShowDiff={entry => {
            model.select(entry.record);
            // A button of the leak list: the keyboard goes with the view to the diff it opened.
            setExpanded(e => ({ ...e, diff: true }));
            setPending({ section: 'diff', focus: true });
          }}
        />
        {!pair ? (
          <EmptyState status={model.notebook?.store.helper.status} trans={trans} />
        ) : (
          <>
            {records.length ? (
              <Section
                ref={refs.chart}
                name="chart"
                title={trans.__('Memory after each cell')}
                expanded={expanded.chart}
                onToggle={toggle('chart')}
                trans={trans}
                resetKey={records}
              >
                <ChartBody model={model} trans={trans} />
              </Section>
            ) : null}
            {pair.after.kind === 'file' && pair.after.file.oom ? (
              // Above the diff of the file it explains: what a person opens an OOM dump for, first.
              <Section
                ref={refs.fileOom}
                name="fileOom"
                title={trans.__('Out of memory in file %1', model.fileLabel(pair.after.file))}
                expanded={expanded.fileOom}
                onToggle={toggle('fileOom')}
                trans={trans}
                resetKey={pair.after.file}
              >
                <FileOomBody oom={pair.after.file.oom} cells={model.cellNamesFor(pair.after)} trans={trans} />
              </Section>
            ) : null}
            <Section
              ref={refs.diff}
              name="diff"
              title={
                model.grouping === 'role' && model.canGroupByRole
                  ? trans.__('Diff by role, then allocation site')
                  : trans.__('Diff by allocation site')
              }
              expanded={expanded.diff}
              onToggle={toggle('diff')}
              trans={trans}
              resetKey={pair.after}
            >
              <DiffBody {...props} pair={pair} />
            </Section>
            <Section
              ref={refs.segments}
              name="segments"
              title={trans.__('Segment map')}
              expanded={expanded.segments}
              onToggle={toggle('segments')}
              trans={trans}
              resetKey={snapshotKey}
            >
              <SegmentsBody model={model} after={pair.after} trans={trans} onReveal={props.onReveal} />
            </Section>
            <MomentSection model={model} trans={trans} onReveal={props.onReveal} show="peak" />
          </>
        )}
        <div ref={tail} className="jp-CudaMemdiffPanel-tail" aria-hidden="true" />
      </div>
    </DropZone>
  );
}

/**
 * Why a file could not be read, above the panel's scrolling content: in
 * sight however far the panel was scrolled when the file was dropped, until
 * the user dismisses it or a later file opens.
 */
function FileError(props: { message: string; onDismiss: () => void; trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-CudaMemdiffPanel-error" role="alert">
      <span className="jp-CudaMemdiffPanel-errorText">{trans.__('Cannot read %1', props.message)}</span>
      <button
        className="jp-CudaMemdiffPanel-errorDismiss"
        onClick={props.onDismiss}
        aria-label={trans.__('Dismiss')}
        title={trans.__('Dismiss')}
      >
        <closeIcon.react tag="span" />
      </button>
    </div>
  );
}

/** Whether a drag carries files from outside the page (the only drags the panel takes). */
function carriesFiles(event: React.DragEvent): boolean {
  return Array.from(event.dataTransfer?.types ?? []).includes('Files');
}

/**
 * The whole panel body as a drop target for snapshot files: while files are
 * dragged over it, a dashed frame and a line say that dropping opens them.
 */
function DropZone(props: {
  onDropFiles: (files: readonly File[]) => void;
  focusKeeper: IFocusKeeper;
  trans: TranslationBundle;
  children: React.ReactNode;
}): JSX.Element {
  const [over, setOver] = React.useState(false);
  // dragenter and dragleave fire for every child crossed: count them, so the cue stays while inside.
  const depth = React.useRef(0);
  return (
    <div
      className={`jp-CudaMemdiffPanel-dropZone${over ? ' jp-mod-dropTarget' : ''}`}
      onFocus={props.focusKeeper.onFocus}
      onBlur={props.focusKeeper.onBlur}
      onDragEnter={e => {
        if (carriesFiles(e)) {
          depth.current++;
          setOver(true);
        }
      }}
      onDragOver={e => {
        if (carriesFiles(e)) {
          e.preventDefault();
          e.dataTransfer.dropEffect = 'copy';
        }
      }}
      onDragLeave={e => {
        if (carriesFiles(e) && --depth.current <= 0) {
          depth.current = 0;
          setOver(false);
        }
      }}
      onDrop={e => {
        depth.current = 0;
        setOver(false);
        const files = Array.from(e.dataTransfer?.files ?? []);
        if (files.length) {
          e.preventDefault();
          props.onDropFiles(files);
        }
      }}
    >
      {props.children}
      {over ? (
        <div className="jp-CudaMemdiffPanel-dropCue" aria-hidden="true">
          <span className="jp-CudaMemdiffPanel-dropCueText">{props.trans.__('Drop snapshot files to open them')}</span>
        </div>
      ) : null}
    </div>
  );
}

/** The segment map of the later snapshot. */
function SegmentsBody(props: {
  model: DiffPanelModel;
  after: SnapshotRef;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}): JSX.Element {
  const { model } = props;
  return (
    <SegmentMap
      snapshot={model.snapshotOf(props.after)}
      roles={model.rolesOf(props.after)}
      cells={model.cellNamesFor(props.after)}
      showAllFrames={model.showAllFrames}
      trans={props.trans}
      onReveal={props.onReveal}
    />
  );
}
