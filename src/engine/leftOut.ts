/**
 * What the stacks tell of the cells a session left out (their snapshot
 * could not be read). The next cell's change counts theirs, but an
 * allocation stack's outermost cell frame is the code IPython ran: memory
 * whose stack ends in a left-out cell's code was made while that cell ran.
 */
import { CellCodeNames, isCellFilename } from './cells';
import { ISession } from './session';

/** A cell left out before a kept one, and the bytes of the kept one's memory made while it ran. */
export interface ILeftOutShare {
  /** Its position in `session.sourceCells`. */
  readonly position: number;
  readonly bytes: number;
}

/**
 * Of memory kept cell `k` made (each part a stack and its bytes), the bytes
 * made while each cell left out just before it ran, in manifest order (0
 * for one whose code no stack shows). Only those cells and cell `k` ran
 * while that memory was made: a stack whose code several cells share (the
 * same source run again) names one of them only when one of those ran then.
 */
export function leftOutShares(
  session: ISession,
  k: number,
  parts: readonly { readonly stack: number; readonly bytes: number }[]
): ILeftOutShare[] {
  const before = session.leftOutBefore[k] ?? [];
  if (!before.length) {
    return [];
  }
  // Only these cells ran while the memory was made; their execution counts are one kernel's, so unique.
  const ran = [...before, session.positions[k]];
  const names = new CellCodeNames(
    ran.map(p => ({
      id: String(p),
      source: session.sourceCells[p].source,
      executionCount: session.sourceCells[p].execution_count
    }))
  );
  const bytes = new Map(before.map(p => [String(p), 0]));
  const ranIn = new Map<number, string | null>();
  for (const part of parts) {
    let cell = ranIn.get(part.stack);
    if (cell === undefined) {
      const candidates = outermostCells(session, names, part.stack);
      cell = candidates.length === 1 ? candidates[0] : null;
      ranIn.set(part.stack, cell);
    }
    const sum = cell === null ? undefined : bytes.get(cell);
    if (sum !== undefined) {
      bytes.set(cell!, sum + part.bytes);
    }
  }
  return before.map(position => ({ position, bytes: bytes.get(String(position))! }));
}

/** The ids of the cells whose code a stack's outermost cell frame is (several share one source); none without. */
function outermostCells(session: ISession, names: CellCodeNames, stack: number): string[] {
  const ids = session.frames.stack(stack);
  for (let i = ids.length - 1; i >= 0; i--) {
    const filename = session.frames.frame(ids[i]).filename;
    if (isCellFilename(filename)) {
      return names.lookup(filename)?.cells.map(c => c.id) ?? [];
    }
  }
  return [];
}
