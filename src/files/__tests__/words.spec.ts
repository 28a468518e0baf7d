// The file view's line about a file once read, as a person sees it.
import { nullTranslator } from '@jupyterlab/translation';
import { DeviceTotals } from '../../engine';
import { fileStatusText, momentWords } from '../words';

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

describe('a moment of the file timeline', () => {
  const moment = { moment: 1717, size: 40, allocatedBytes: 71618560, frames: [] };

  it('says what happened in words, torch\'s action in the tooltip (before: "free_completed of 40 B")', () => {
    expect(momentWords({ ...moment, action: 'free_completed' }, trans)).toEqual({
      text: 'Moment 1,718: 40 B freed (68.3 MiB allocated in all)',
      title: "torch's trace action: free_completed"
    });
    expect(momentWords({ ...moment, moment: 0, action: 'alloc', size: 6912, allocatedBytes: 7168 }, trans)).toEqual({
      text: 'Moment 1: 6.75 KiB allocated (7.00 KiB allocated in all)',
      title: "torch's trace action: alloc"
    });
  });

  it('gives an action it has no words for as torch names it', () => {
    expect(momentWords({ ...moment, action: 'segment_map' }, trans).text).toBe(
      'Moment 1,718: segment_map of 40 B (68.3 MiB allocated in all)'
    );
  });
});
