// Words the panel's peak and OOM views and the badge tooltips share; the engine decides, these only word it.
import { nullTranslator } from '@jupyterlab/translation';
import { ICellSite, oomReport } from '../../engine';
import { fragmentedOom, twoDeviceOom } from '../../engine/__tests__/oomCases';
import { fragmentationWords, oomAdvice } from '../oomwords';
import { siteText } from '../stack';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

describe('the fragmentation advice', () => {
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

describe('what to do after an OOM', () => {
  it('is the fragmentation advice where fragmentation failed the request', () => {
    const { start, atOom } = fragmentedOom(false);
    const report = oomReport(start, atOom)!;
    expect(oomAdvice(report, trans)).toBe(fragmentationWords(report.fragmentationAdvice!, trans));
  });

  it('says other processes filled the device where it fell short by more than this process held', () => {
    // cuda:0 of the two-device case: 10 GiB asked, 5 GiB free on the device, 17.0 MiB in segments
    const { start, atOom } = twoDeviceOom();
    expect(oomAdvice(oomReport(start, atOom)!, trans)).toBe(
      "Not fragmentation: the request is 4.98 GiB more than all the free memory together, more than this process's tensors held (113 MiB). Other processes, or memory outside PyTorch's allocator, filled the device."
    );
  });

  it('says nothing where the device did not say what it had free', () => {
    const { start, atOom } = twoDeviceOom();
    const noEntry = { ...atOom, traces: atOom.traces.filter(e => e.action !== 'oom') };
    expect(oomAdvice(oomReport(start, noEntry, { device: 0, alloc: 2 ** 40 })!, trans)).toBeNull();
  });
});

describe('a site in words', () => {
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
    expect(siteText(site, trans)).toBe('Cell [1], line 7');
  });

  it('name a function one cell defined, at the place of its code', () => {
    expect(siteText({ ...site, function: 'train_step' }, trans)).toBe('train_step (Cell [1], line 7)');
  });

  it('name every copy of the cell, as stacks do: the frame cannot tell which ran', () => {
    const copy = { id: '1', source: cell.source, executionCount: 3 };
    expect(siteText({ ...site, sameSource: [cell, copy] }, trans)).toBe('Cell [1], line 7 or Cell [3], line 7');
    expect(siteText({ ...site, sameSource: [cell, copy], function: 'f' }, trans)).toBe(
      'f (Cell [1], line 7 or Cell [3], line 7)'
    );
  });

  it('name a run of a deleted cell as deleted, as the peak and OOM lists and the badges put it', () => {
    const gone = { ...cell, executionCount: 4, kernel: 2, deleted: true };
    expect(siteText({ ...site, cell: gone }, trans)).toBe('A deleted cell [4] in kernel 2, line 7');
    expect(siteText({ ...site, cell: gone, function: 'train_step' }, trans)).toBe(
      'train_step (A deleted cell [4] in kernel 2, line 7)'
    );
  });

  it('name a site outside the notebook by file and line, and one without a Python stack as such', () => {
    const outside = { ...site, cell: null, filename: '/opt/lib/model.py', line: 12 };
    expect(siteText(outside, trans)).toBe('model.py:12');
    expect(siteText({ ...outside, line: null }, trans)).toBe('no Python stack');
  });
});
