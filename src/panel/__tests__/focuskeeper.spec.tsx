import { act, render, screen } from '@testing-library/react';
import * as React from 'react';
import { useFocusKeeper } from '../focuskeeper';

/** A panel with one section, whose Close button can go, and the section with it. */
function Panel(props: { close: boolean; section: boolean }): JSX.Element {
  const content = React.useRef<HTMLDivElement>(null);
  const keeper = useFocusKeeper(content);
  return (
    <div onFocus={keeper.onFocus} onBlur={keeper.onBlur}>
      <div ref={content} tabIndex={0} aria-label="content" role="region">
        {props.section ? (
          <section className="jp-CudaMemdiffSection">
            <div className="jp-CudaMemdiffSection-head">
              <h3>
                <button className="jp-CudaMemdiffSection-toggle">Heading</button>
              </h3>
            </div>
            {/* a section inside the section, as the diff's own: its button still goes to the outer heading */}
            <section>{props.close ? <button>Close</button> : null}</section>
          </section>
        ) : null}
      </div>
    </div>
  );
}

describe('useFocusKeeper', () => {
  const focus = (element: HTMLElement) => act(() => element.focus());

  it('gives focus to the heading of the section whose focused button went', () => {
    const { rerender } = render(<Panel close section />);
    focus(screen.getByText('Close'));
    rerender(<Panel close={false} section />);
    expect(document.activeElement).toBe(screen.getByText('Heading'));
  });

  it("gives it to the panel's content where the section went too", () => {
    const { rerender } = render(<Panel close section />);
    focus(screen.getByText('Close'));
    rerender(<Panel close={false} section={false} />);
    expect(document.activeElement).toBe(screen.getByRole('region', { name: 'content' }));
  });

  it('leaves alone focus that went out of the panel, to another control or to the page', async () => {
    // the events' work done, as the browser does it before any later render
    const settled = (element: HTMLElement, how: 'focus' | 'blur') => act(async () => element[how]());
    const outside = document.body.appendChild(document.createElement('button'));
    const { rerender } = render(<Panel close section />);
    focus(screen.getByText('Close'));
    await settled(outside, 'focus');
    rerender(<Panel close={false} section />);
    expect(document.activeElement).toBe(outside);

    rerender(<Panel close section />);
    focus(screen.getByText('Close'));
    await settled(screen.getByText('Close'), 'blur'); // a click on the page, not on a control
    expect(document.activeElement).toBe(document.body);
    rerender(<Panel close={false} section />);
    expect(document.activeElement).toBe(document.body);
    outside.remove();
  });
});
