/**
 * What the snapshot file view says of a file once it is read, apart from the
 * widget so that a spec reads it as a person does.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { DeviceTotals, formatBytes, formatCount } from '../engine';
import type { IMoment } from '../worker/files';

/**
 * `40,500 allocated blocks, 3,681 trace entries`: the blocks the totals table
 * counts (allocated ones), each count grouped as the timeline's caption groups
 * its own (the bundle's plural would give the bare number).
 */
export function fileStatusText(
  totals: readonly DeviceTotals[],
  traceEntries: number,
  trans: TranslationBundle
): string {
  const allocated = totals.reduce((n, t) => n + t.allocatedBlocks, 0);
  return trans.__(
    '%1 %2, %3 %4',
    formatCount(allocated),
    trans._n('allocated block', 'allocated blocks', allocated),
    formatCount(traceEntries),
    trans._n('trace entry', 'trace entries', traceEntries)
  );
}

/**
 * A moment of the file's timeline in words: `Moment 1,718: 40 B freed (68.3
 * MiB allocated in all)`, and torch's name for the trace action
 * (`free_completed`), where a PyTorch user looks for it, for the tooltip.
 * An action without words here is said as torch names it.
 */
export function momentWords(
  m: Pick<IMoment, 'moment' | 'action' | 'size' | 'allocatedBytes'>,
  trans: TranslationBundle
): { text: string; title: string } {
  const size = formatBytes(m.size);
  const what =
    m.action === 'alloc'
      ? trans.__('%1 allocated', size)
      : m.action === 'free_completed'
        ? trans.__('%1 freed', size)
        : trans.__('%1 of %2', m.action, size);
  return {
    text: trans.__(
      'Moment %1: %2 (%3 allocated in all)',
      formatCount(m.moment + 1),
      what,
      formatBytes(m.allocatedBytes)
    ),
    title: trans.__("torch's trace action: %1", m.action)
  };
}
