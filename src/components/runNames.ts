/**
 * Runs named in the panel's words, through the translator. The engine gives
 * each run as data (its count, and its kernel where the session spans
 * restarts; engine/runs.ts); this is the one place the panel, the leak
 * finder and the badges word it. The CLI words the same data in its own
 * module (cli/runNames.ts).
 */
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { cellTag, ICellSource, IRunName, runTag } from '../engine';

/** Without a translator (tests, models made without one): the English strings. */
const UNTRANSLATED = nullTranslator.load('jupyterlab_cuda_memdiff');

/** A run's tag: `[4]`, and `[4] in kernel 2` once the session restarted (counts start again in each kernel). */
export function runTagText(run: IRunName, trans: TranslationBundle = UNTRANSLATED): string {
  const tag = runTag(run.executionCount);
  return run.kernel === null ? tag : trans.__('%1 in kernel %2', tag, run.kernel);
}

/**
 * A notebook cell's tag in a label: its run's (`[3]`, `[3] in kernel 1`, see
 * runTagText), else its place (`2/5`) or `[ ]`, as the engine's cellTag.
 */
export function cellTagText(cell: ICellSource, trans: TranslationBundle = UNTRANSLATED): string {
  const count = cell.executionCount;
  return count === null || count === undefined
    ? cellTag(cell)
    : runTagText({ executionCount: count, kernel: cell.kernel ?? null }, trans);
}

/**
 * A cell named by its tag (see cellTagText): `Cell [3]`, or `A deleted cell
 * [3]` for a run of a cell no longer in the notebook (see deletedRuns).
 */
export function cellNameText(tag: string, deleted: boolean, trans: TranslationBundle = UNTRANSLATED): string {
  return deleted ? trans.__('A deleted cell %1', tag) : trans.__('Cell %1', tag);
}
