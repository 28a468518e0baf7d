import { fireEvent, render, screen } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { Section, SectionBoundary } from '../section';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

function Broken(props: { fail: boolean }): JSX.Element {
  if (props.fail) {
    throw new Error('not a snapshot: truncated pickle');
  }
  return <p>drawn</p>;
}

describe('Section', () => {
  let quiet: jest.SpyInstance;
  beforeEach(() => {
    // React reports caught render errors on the console; the test expects them.
    quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => quiet.mockRestore());

  it('collapses and opens from its heading', () => {
    const onToggle = jest.fn();
    const { rerender } = render(
      <Section name="diff" title="Diff" expanded={true} onToggle={onToggle} trans={trans}>
        <p>content</p>
      </Section>
    );
    const toggle = screen.getByRole('button', { name: 'Diff' });
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(screen.getByRole('region', { name: 'Diff' }).textContent).toContain('content');
    fireEvent.click(toggle);
    expect(onToggle).toHaveBeenCalled();
    rerender(
      <Section name="diff" title="Diff" expanded={false} onToggle={onToggle} trans={trans}>
        <p>content</p>
      </Section>
    );
    expect(screen.getByRole('button', { name: 'Diff' }).getAttribute('aria-expanded')).toBe('false');
    expect(screen.queryByText('content')).toBeNull();
  });

  it('shows one line in the failing section only, and tries again when its input changes', () => {
    const view = (fail: boolean, key: number) => (
      <div>
        <Section name="chart" title="Chart" expanded={true} onToggle={() => undefined} trans={trans}>
          <p>chart drawn</p>
        </Section>
        <Section name="diff" title="Diff" expanded={true} onToggle={() => undefined} trans={trans} resetKey={key}>
          <Broken fail={fail} />
        </Section>
      </div>
    );
    const { rerender } = render(view(true, 1));
    expect(screen.getByRole('alert').textContent).toBe(
      'This part of the panel could not be shown: not a snapshot: truncated pickle'
    );
    expect(screen.getByText('chart drawn')).toBeTruthy();
    // same input: still the message
    rerender(view(false, 1));
    expect(screen.getByRole('alert')).toBeTruthy();
    // another snapshot picked: drawn again
    rerender(view(false, 2));
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getByText('drawn')).toBeTruthy();
  });

  it('contains a failure outside any section too', () => {
    render(
      <SectionBoundary trans={trans}>
        <Broken fail={true} />
      </SectionBoundary>
    );
    expect(screen.getByRole('alert').textContent).toMatch(/could not be shown/);
  });
});
