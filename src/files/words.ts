/**
 * What the snapshot file view says of a file once it is read, apart from the
 * widget so that a spec reads it as a person does.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { DeviceTotals, formatCount } from '../engine';

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
