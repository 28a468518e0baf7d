import { murmur2 } from '../../engine';
import { GROUP_COLOURS, groupColours } from '../colours';

/** Places of cells in a notebook, as the segment map reads them from its cells. */
const PLACES = new Map([
  ['cell:a', 0],
  ['cell:b', 1],
  ['cell:c', 2],
  ['cell:f', 5]
]);
const placeOf = (group: string) => PLACES.get(group);

describe('groupColours', () => {
  it('gives a cell the colour of its place in the notebook, whichever cells are shown with it', () => {
    expect([...groupColours(['cell:a', 'cell:b'], placeOf)]).toEqual([
      ['cell:a', 0],
      ['cell:b', 1]
    ]);
    // the largest or not, beside other cells or alone
    expect(groupColours(['cell:c', 'cell:b'], placeOf).get('cell:b')).toBe(1);
    expect(groupColours(['cell:b'], placeOf).get('cell:b')).toBe(1);
  });

  it('gives the same colours in whatever order snapshots are coloured, and after a reload', () => {
    const first = ['cell:c', 'cell:a', 'site:model.py:12:forward'];
    const second = ['cell:a', 'cell:b'];
    const seen = [groupColours(first, placeOf), groupColours(second, placeOf)];
    // nothing is kept from one call to the next: the other order gives the same
    expect([groupColours(second, placeOf), groupColours(first, placeOf)]).toEqual([seen[1], seen[0]]);
  });

  it('gives a group with no place the colour of its key', () => {
    const site = 'site:model.py:12:forward';
    expect(groupColours([site]).get(site)).toBe(murmur2(site) % GROUP_COLOURS);
  });

  it('keeps the colours of the groups shown together apart: the smaller takes the next one free', () => {
    // cells at places 0 and 5 have one colour; shown together, the smaller gives way
    const together = groupColours(['cell:a', 'cell:f', 'cell:b'], placeOf);
    expect(together.get('cell:a')).toBe(0);
    expect(together.get('cell:f')).toBe(1);
    expect(together.get('cell:b')).toBe(2);
    // the largest keeps its own
    expect(groupColours(['cell:f', 'cell:a'], placeOf).get('cell:f')).toBe(0);
  });

  it('gives each of as many groups as it has colours one of its own, and no more', () => {
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const colours = groupColours(keys);
    expect([...colours.keys()]).toEqual(keys.slice(0, GROUP_COLOURS));
    expect(new Set(colours.values()).size).toBe(GROUP_COLOURS);
    expect(groupColours(keys, () => 0, 2).size).toBe(2);
  });
});
