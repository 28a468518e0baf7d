/**
 * Text laid out in the panel's narrow columns: a figure stays with the word
 * it belongs to, so a 250-pixel panel never prints "line" above "3", or
 * "60.0" above "MiB". Spaces become no-break spaces only there; the text
 * reads the same, and a long label still wraps between its other words.
 */

/** A no-break space. */
const NBSP = '\u00a0';

/**
 * `text` with a no-break space between a word and the number after it
 * (`line 3`, `kernel 2`, `Cell 2/6`) and between a number and the byte unit
 * after it (`60.0 MiB`).
 */
export function keepFiguresWhole(text: string): string {
  return text.replace(/(\p{L}) (?=\d)/gu, `$1${NBSP}`).replace(/(\d) (?=(?:[KMGTPE]i)?B\b)/gu, `$1${NBSP}`);
}
