// The panel's OOM view words the engine's fragmentation finding; it decides nothing itself.
import { nullTranslator } from '@jupyterlab/translation';
import { oomReport } from '../../engine';
import { fragmentedOom } from '../../engine/__tests__/oomCases';
import { fragmentationWords } from '../moment';

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
