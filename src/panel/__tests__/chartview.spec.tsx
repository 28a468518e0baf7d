// The session chart as a keyboard and screen-reader user meets it: one band in the tab order, the arrow keys
// moving the selection and the focus together, and the diff's two sides told apart.
import { fireEvent, render, screen } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { SessionChart } from '../chartview';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const MiB = 2 ** 20;
const inputs = [1, 2, 3, 4, 5, 6].map(k => ({
  allocatedBytes: k * MiB,
  reservedBytes: 8 * MiB,
  oom: false,
  label: `[${k}]`
}));

/** The chart with the panel's part played by state: a selection sets the shown cell and the one before it. */
function Selecting(props: { initial: number }): JSX.Element {
  const [selected, setSelected] = React.useState(props.initial);
  return (
    <SessionChart inputs={inputs} selected={selected} compared={selected - 1} onSelect={setSelected} trans={trans} />
  );
}

/**
 * A band's title: its hover text and, in a browser, its name (Galata's chart.spec checks the name Chromium gives;
 * jsdom's name computation reads the title of an svg element only).
 */
const titleOf = (band: Element) => band.querySelector(':scope > title')?.textContent;
const selectedTitle = () => titleOf(screen.getByRole('option', { selected: true }));

describe('SessionChart keys', () => {
  it('moves the selection and the focus one cell per arrow key, Home and End to the ends', () => {
    render(<Selecting initial={3} />);
    const bands = screen.getAllByRole('option');
    expect(bands.filter(b => b.getAttribute('tabindex') === '0')).toEqual([bands[3]]);
    fireEvent.click(bands[1]);
    bands[1].focus();
    for (let k = 0; k < 3; k++) {
      fireEvent.keyDown(document.activeElement!, { key: 'ArrowRight' });
    }
    expect(selectedTitle()).toMatch(/^\[5\]/);
    expect(document.activeElement).toBe(bands[4]);
    fireEvent.keyDown(document.activeElement!, { key: 'ArrowLeft' });
    expect(selectedTitle()).toMatch(/^\[4\]/);
    fireEvent.keyDown(document.activeElement!, { key: 'End' });
    expect(selectedTitle()).toMatch(/^\[6\]/);
    // past the last cell nothing moves
    fireEvent.keyDown(document.activeElement!, { key: 'ArrowRight' });
    expect(selectedTitle()).toMatch(/^\[6\]/);
    fireEvent.keyDown(document.activeElement!, { key: 'Home' });
    expect(selectedTitle()).toMatch(/^\[1\]/);
    expect(document.activeElement).toBe(bands[0]);
    // still one band in the tab order: the selected one
    expect(bands.filter(b => b.getAttribute('tabindex') === '0')).toEqual([bands[0]]);
  });

  it("marks the diff's later side as selected and names its earlier side", () => {
    render(<SessionChart inputs={inputs} selected={2} compared={1} onSelect={jest.fn()} trans={trans} />);
    const bands = screen.getAllByRole('option');
    expect(bands.map(b => b.getAttribute('aria-selected'))).toEqual([
      'false',
      'false',
      'true',
      'false',
      'false',
      'false'
    ]);
    expect(titleOf(bands[1])).toMatch(/^\[2\].*the diff compares against it$/);
    expect(bands[1].classList.contains('jp-mod-compared')).toBe(true);
    expect(bands.filter(b => /compares/.test(titleOf(b) ?? ''))).toEqual([bands[1]]);
    // one text, no aria-label beside it: the title would be read again as the band's description
    expect(bands.filter(b => b.hasAttribute('aria-label'))).toEqual([]);
  });

  it('keeps the chart in the tab order when the diff shows no cell of it', () => {
    render(<SessionChart inputs={inputs} selected={-1} onSelect={jest.fn()} trans={trans} />);
    const bands = screen.getAllByRole('option');
    expect(bands.filter(b => b.getAttribute('tabindex') === '0')).toEqual([bands[5]]);
  });
});

describe('SessionChart marks', () => {
  it('writes the OOM labels and the restart labels in rows of their own: an OOM right after a restart shows both', () => {
    // the kernel restarted before [3], which ran out of memory, as [2] did before the restart
    const restarted = inputs
      .slice(0, 4)
      .map((input, k) => ({ ...input, oom: k === 1 || k === 2, kernelSession: k < 2 ? 1 : 2 }));
    const { container } = render(
      <SessionChart inputs={restarted} selected={3} onSelect={() => undefined} trans={trans} />
    );
    const ooms = [...container.querySelectorAll('text.jp-CudaMemdiffChart-oom')];
    const restart = container.querySelector('.jp-CudaMemdiffChart-restart text')!;
    expect(ooms.map(t => t.textContent)).toEqual(['OOM', 'OOM']);
    expect(restart.textContent).toBe('restart');
    // 10px labels on baselines 10px or more apart do not overlap, wherever the restart line falls
    const FONT_PX = 10;
    for (const oom of ooms) {
      expect(Number(restart.getAttribute('y')) - Number(oom.getAttribute('y'))).toBeGreaterThanOrEqual(FONT_PX + 2);
    }
  });
});

describe('SessionChart scale', () => {
  const named = inputs.map((input, k) => ({ ...input, tick: `[${k + 1}]` }));

  it('names the steps under the plot by their prompts, for the eye (the bands name them to screen readers)', () => {
    const { container } = render(<SessionChart inputs={named} selected={2} onSelect={jest.fn()} trans={trans} />);
    const names = container.querySelector('.jp-CudaMemdiffChart-cellLabels')!;
    expect(names.getAttribute('aria-hidden')).toBe('true');
    expect([...names.querySelectorAll('text')].map(t => t.textContent)).toEqual([
      '[1]',
      '[2]',
      '[3]',
      '[4]',
      '[5]',
      '[6]'
    ]);
    // the shown cell's name stands out
    expect(names.querySelector('.jp-mod-selected')?.textContent).toBe('[3]');
  });

  it('draws the session peak as a level, with its key, only when given one', () => {
    const { container, rerender } = render(
      <SessionChart inputs={named} selected={2} onSelect={jest.fn()} peakBytes={12 * MiB} trans={trans} />
    );
    expect(container.querySelectorAll('line.jp-CudaMemdiffChart-peak')).toHaveLength(1);
    expect(container.querySelector('.jp-CudaMemdiffChart-key.jp-mod-peak')?.textContent).toBe('session peak');
    rerender(<SessionChart inputs={named} selected={2} onSelect={jest.fn()} trans={trans} />);
    expect(container.querySelectorAll('line.jp-CudaMemdiffChart-peak')).toHaveLength(0);
    expect(container.querySelector('.jp-CudaMemdiffChart-key.jp-mod-peak')).toBeNull();
  });
});
