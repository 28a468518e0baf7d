/**
 * A long path in a narrow column breaks after a slash, where a reader
 * expects it, not inside a file name ("/tmp/ipykernel_644/3" above
 * "990537610.py"). `<wbr>` marks the place: unlike a zero-width space, it
 * is not copied with the text.
 */
import * as React from 'react';

/** `text` with a line-break opportunity after each slash. */
export function SoftBreaks(props: { text: string }): JSX.Element {
  const parts = props.text.split(/(?<=\/)/);
  return <>{parts.flatMap((part, i) => (i ? [<wbr key={i} />, part] : [part]))}</>;
}
