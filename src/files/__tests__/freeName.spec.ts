import { freeName } from '../freeName';

describe('freeName', () => {
  it('takes the name itself while nothing has it', () => {
    expect(freeName(new Set(['demo.ipynb']), 'demo-cuda-memdiff-session')).toBe('demo-cuda-memdiff-session');
  });

  it('counts on from -2 past the names taken, with the extension after the count', () => {
    const taken = new Set(['demo-cell4.pickle', 'demo-cell4-2.pickle', 'demo-cell4-3']);
    expect(freeName(taken, 'demo-cell4', '.pickle')).toBe('demo-cell4-3.pickle');
  });

  it('takes a name in another case as taken: a disk that ignores case would write over it', () => {
    expect(freeName(new Set(['Demo-cell4.pickle']), 'demo-cell4', '.pickle')).toBe('demo-cell4-2.pickle');
  });
});
