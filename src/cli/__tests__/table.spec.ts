/**
 * @jest-environment node
 */
import { MAX_LINE_WIDTH, renderTable, wrapText } from '../table';

describe('wrapText', () => {
  it('breaks at spaces within the width, keeping a cell name whole', () => {
    expect(wrapText('left 64.0 MiB alive, all freed later (by Cell [3])', 44)).toEqual([
      'left 64.0 MiB alive, all freed later (by',
      'Cell [3])'
    ]);
    expect(wrapText('grew (Cell [ ] (index 2) → Cell [ ] (index 3))', 30)).toEqual([
      'grew (Cell [ ] (index 2) →',
      'Cell [ ] (index 3))'
    ]);
  });

  it('cuts a word longer than a line across lines, not between the halves of a surrogate pair', () => {
    expect(wrapText(`at ${'a'.repeat(25)} end`, 10)).toEqual(['at', 'aaaaaaaaaa', 'aaaaaaaaaa', 'aaaaa end']);
    expect(wrapText(`${'b'.repeat(4)}😀x`, 5)).toEqual(['bbbb', '😀x']);
  });
});

describe('renderTable with a wrapped column', () => {
  it('keeps each line within the width and continues the cell under its column', () => {
    const why = 'word '.repeat(60).trim();
    const lines = renderTable(
      [
        { header: 'n', right: true },
        { header: 'why', wrap: true }
      ],
      [['1', why]]
    ).split('\n');
    expect(Math.max(...lines.map(l => l.length))).toBeLessThanOrEqual(MAX_LINE_WIDTH);
    expect(lines[2].startsWith('1  word')).toBe(true);
    expect(lines.slice(3).every(l => l.startsWith('   word'))).toBe(true);
    expect(
      lines
        .slice(2)
        .map(l => l.slice(3))
        .join(' ')
    ).toBe(why);
  });
});
