/**
 * What an edit did to the line a frame points at. A frame's line counts in
 * the code its run ran; once the cell is edited (a line added above, the
 * loop indented under `with torch.no_grad():`), the same number may name
 * other code. These are facts for the views to put in words: whether the
 * cell was edited since the run, the line as the run ran it, and where that
 * code is in the cell now.
 */
import { codeAsRun, ICellSource } from './cells';

/** Beyond this many line pairs a cell's old and new middles are not aligned line by line, only by unique lines. */
const MAX_ALIGNED_PAIRS = 1_000_000;

/** A frame's line in a notebook cell, as the run ran it and as the cell reads now. */
export interface ICellLine {
  /** The cell, named by the run the frame came from. */
  readonly cell: ICellSource;
  /** The frame's line, counted in the code the run ran; null when the frame has none. */
  readonly line: number | null;
  /** True when the cell's text changed since the run: `line` may name other code now. */
  readonly edited: boolean;
  /** True when the cell is no longer in the notebook (see deletedRuns): there is no line now. */
  readonly deleted: boolean;
  /** The line as the run ran it, without surrounding blanks; '' when unknown. */
  readonly textAsRun: string;
  /**
   * Where that code is in the cell now (`line` itself when not edited); null where the edit changed or
   * removed it, or the cell was deleted.
   */
  readonly lineNow: number | null;
}

// Per cell as a lookup named it, per line: the views ask for the same frames on every render.
const LINES = new WeakMap<ICellSource, Map<number | null, ICellLine>>();

/** The facts of a frame's line `line` in `cell` (see CellCodeNames.lookup for the cell). */
export function cellLine(cell: ICellSource, line: number | null): ICellLine {
  let lines = LINES.get(cell);
  if (!lines) {
    lines = new Map();
    LINES.set(cell, lines);
  }
  let found = lines.get(line);
  if (!found) {
    const asRun = codeAsRun(cell);
    const deleted = cell.deleted === true;
    const edited = cell.sourceAsRun !== undefined && cell.sourceAsRun !== cell.source;
    found = {
      cell,
      line,
      edited,
      deleted,
      textAsRun: line === null ? '' : (asRun.split('\n')[line - 1]?.trim() ?? ''),
      lineNow: line === null || deleted ? null : edited ? lineNow(asRun, cell.source, line) : line
    };
    lines.set(line, found);
  }
  return found;
}

/**
 * Where line `line` (from 1) of `asRun` is in `now`, or null when the edit
 * changed or removed it. Lines are compared without their surrounding blanks
 * (re-indenting a loop under a `with` moves its lines, it does not change
 * them) and paired as a line diff pairs them, along the longest common
 * sequence; a line that sequence leaves out is still found where its text
 * is unique in both.
 */
export function lineNow(asRun: string, now: string, line: number): number | null {
  const before = asRun.split('\n').map(l => l.trim());
  const after = now.split('\n').map(l => l.trim());
  const at = line - 1;
  if (at < 0 || at >= before.length || before[at] === '') {
    return null;
  }
  // Lines the edit left alone at either end keep their place from that end.
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) {
    head++;
  }
  if (at < head) {
    return line;
  }
  let tail = 0;
  while (
    tail < before.length - head &&
    tail < after.length - head &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) {
    tail++;
  }
  if (at >= before.length - tail) {
    return line + after.length - before.length;
  }
  const oldMiddle = before.slice(head, before.length - tail);
  const newMiddle = after.slice(head, after.length - tail);
  const partner =
    oldMiddle.length * newMiddle.length <= MAX_ALIGNED_PAIRS
      ? Private.aligned(oldMiddle, newMiddle, at - head)
      : Private.uniquePartner(oldMiddle, newMiddle, at - head);
  return partner === null ? null : head + partner + 1;
}

namespace Private {
  /**
   * The index in `b` that the longest common sequence of `a` and `b` pairs
   * with `a[at]`; where it pairs none, the uniquePartner; else null.
   */
  export function aligned(a: readonly string[], b: readonly string[], at: number): number | null {
    const n = a.length;
    const m = b.length;
    // rest[i * (m + 1) + j]: the length of the longest common sequence of a[i..] and b[j..].
    const rest = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        rest[i * (m + 1) + j] =
          a[i] === b[j]
            ? rest[(i + 1) * (m + 1) + j + 1] + 1
            : Math.max(rest[(i + 1) * (m + 1) + j], rest[i * (m + 1) + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n && j < m) {
      if (a[i] === b[j]) {
        if (i === at) {
          return j;
        }
        i++;
        j++;
      } else if (rest[(i + 1) * (m + 1) + j] >= rest[i * (m + 1) + j + 1]) {
        if (i === at) {
          break;
        }
        i++;
      } else {
        j++;
      }
    }
    return uniquePartner(a, b, at);
  }

  /** The index in `b` of the one line with `a[at]`'s text, where that text is unique in both; else null. */
  export function uniquePartner(a: readonly string[], b: readonly string[], at: number): number | null {
    const text = a[at];
    if (a.indexOf(text) !== a.lastIndexOf(text)) {
      return null;
    }
    const j = b.indexOf(text);
    return j >= 0 && b.lastIndexOf(text) === j ? j : null;
  }
}
