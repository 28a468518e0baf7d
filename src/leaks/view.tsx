/**
 * The leak finder's ranking in the panel: per cell its verdict, the bytes
 * behind it, why, who holds the memory and what to do, with the stack of the
 * main allocation site. Renders the model; computes nothing.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { recordingDetail, recordingName } from '../capture/status';
import { bytesFreedByFixes, CellCodeNames, formatBytes, FrameTable } from '../engine';
import { useSignal } from '../components/signal';
import { Section } from '../components/section';
import { ICellLocation, StackView } from '../components/stack';
import { countsCleared, HoldersNote, ILeakEntry, ILeakFindings, LeakFinderModel } from './model';
import {
  adviceWords,
  earlierRunWords,
  findingWords,
  freesWords,
  holderWords,
  lookFirstWords,
  noStacksWords
} from './words';

/** Props of LeakView. */
export interface ILeakViewProps {
  model: LeakFinderModel;
  frames: FrameTable;
  cells: CellCodeNames;
  trans: TranslationBundle;
  /** Scroll to and highlight a cell (its entry was clicked). */
  onShowCell: (entry: ILeakEntry) => void;
  /** Open a stack frame's cell line. */
  onReveal: (location: ICellLocation) => void;
  /** Show the entry's snapshot diff in the panel. */
  onShowDiff: (entry: ILeakEntry) => void;
  /** Whether the section is open; the view keeps its own state when not given. */
  expanded?: boolean;
  onToggle?: () => void;
  /** The section's element, for actions that scroll it into view. */
  sectionRef?: React.Ref<HTMLElement>;
}

/** What the user should know about the holders, in words. */
export function holdersNoteText(note: HoldersNote, trans: TranslationBundle): string {
  switch (note.kind) {
    case 'no-kernel':
      return trans.__('No kernel to ask: holders are guessed from the cells\u2019 sources.');
    case 'replay':
      return trans.__(
        'Replaying %1: no live tensors to ask about, so holders are guessed from the cells\u2019 sources.',
        recordingName(note.recording, trans)
      );
    case 'recorded':
      return note.partial
        ? trans.__(
            'Replaying %1: holders as the kernel named them when the session was recorded; its search ran out of time then, so they are partial.',
            recordingName(note.recording, trans)
          )
        : trans.__(
            'Replaying %1: holders as the kernel named them when the session was recorded.',
            recordingName(note.recording, trans)
          );
    case 'failed':
      return trans.__(
        'The kernel could not say who holds the memory (%1); holders are guessed from the cells\u2019 sources.',
        note.reason
      );
    default:
      return trans.__('The kernel ran out of time after %1 ms: holders are partial.', note.elapsedMs);
  }
}

/** Why there is nothing to rank, in words; `detail` is the error of a ranking that failed. */
export function problemText(problem: LeakFinderModel.Problem, trans: TranslationBundle, detail = ''): string {
  switch (problem) {
    case 'failed':
      return trans.__('Ranking the cells failed: %1', detail);
    case 'no-notebook':
      return trans.__('Open a notebook whose kernel takes GPU memory snapshots.');
    case 'not-python':
      return trans.__("This notebook's kernel is not Python: there is no GPU memory to rank.");
    case 'no-torch':
      return trans.__('This kernel has not imported torch: there is no GPU memory to rank.');
    case 'no-cuda':
      return trans.__("This kernel's torch has no CUDA: there is no GPU memory to rank.");
    case 'capture-off':
      return trans.__('GPU memory capture is off in the settings: there are no snapshots to rank.');
    default:
      return trans.__('No GPU memory snapshots yet: run some cells first.');
  }
}

/** Text with `code` spans as the words write them, rendered as <code> (text only, never markup). */
export function InlineCode(props: { text: string }): JSX.Element {
  return (
    <>
      {props.text
        .split('`')
        .map((part, i) => (i % 2 ? <code key={i}>{part}</code> : <React.Fragment key={i}>{part}</React.Fragment>))}
    </>
  );
}

function verdictLabel(entry: ILeakEntry, trans: TranslationBundle): string {
  switch (entry.verdict.verdict) {
    case 'leak':
      return trans.__('Leak');
    case 'retained':
      return trans.__('Retained');
    case 'unknown':
      return trans.__('Unknown');
    case 'fixed':
      return trans.__('Fixed');
    default:
      return trans.__('OK');
  }
}

function Entry(
  props: ILeakViewProps & { entry: ILeakEntry; top: boolean; findings: ILeakFindings; countsCleared: boolean }
): JSX.Element {
  const { entry, trans, top } = props;
  const v = entry.verdict;
  const label = (k: number) => props.findings.labels[k] ?? String(k);
  // In a replay the kernel's holders are the recording's: the sentences say so, not only the header.
  const holdersRecorded = props.findings.holdersNote?.kind === 'recorded';
  const bytes = v.verdict === 'leak' || v.verdict === 'fixed' ? v.leakedBytes : v.retainedBytes;
  const evidence = v.evidence[0];
  const freed = bytesFreedByFixes(v);
  return (
    <li
      className={`jp-CudaMemdiffLeak${top ? ' jp-mod-top' : ''}`}
      data-verdict={v.verdict}
      data-cell-id={entry.record.cellId ?? ''}
    >
      <div className="jp-CudaMemdiffLeak-head">
        <button
          className="jp-CudaMemdiffLeak-cell"
          onClick={() => props.onShowCell(entry)}
          disabled={entry.cellIndex === null}
          title={trans.__('Scroll to the cell')}
        >
          {entry.label}
        </button>
        {entry.earlierRun && !props.countsCleared ? (
          <span className="jp-CudaMemdiffLeak-earlier">{earlierRunWords(entry.earlierRun, trans)}</span>
        ) : null}
        <span className="jp-CudaMemdiffLeak-verdict">{verdictLabel(entry, trans)}</span>
        {bytes > 0 ? <span className="jp-CudaMemdiffLeak-bytes">{formatBytes(bytes)}</span> : null}
        {v.verdict !== 'ok' ? (
          <span className="jp-CudaMemdiffLeak-confidence">{trans.__('%1 confidence', v.confidence)}</span>
        ) : null}
      </div>
      <ul className="jp-CudaMemdiffLeak-reasons">
        {v.findings.map((f, i) => (
          <li key={i}>
            <InlineCode text={findingWords(f, label, trans, { holdersRecorded })} />
          </li>
        ))}
      </ul>
      {v.holders.length ? (
        <p className="jp-CudaMemdiffLeak-holders">
          {trans.__('Held by: ')}
          {v.holders.map((h, i) => (
            <React.Fragment key={i}>
              {i ? ', ' : null}
              <InlineCode text={holderWords(h, trans)} />
            </React.Fragment>
          ))}
        </p>
      ) : null}
      {v.fixes.length ? (
        <ul className="jp-CudaMemdiffLeak-advice" aria-label={trans.__('What to do')}>
          {v.fixes.map((a, i) => (
            <li key={i}>
              <InlineCode
                text={
                  freed && freed[i]
                    ? freesWords(freed[i], v.leakedBytes, adviceWords(a, trans), trans)
                    : adviceWords(a, trans)
                }
              />
            </li>
          ))}
        </ul>
      ) : null}
      {evidence ? (
        <details className="jp-CudaMemdiffLeak-evidence">
          <summary>
            {trans._n(
              '%2 in %1 block allocated here',
              '%2 in %1 blocks allocated here',
              evidence.blocks,
              formatBytes(evidence.bytes)
            )}
          </summary>
          <StackView
            frames={props.frames}
            stack={evidence.stack}
            filter={{}}
            cells={props.cells}
            trans={trans}
            onReveal={props.onReveal}
          />
        </details>
      ) : null}
      <button
        className="jp-CudaMemdiffLeak-diff"
        onClick={() => props.onShowDiff(entry)}
        // One such button per cell: a screen reader's list of buttons says whose diff each shows (the words seen first).
        aria-label={trans.__('Show its diff, %1', entry.label)}
      >
        {trans.__('Show its diff')}
      </button>
    </li>
  );
}

/** The status line's first sentences: the cell to look at first, or that none leaks, and what no stack explains. */
function headline(findings: ILeakFindings, trans: TranslationBundle): string {
  const top = findings.top ? lookFirstWords(findings.top, trans) : null;
  if (!findings.noStacks) {
    return top ?? trans.__('No cell leaks: what stays on the GPU has an owner you can see.');
  }
  // Without stacks "no cell leaks" is a claim the finder cannot make.
  const words = noStacksWords(findings.noStacks, trans);
  return top ? `${top} ${words}` : words;
}

/** The ranking, or why there is none. */
export function LeakView(props: ILeakViewProps): JSX.Element | null {
  const { model, trans } = props;
  useSignal(model.changed);
  const [ownExpanded, setOwnExpanded] = React.useState(true);
  const findings = model.findings;
  if (!findings && !model.error && !model.running) {
    return null;
  }
  const shown = findings?.entries.filter(e => e.verdict.verdict !== 'ok') ?? [];
  const cleared = countsCleared(shown);
  const fine = (findings?.entries.length ?? 0) - shown.length;
  return (
    <Section
      ref={props.sectionRef}
      name="leaks"
      title={trans.__('Find leaking cell')}
      expanded={props.expanded ?? ownExpanded}
      onToggle={props.onToggle ?? (() => setOwnExpanded(!ownExpanded))}
      trans={trans}
      resetKey={findings}
      actions={
        <button
          className="jp-CudaMemdiffSection-action"
          onClick={() => model.clear()}
          aria-label={trans.__('Close the leak finder')}
          title={trans.__('Close the leak finder')}
        >
          {trans.__('Close')}
        </button>
      }
    >
      {model.error ? (
        <p className="jp-CudaMemdiffLeaks-status" role="status">
          {problemText(model.error, trans, model.errorMessage)}
        </p>
      ) : !findings ? (
        <p className="jp-CudaMemdiffLeaks-status" role="status">
          {trans.__('Ranking the cells\u2026')}
        </p>
      ) : null}
      {findings ? (
        <>
          <p
            className="jp-CudaMemdiffLeaks-status"
            role="status"
            title={
              // Which recording, by its folder: where a person finds its files.
              !model.running && findings.holdersNote && 'session' in findings.holdersNote
                ? recordingDetail(findings.holdersNote.recording, findings.holdersNote.session, trans)
                : undefined
            }
          >
            <InlineCode text={headline(findings, trans)} />{' '}
            {model.running
              ? trans.__('Asking the kernel who holds the memory\u2026')
              : findings.holdersNote
                ? holdersNoteText(findings.holdersNote, trans)
                : null}
          </p>
          {model.runsSince ? (
            <p className="jp-CudaMemdiffLeaks-fine jp-CudaMemdiffLeaks-since">
              {trans._n(
                'A cell ran since these findings, which leave it out: run Find Leaking Cell again to rank it.',
                '%1 cells ran since these findings, which leave them out: run Find Leaking Cell again to rank them.',
                model.runsSince
              )}
            </p>
          ) : null}
          {cleared ? (
            <p className="jp-CudaMemdiffLeaks-fine">
              {trans.__(
                'No cell shows a count now (its outputs were cleared, or the notebook was opened without them): each entry names its run as the chart does; a click on it highlights its cell.'
              )}
            </p>
          ) : null}
          <ol className="jp-CudaMemdiffLeaks-list">
            {shown.map(entry => (
              <Entry
                key={entry.verdict.execution}
                {...props}
                entry={entry}
                top={entry === findings.top}
                findings={findings}
                countsCleared={cleared}
              />
            ))}
          </ol>
          {fine ? (
            <p className="jp-CudaMemdiffLeaks-fine">{trans.__('%1 more cell runs left nothing behind.', fine)}</p>
          ) : null}
        </>
      ) : null}
    </Section>
  );
}
