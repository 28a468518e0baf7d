/**
 * Keeps the keyboard's focus in the panel when an action removes the
 * control that had it: closing the leak finder or a file, dismissing an
 * error, going back to the selected cell. The browser then gives focus to
 * the page's body, and the next Tab starts over from the top of
 * JupyterLab. Focus goes instead to the heading of the section the control
 * was in, or, where that section went too, to the panel's content.
 */
import * as React from 'react';
import { sectionHeading } from '../components/section';

/** Handlers for the panel's root, which must render every time the panel does (the keeper's effect runs after each). */
export interface IFocusKeeper {
  onFocus: (event: React.FocusEvent) => void;
  onBlur: (event: React.FocusEvent) => void;
}

/** Keep the keyboard in the panel (see above); `fallback` takes it where the control's section went too. */
export function useFocusKeeper(fallback: React.RefObject<HTMLElement>): IFocusKeeper {
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
    const heading = was.section?.isConnected ? sectionHeading(was.section) : null;
    (heading ?? fallback.current)?.focus();
  });
  return {
    onFocus: (event: React.FocusEvent) => {
      const element = event.target;
      last.current = { element, section: element.closest('.jp-CudaMemdiffSection') };
    },
    // Focus that leaves the panel (a click in the notebook, a menu) is none of the keeper's business: a later
    // render that removes the control must not take it back. A browser may fire blur at a control it is
    // removing, before it goes: the note is dropped after the event, and only where the control stayed.
    onBlur: (event: React.FocusEvent) => {
      const element = event.target;
      const to = event.relatedTarget;
      if (to instanceof Node && event.currentTarget.contains(to)) {
        return;
      }
      queueMicrotask(() => {
        if (element.isConnected && last.current?.element === element) {
          last.current = null;
        }
      });
    }
  };
}
