// The panel's words for a run, from the engine's data (engine/runs.ts): the same names the panel showed when the
// engine built them in English (runs.spec.ts asserted these strings of the engine), now through the translator.
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { cellsAsRun, runNames } from '../../engine';
import { cellTagText, runTagText } from '../runNames';
import { cellFrameLabel } from '../stack';

const english = nullTranslator.load('jupyterlab_cuda_memdiff');
/** A translator that marks what went through it: «…». */
const marked: TranslationBundle = { ...english, __: (text, ...args) => `«${english.__(text, ...args)}»` };

describe("a run's name in the panel", () => {
  const run = (executionCount: number | null, kernelSession: number) => ({
    cellId: 'a',
    executionCount,
    kernelSession
  });

  it('tags a run with its kernel once the session restarted', () => {
    expect(runNames([run(1, 4), run(2, 4)]).map(r => runTagText(r, english))).toEqual(['[1]', '[2]']);
    expect(runNames([run(1, 4), run(2, 4), run(1, 5), run(null, 5)]).map(r => runTagText(r, english))).toEqual([
      '[1] in kernel 1',
      '[2] in kernel 1',
      '[1] in kernel 2',
      '[ ] in kernel 2'
    ]);
  });

  it('names a cell by its run in the kernel of the snapshot, else by its latest run, else by its place', () => {
    const cells = ['a', 'b', 'c'].map((id, k) => ({ id, source: id, position: { index: k + 1, total: 3 } }));
    // kernel 4: a [1], b [2]; kernel 5: b [1]
    const runs = [
      { cellId: 'a', executionCount: 1, kernelSession: 4 },
      { cellId: 'b', executionCount: 2, kernelSession: 4 },
      { cellId: 'b', executionCount: 1, kernelSession: 5 }
    ];
    const tags = (kernelSession: number, of = runs) => cellsAsRun(cells, of, kernelSession).map(c => cellTagText(c));
    expect(tags(4)).toEqual(['[1] in kernel 1', '[2] in kernel 1', '3/3']);
    expect(tags(5)).toEqual(['[1] in kernel 1', '[1] in kernel 2', '3/3']);
    // one kernel: names as before restarts existed
    expect(tags(4, runs.slice(0, 2))).toEqual(['[1]', '[2]', '3/3']);
  });

  it('words the kernel through the translator, and only the kernel: a tag alone is notation', () => {
    expect(runTagText({ executionCount: 3, kernel: 2 }, marked)).toBe('«[3] in kernel 2»');
    expect(runTagText({ executionCount: 3, kernel: null }, marked)).toBe('[3]');
    const cell = { id: 'a', source: 'x = 1', executionCount: 3, kernel: 2 };
    expect(cellFrameLabel(cell, 1, marked).label).toBe('«Cell «[3] in kernel 2», line 1»');
    expect(cellFrameLabel(cell, 1).label).toBe('Cell [3] in kernel 2, line 1');
  });
});
