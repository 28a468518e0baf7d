/**
 * A long path in a narrow column breaks after a slash, where a reader
 * expects it, not inside a file name ("/tmp/ipykernel_644/3" above
 * "990537610.py"). `<wbr>` marks the place: unlike a zero-width space, it
 * is not copied with the text.
 */
import * as React from 'react';

/** The pieces of `text` between the line-break opportunities: each ends after a slash. */
function pieces(text: string): string[] {
  return text.split(/(?<=\/)/);
}

/** `text` with a line-break opportunity after each slash. */
export function SoftBreaks(props: { text: string }): JSX.Element {
  return <>{pieces(props.text).flatMap((part, i) => (i ? [<wbr key={i} />, part] : [part]))}</>;
}

/** Fill `node` (a view drawn without React) with `text`, breaking after slashes as SoftBreaks does. */
export function setSoftBreaks(node: HTMLElement, text: string): void {
  node.replaceChildren(...pieces(text).flatMap((part, i) => (i ? [document.createElement('wbr'), part] : [part])));
}
