// The file view's line about a file once read, as a person sees it.
import { nullTranslator } from '@jupyterlab/translation';
import { DeviceTotals } from '../../engine';
import { fileStatusText } from '../words';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

/** A device's totals with only the allocated blocks that matter here. */
function totals(allocatedBlocks: number): DeviceTotals {
  const bytes = { allocatedBytes: 0, activeBytes: 0, reservedBytes: 0, inactiveBytes: 0, largestFreeBytes: 0 };
  return { device: 0, ...bytes, activeBlocks: allocatedBlocks, allocatedBlocks, segments: 1 };
}

describe('the file view status', () => {
  it('groups both counts alike: "3681 trace entries" stood beside "2,454 allocations"', () => {
    expect(fileStatusText([totals(40000), totals(500)], 3681, trans)).toBe(
      '40,500 allocated blocks, 3,681 trace entries'
    );
  });

  it('says one of each in the singular', () => {
    expect(fileStatusText([totals(1)], 1, trans)).toBe('1 allocated block, 1 trace entry');
  });
});
