/**
 * The column headers of a holder table (what filled the device at an OOM,
 * what was alive at a peak), the same in the panel and a file's view. They
 * are for screen readers, which name a cell's column as they read it: the
 * caption above the table says the same to the eye.
 */
import { TranslationBundle } from '@jupyterlab/translation';

/** What a holder table's rows are named by: an allocation site, or a cell with all its lines. */
export type HolderKind = 'site' | 'cell';

/** The headers of the bytes column and the holders' column. */
export function holderColumns(kind: HolderKind, trans: TranslationBundle): [string, string] {
  return [trans.__('Memory'), kind === 'cell' ? trans.__('Cell') : trans.__('Allocated at')];
}

/** The class that keeps the headers out of sight but in the accessibility tree. */
export const HOLDER_HEADS_CLASS = 'jp-CudaMemdiffMoment-heads';
