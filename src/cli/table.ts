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

/** Render rows under headers, columns padded to their widest cell; notes are printed as they are. */
export function renderTable(columns: IColumn[], rows: (string[] | ITableNote)[]): string {
  const cellRows = rows.filter((r): r is string[] => Array.isArray(r));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cellRows.map(r => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (columns[i].right ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [
    line(columns.map(c => c.header)),
    line(widths.map(w => '-'.repeat(w))),
    ...rows.map(r => (Array.isArray(r) ? line(r) : r.note))
  ].join('\n');
}
