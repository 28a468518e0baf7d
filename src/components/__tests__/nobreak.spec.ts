import { keepFiguresWhole } from '../nobreak';

const NBSP = '\u00a0';

describe('keepFiguresWhole', () => {
  it('keeps "line N" and the kernel number with their words', () => {
    expect(keepFiguresWhole('Cell [3] in kernel 2, line 3')).toBe(`Cell [3] in kernel${NBSP}2, line${NBSP}3`);
    expect(keepFiguresWhole('Cell 2/6, line 4')).toBe(`Cell${NBSP}2/6, line${NBSP}4`);
  });

  it('keeps a size with its unit', () => {
    expect(keepFiguresWhole('60.0 MiB')).toBe(`60.0${NBSP}MiB`);
    expect(keepFiguresWhole('512 B')).toBe(`512${NBSP}B`);
  });

  it('leaves the other spaces, where a long label may still wrap', () => {
    const text = keepFiguresWhole('train_step (Cell [1], line 7 or Cell [3], line 7)');
    expect(text).toBe(`train_step (Cell [1], line${NBSP}7 or Cell [3], line${NBSP}7)`);
    expect(keepFiguresWhole('model.py:12')).toBe('model.py:12');
    expect(keepFiguresWhole('no Python stack')).toBe('no Python stack');
    // a number before a word that is no unit stays breakable
    expect(keepFiguresWhole('3 blocks')).toBe('3 blocks');
  });
});
