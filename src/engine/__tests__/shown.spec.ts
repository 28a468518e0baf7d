// A cut list names its last item rather than saying "1 more": the line would take the item's room and hide it.
import { shownOf, sitesInBrief } from '..';

describe('what a cut list shows', () => {
  it('shows the first items and leaves two or more out', () => {
    expect(shownOf([1, 2, 3, 4, 5], 3)).toEqual([1, 2, 3]);
  });

  it('shows all where only one would be left out, and a list under the cut whole', () => {
    expect(shownOf([1, 2, 3, 4], 3)).toEqual([1, 2, 3, 4]);
    expect(shownOf([1, 2], 3)).toEqual([1, 2]);
  });

  it('leaves sites in brief nothing to say "1 more site" of', () => {
    const site = (bytes: number) => ({
      cell: null,
      line: 1,
      function: null,
      filename: 'train.py',
      frameId: bytes,
      bytes,
      blocks: 1
    });
    const brief = sitesInBrief([site(8), site(4), site(2), site(1)], 3, 20);
    expect(brief.sites.map(s => s.bytes)).toEqual([8, 4, 2, 1]);
    // what no site accounts for stays in the rest, so the list still adds up to its total
    expect(brief.rest).toEqual({ sites: 0, bytes: 5 });
  });
});
