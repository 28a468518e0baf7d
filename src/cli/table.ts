/** Plain-text tables for the terminal: a header row and right-aligned numbers. */

/** A column: its header and whether values align right (numbers). */
export interface IColumn {
  header: string;
  right?: boolean;
}

/** Render rows under headers, columns padded to their widest cell. */
export function renderTable(columns: IColumn[], rows: string[][]): string {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map(r => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (columns[i].right ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(columns.map(c => c.header)), line(widths.map(w => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
