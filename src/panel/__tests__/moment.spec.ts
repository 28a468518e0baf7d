// The panel's OOM view words the engine's fragmentation finding; it decides nothing itself.
import { nullTranslator } from '@jupyterlab/translation';
import { ICellSite, oomReport } from '../../engine';
import { fragmentedOom } from '../../engine/__tests__/oomCases';
import { fragmentationWords, siteLabel } from '../moment';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

describe("the OOM view's fragmentation advice", () => {
  it('says expandable segments are already on, from the same engine finding as the CLI', () => {
    const { start, atOom } = fragmentedOom(true);
    const words = fragmentationWords(oomReport(start, atOom)!.fragmentationAdvice!, trans);
    expect(words).toContain('Expandable segments are already on, so that setting will not help.');
    expect(words).not.toContain('expandable_segments:True');
  });

  it('suggests expandable segments for fixed-size ones', () => {
    const { start, atOom } = fragmentedOom(false);
    expect(fragmentationWords(oomReport(start, atOom)!.fragmentationAdvice!, trans)).toContain(
      'Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA starts.'
    );
  });
});

describe("the peak and OOM views' sites", () => {
  const cell = { id: '0', source: 'def train_step(bs): ...', executionCount: 1 };
  const site: ICellSite = {
    cell,
    line: 7,
    function: null,
    filename: '/tmp/ipykernel_1/2.py',
    frameId: 3,
    bytes: 1,
    blocks: 1
  };

  it("name a cell's own code by cell and line", () => {
    expect(siteLabel(site, trans)).toBe('Cell [1], line 7');
  });

  it('name a function one cell defined, at the place of its code', () => {
    expect(siteLabel({ ...site, function: 'train_step' }, trans)).toBe('train_step (Cell [1], line 7)');
  });
});
