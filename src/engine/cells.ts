/**
 * Mapping the code names Python gives notebook cells back to the cells.
 *
 * ipykernel compiles a cell as `<tmp>/ipykernel_<pid>/<n>.py`, n being the
 * 32-bit murmur2 (x86) of the raw source with seed 0xC70F6907; plain IPython
 * uses `<ipython-input-N-hash>`, N being the execution count.
 */

const IPYKERNEL_SEED = 0xc70f6907;
const MURMUR_M = 0x5bd1e995;
const IPYKERNEL_NAME = /[\\/]ipykernel_(\d+)[\\/](\d+)\.py$/;
// The folder part of an ipykernel code name, through `ipykernel_<pid>/`.
const IPYKERNEL_FOLDER = /^(.*[\\/]ipykernel_\d+[\\/])\d+\.py$/;
const IPYTHON_INPUT_NAME = /^<ipython-input-(\d+)-([0-9a-f]+)>$/;

/** What a cell's code name says by itself. */
export type CellCodeName =
  | { readonly kind: 'ipykernel'; readonly pid: number; readonly hash: number }
  | { readonly kind: 'ipython-input'; readonly executionCount: number };

/** A notebook cell as far as the engine needs it. */
export interface ICellSource {
  /** Cell id (JupyterLab's) or any stable key. */
  readonly id: string;
  /** The cell's text now. */
  readonly source: string;
  /**
   * The code the run named by `executionCount` ran, where the cell has been
   * edited since (see editedRuns): a frame of that run counts its line in it.
   * Absent where the run ran the cell as it reads now.
   */
  readonly sourceAsRun?: string;
  /**
   * True for a run of a cell no longer in the notebook (see deletedRuns):
   * `source` is then the code that run ran, and there is no cell to go to.
   */
  readonly deleted?: boolean;
  readonly executionCount?: number | null;
  /**
   * The kernel (numbered from 1) of the run that gave `executionCount`, where the session spans several; see
   * cellsAsRun. The views name it with the count (`[3] in kernel 1`), each in its own words.
   */
  readonly kernel?: number | null;
  /** Where the cell sits in its notebook, counting every cell from 1, as JupyterLab's status bar does. */
  readonly position?: { readonly index: number; readonly total: number };
  /**
   * The execution count the cell's prompt shows now (null: none, or `[*]` while it runs), which may be
   * another run's than `executionCount`; absent where no notebook says (a file's cells).
   */
  readonly prompt?: number | null;
}

/**
 * How a cell is told apart in a label (`Cell [3]`), in notation and no words:
 * its execution count in the prompt's brackets; a cell that shows none (not
 * run in this kernel, e.g. a copy of a cell that ran, or a cell whose code another process
 * ran: see `CellCodeNames.sameCodeElsewhere`)
 * by its place, `2/5`, as the status bar says "Cell 2/5"; `[ ]` where neither
 * is known. Where the session spans kernels, a view adds the run's `kernel`
 * in its own words (`[3] in kernel 1`: counts start again after a restart).
 */
export function cellTag(cell: ICellSource): string {
  if (cell.executionCount !== undefined && cell.executionCount !== null) {
    return runTag(cell.executionCount);
  }
  return cell.position ? `${cell.position.index}/${cell.position.total}` : runTag(null);
}

/** A run's execution count as the cell's prompt shows it: `[3]`, or `[ ]` for a run without one. */
export function runTag(executionCount: number | null | undefined): string {
  return `[${executionCount ?? ' '}]`;
}

/**
 * A session folder's cell in a table's `cell` column: the count its prompt
 * shows (`[3]`), or the label its writer gave it (a capture point of a
 * multi-rank job: `step 4`, or the text of a `mark`), which is what the ranks
 * table and the job's own code call it.
 */
export function sessionCellTag(executionCount: number | null | undefined, label?: string | null): string {
  return label ? label : runTag(executionCount);
}

/**
 * A session folder's cell named as the panel names it, by the count its prompt
 * shows (`Cell [3]`), for the CLI and the findings of a manifest; a labelled
 * cell (a capture point) by its label (`step 4`). The manifest index counts
 * from 0 (and, in the panel's export, counts markdown cells), so it is no name
 * a person finds in the notebook; it appears only where neither tells the
 * cell apart: `Cell [ ] (index 4)`.
 */
export function sessionCellName(
  index: number,
  executionCount: number | null | undefined,
  label?: string | null
): string {
  const tag = sessionCellTag(executionCount, label);
  // A label is a name of its own (`step 4`); a prompt's count is a cell's, after `Cell`.
  if (label) {
    return tag;
  }
  return executionCount === null || executionCount === undefined ? `Cell ${tag} (index ${index})` : `Cell ${tag}`;
}

/** The cells a code name can stand for; more than one when sources are identical. */
export interface ICellMatch {
  readonly name: CellCodeName;
  readonly cells: readonly ICellSource[];
  /** True when identical sources share the name, so the frame alone cannot pick one. */
  readonly ambiguous: boolean;
}

/** ipykernel's murmur2 x86 32-bit hash of a string's UTF-8 bytes. */
export function murmur2(text: string, seed = IPYKERNEL_SEED): number {
  const data = new TextEncoder().encode(text);
  const length = data.length;
  let h = (seed ^ length) >>> 0;
  const roundedEnd = length & ~3;
  for (let i = 0; i < roundedEnd; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, MURMUR_M);
    k ^= k >>> 24;
    k = Math.imul(k, MURMUR_M);
    h = Math.imul(h, MURMUR_M) ^ k;
  }
  const tail = length & 3;
  if (tail) {
    let k = 0;
    if (tail === 3) {
      k = data[roundedEnd + 2] << 16;
    }
    if (tail >= 2) {
      k |= data[roundedEnd + 1] << 8;
    }
    k |= data[roundedEnd];
    h = Math.imul(h ^ k, MURMUR_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR_M);
  h ^= h >>> 15;
  return h >>> 0;
}

/** Parse a frame filename that names a notebook cell; null for other files. */
export function parseCellFilename(filename: string): CellCodeName | null {
  let m = IPYKERNEL_NAME.exec(filename);
  if (m) {
    return { kind: 'ipykernel', pid: Number(m[1]), hash: Number(m[2]) };
  }
  m = IPYTHON_INPUT_NAME.exec(filename);
  if (m) {
    return { kind: 'ipython-input', executionCount: Number(m[1]) };
  }
  return null;
}

/**
 * The folder of an ipykernel code name, through `ipykernel_<pid>/`
 * (`/tmp/ipykernel_447/`): the process whose cells it names. Null for any
 * other file name (plain IPython's `<ipython-input-N-hash>` names no process).
 */
export function cellCodeFolder(filename: string): string | null {
  return IPYKERNEL_FOLDER.exec(filename)?.[1] ?? null;
}

/** The code a cell's run ran, which its frames' lines count in: `sourceAsRun` where it was edited since, else `source`. */
export function codeAsRun(cell: ICellSource): string {
  return cell.sourceAsRun ?? cell.source;
}

/** True when a frame filename names a notebook cell. */
export function isCellFilename(filename: string): boolean {
  return parseCellFilename(filename) !== null;
}

/**
 * Looks cells up by the code names their frames carry: the code of each cell
 * as it reads now, and the code the notebook no longer reads (`earlier`: code
 * cells ran before they were edited, each with its `sourceAsRun`, see
 * editedRuns; runs of cells deleted since, see deletedRuns), so a frame of an
 * earlier run still finds its cell, or says its cell is gone.
 *
 * ipykernel names a cell's code by the hash of its source, so the same
 * source has the same name in every process but for the folder
 * (`/tmp/ipykernel_<pid>/`). Given `folders`, the folders of the processes
 * that ran these cells (the notebook's kernels, as their snapshots' frames
 * name them), a name in another folder is no cell of theirs however alike
 * the source: `lookup` gives null, and `sameCodeElsewhere` the cells whose
 * source it is. Without `folders`, every name with a cell's hash is that cell's
 * (a session folder's files all come from its own kernels).
 */
export class CellCodeNames {
  constructor(
    cells: readonly ICellSource[],
    earlier: readonly ICellSource[] = [],
    private readonly _folders: ReadonlySet<string> | null = null
  ) {
    cells.forEach((cell, place) => {
      this._places.set(cell.id, place);
      this._add(murmur2(cell.source), cell);
      if (cell.executionCount !== undefined && cell.executionCount !== null) {
        this._byCount.set(cell.executionCount, cell);
      }
    });
    for (const cell of earlier) {
      this._add(murmur2(codeAsRun(cell)), cell);
    }
  }

  private _add(hash: number, cell: ICellSource): void {
    const list = this._byHash.get(hash) ?? [];
    if (!list.some(c => c.id === cell.id)) {
      list.push(cell);
    }
    this._byHash.set(hash, list);
  }

  /**
   * A cell's place among `cells` (0 first): in a notebook's, its place among
   * the code cells. Undefined for a cell only `earlier` has (a deleted one).
   */
  placeOf(id: string): number | undefined {
    return this._places.get(id);
  }

  /** The cells a frame filename stands for, or null when it names no known cell (or another process's code). */
  lookup(filename: string): ICellMatch | null {
    const name = parseCellFilename(filename);
    if (!name) {
      return null;
    }
    if (name.kind === 'ipykernel') {
      const cells = this._byHash.get(name.hash);
      return cells && this._ours(filename) ? { name, cells, ambiguous: cells.length > 1 } : null;
    }
    const cell = this._byCount.get(name.executionCount);
    return cell ? { name, cells: [cell], ambiguous: false } : null;
  }

  /**
   * The cells whose source is the code a frame filename names, where that is
   * code another process ran (its folder is none of `folders`): what it
   * resembles, which this notebook did not run. Empty otherwise.
   */
  sameCodeElsewhere(filename: string): readonly ICellSource[] {
    const name = parseCellFilename(filename);
    return name?.kind === 'ipykernel' && !this._ours(filename) ? (this._byHash.get(name.hash) ?? []) : [];
  }

  /** True when a code name can be one of these cells' runs: no folders are known, or it is in one of them. */
  private _ours(filename: string): boolean {
    const folder = cellCodeFolder(filename);
    return this._folders === null || folder === null || this._folders.has(folder);
  }

  private readonly _byHash = new Map<number, ICellSource[]>();
  private readonly _byCount = new Map<number, ICellSource>();
  private readonly _places = new Map<string, number>();
}
