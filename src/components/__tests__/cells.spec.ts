// A cell's first line as the panel's pickers, diff caption and chart quote it.
import { sourceHeadline } from '../cells';

describe('sourceHeadline', () => {
  it("drops a first line's trailing colon, which the label's own punctuation follows", () => {
    // Was "Cell [4] with torch.no_grad():, against ..." and "with torch.no_grad():: 513 MiB".
    expect(sourceHeadline('with torch.no_grad():\n    clean = [model(b) for b in batches]')).toBe(
      'with torch.no_grad()'
    );
    expect(sourceHeadline('\n  for b in batches :  \n    pass')).toBe('for b in batches');
    expect(sourceHeadline('preds = []')).toBe('preds = []');
  });

  it('cuts a long line to 40 characters', () => {
    const line = 'x = torch.randn(4096, 4096, device="cuda") * 2 + 1';
    expect(sourceHeadline(line)).toBe(line.slice(0, 39) + '…');
    expect(sourceHeadline('')).toBe('');
  });
});
