/**
 * Keeps the keyboard's focus in the panel when an action removes the
 * control that had it: closing the leak finder or a file, dismissing an
 * error, going back to the selected cell. The browser then gives focus to
 * the page's body, and the next Tab starts over from the top of
 * JupyterLab. Focus goes instead to the heading of the section the control
 * was in, or, where that section went too, to the panel's content.
 */
import * as React from 'react';

/** The focus handler for the panel's root, to be given every render (its effect runs after each). */
export function useFocusKeeper(fallback: React.RefObject<HTMLElement>): (event: React.FocusEvent) => void {
  const last = React.useRef<{ element: Element; section: Element | null } | null>(null);
  React.useLayoutEffect(() => {
    const was = last.current;
    if (!was || was.element.isConnected) {
      return;
    }
    last.current = null;
    const now = document.activeElement;
    if (now && now !== document.body) {
      return; // the action put focus somewhere itself
    }
    const heading = was.section?.isConnected
      ? was.section.querySelector<HTMLElement>('.jp-CudaMemdiffSection-toggle')
      : null;
    (heading ?? fallback.current)?.focus();
  });
  return (event: React.FocusEvent) => {
    const element = event.target;
    last.current = { element, section: element.closest('section') };
  };
}
