/** React glue for drawing SVG at its real pixel width, so text and rows keep their size in a narrow or wide panel. */
import * as React from 'react';

/**
 * The content width of the referenced element in CSS pixels, following its
 * resizes; `fallback` until it is measured (and where ResizeObserver is
 * missing, as in jsdom). The observer is disconnected on cleanup.
 */
export function useWidth(ref: React.RefObject<Element>, fallback: number): number {
  const [width, setWidth] = React.useState(fallback);
  React.useEffect(() => {
    const node = ref.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      const measured = Math.floor(entries[entries.length - 1].contentRect.width);
      // A hidden panel measures 0: keep the last width rather than draw nothing.
      if (measured > 0) {
        // Not urgent: as a transition, React redraws in slices that give the
        // page a turn (a segment map of thousands of rows is one long task).
        React.startTransition(() => setWidth(measured));
      }
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}
