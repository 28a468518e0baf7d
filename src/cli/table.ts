/** Plain-text tables for the terminal: a header row and right-aligned numbers. */

/** A column: its header and whether values align right (numbers). */
export interface IColumn {
  header: string;
  right?: boolean;
  /**
   * Prose (the last column only): wrapped at spaces so that a row's lines
   * stay within `MAX_LINE_WIDTH`, each further line starting under the
   * column, rather than running on for hundreds of characters.
   */
  wrap?: boolean;
}

/** A line across the table between rows (a kernel restart), not aligned to the columns. */
export interface ITableNote {
  note: string;
}

/** Rows a table shows before it says how many it left out (the JSON output has them all). */
export const MAX_TABLE_ROWS = 200;

/** Columns a table with a wrapped column keeps its lines within: a 100-column terminal shows them whole. */
export const MAX_LINE_WIDTH = 100;

/** Narrowest a wrapped column gets, however wide the columns before it: narrower reads as fragments. */
const MIN_WRAP_WIDTH = 32;

/**
 * Render rows under headers, columns padded to their widest cell; notes are
 * printed as they are. Past `maxRows` rows, one line says how many were left
 * out, naming them as `what` ("allocation sites").
 */
export function renderTable(
  columns: IColumn[],
  rows: (string[] | ITableNote)[],
  maxRows = MAX_TABLE_ROWS,
  what = 'rows'
): string {
  const shown = rows.length > maxRows ? rows.slice(0, maxRows) : rows;
  // A loop, not Math.max(...cells): a spread of 200,000 values overflows the call stack.
  const widths = columns.map(c => c.header.length);
  for (const r of shown) {
    if (Array.isArray(r)) {
      for (let i = 0; i < columns.length; i++) {
        widths[i] = Math.max(widths[i], (r[i] ?? '').length);
      }
    }
  }
  const last = columns.length - 1;
  const wrapped = columns[last]?.wrap === true;
  if (wrapped) {
    const before = widths.slice(0, last).reduce((n, w) => n + w + 2, 0);
    widths[last] = Math.min(widths[last], Math.max(MIN_WRAP_WIDTH, MAX_LINE_WIDTH - before), MAX_LINE_WIDTH);
    widths[last] = Math.max(widths[last], columns[last].header.length);
  }
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (columns[i].right ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  // A wrapped cell's first line goes on the row; the rest under it, the other columns blank.
  const rowLines = (cells: string[]) => {
    if (!wrapped) {
      return [line(cells)];
    }
    const [first, ...rest] = wrapText(cells[last] ?? '', widths[last]);
    const blank = columns.map(() => '');
    return [line([...cells.slice(0, last), first]), ...rest.map(text => line([...blank.slice(0, last), text]))];
  };
  const out = [line(columns.map(c => c.header)), line(widths.map(w => '-'.repeat(w)))];
  for (const r of shown) {
    out.push(...(Array.isArray(r) ? rowLines(r) : [r.note]));
  }
  const left = rows.length - shown.length;
  if (left > 0) {
    out.push(`... ${left.toLocaleString('en-US')} more ${what} not shown (--json lists them all)`);
  }
  return out.join('\n');
}

/** The words a wrapped line breaks between: a cell's name (`Cell [3]`, `Cell [ ]`) is one word. */
const WORDS = /Cell \[[^\]]*\]\S*|\S+/g;

/**
 * Text in lines of at most `width` characters, broken at spaces; a word
 * longer than a line (a long path) is cut across lines, so nothing is lost
 * and no line runs past the column.
 */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (let word of text.match(WORDS) ?? []) {
    if (current && current.length + 1 + word.length <= width) {
      current += ` ${word}`;
      continue;
    }
    if (current) {
      lines.push(current);
    }
    while (word.length > width) {
      // Not between the halves of a surrogate pair, which would print as two stray halves.
      const cut = word.charCodeAt(width - 1) >> 10 === 0xd800 >> 10 ? width - 1 : width;
      lines.push(word.slice(0, cut));
      word = word.slice(cut);
    }
    current = word;
  }
  lines.push(current);
  return lines;
}

/**
 * Text from a snapshot made safe for a terminal: control characters (ESC,
 * carriage return, newline, C1 controls) and bidirectional overrides become
 * visible escapes, so a frame name cannot clear the screen, set the window
 * title or forge a line. JSON output keeps the data as it is.
 */
export function printable(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/** The same for whole output text, keeping its own newlines. */
export function printableLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, escapeChar);
}

// C0 controls, DEL, C1 controls, and the Unicode format characters that reorder or hide text
// (matching control characters is the point here).
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g;
// eslint-disable-next-line no-control-regex
const UNSAFE_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g;

function escapeChar(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
