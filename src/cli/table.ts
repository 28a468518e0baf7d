/** Plain-text tables for the terminal: a header row and right-aligned numbers. */

/** A column: its header and whether values align right (numbers). */
export interface IColumn {
  header: string;
  right?: boolean;
}

/** A line across the table between rows (a kernel restart), not aligned to the columns. */
export interface ITableNote {
  note: string;
}

/** Rows a table shows before it says how many it left out (the JSON output has them all). */
export const MAX_TABLE_ROWS = 200;

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
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (columns[i].right ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [line(columns.map(c => c.header)), line(widths.map(w => '-'.repeat(w)))];
  for (const r of shown) {
    out.push(Array.isArray(r) ? line(r) : r.note);
  }
  const left = rows.length - shown.length;
  if (left > 0) {
    out.push(`... ${left.toLocaleString('en-US')} more ${what} not shown (--json lists them all)`);
  }
  return out.join('\n');
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
