import { GroupColours, keepColours } from '../colours';

describe('keepColours', () => {
  it('gives the largest groups of a first snapshot the colours in order', () => {
    expect([...keepColours(['cell:a', 'cell:b'], new Map(), 5)]).toEqual([
      ['cell:a', 0],
      ['cell:b', 1]
    ]);
  });

  it('keeps a group its colour when it is no longer the largest', () => {
    // [4]'s map: Cell [3] is largest; [2]'s map: Cell [1] is, and Cell [2] is new
    const given = new Map([
      ['cell:3', 0],
      ['cell:1', 1]
    ]);
    const colours = keepColours(['cell:1', 'cell:2'], given, 5);
    expect(colours.get('cell:1')).toBe(1);
    // a new group takes a colour no group had, not Cell [3]'s
    expect(colours.get('cell:2')).toBe(2);
  });

  it('keeps the colours of the groups shown together apart', () => {
    // every colour was given; two groups shown together once had the same one
    const given = new Map([
      ['a', 0],
      ['b', 1],
      ['c', 2],
      ['d', 0]
    ]);
    const colours = keepColours(['a', 'd', 'b'], given, 3);
    expect(colours.get('a')).toBe(0);
    expect(colours.get('b')).toBe(1);
    // the smaller gives way, to the colour no shown group holds
    expect(colours.get('d')).toBe(2);
  });

  it('colours no more groups than it has colours', () => {
    expect(keepColours(['a', 'b', 'c'], new Map(), 2).size).toBe(2);
  });
});

describe('GroupColours', () => {
  it('remembers a group across snapshots until cleared', () => {
    const colours = new GroupColours(5);
    colours.colour(['cell:3', 'cell:1']);
    expect(colours.colour(['cell:1', 'cell:2'])).toEqual(
      new Map([
        ['cell:1', 1],
        ['cell:2', 2]
      ])
    );
    // asking again changes nothing
    expect(colours.colour(['cell:3', 'cell:1']).get('cell:3')).toBe(0);
    colours.clear();
    expect(colours.colour(['cell:1']).get('cell:1')).toBe(0);
  });
});
