/**
 * Which run allocated a block. Identical code run twice (a cell run again, a
 * copy of a cell) has one code name, so a frame cannot tell the runs apart;
 * the snapshots can: a block belongs to the run between whose snapshots it
 * was born, the reading the leak finder ranks by (retention.ts). Peak sites,
 * a diff's sites and a leak's evidence all name runs through it, so they
 * never disagree about who made a block.
 */
import { CellCodeNames, ICellSource } from './cells';
import { AllocationSite } from './diff';
import { Block, FrameTable } from './model';
import { IExecutionRetention } from './retention';

/** One block a run left, and until when it lived. */
interface IBirth {
  readonly size: number;
  readonly stack: number;
  readonly run: number;
  /** The run that freed it, or null while it lived to its kernel's last snapshot. */
  readonly freedAt: number | null;
  readonly kernel: number;
}

/** The run (position in a sequence of snapshots, one per run) that allocated each block. */
export class BlockBirths {
  /** From `retentionByExecution` of the runs' snapshots. */
  constructor(retention: readonly IExecutionRetention[]) {
    this._kernels = retention.map(r => r.kernel);
    for (const r of retention) {
      r.left.forEach((b, j) => {
        let device = this._byDevice.get(b.device);
        if (!device) {
          device = new Map();
          this._byDevice.set(b.device, device);
        }
        const births = device.get(b.address);
        const birth = { size: b.size, stack: b.stack, run: r.execution, freedAt: r.freedAt[j], kernel: r.kernel };
        if (births) {
          births.push(birth);
        } else {
          device.set(b.address, [birth]);
        }
      });
    }
  }

  /**
   * The run that allocated `b`, a block alive in snapshot `at`: the run of
   * `at`'s kernel, at or before it, that left a block of that identity
   * (device, address, size, stack) not yet freed by `at`. Null when none
   * did (`at` out of the sequence, or a block the snapshots never showed).
   */
  runOf(b: Block, at: number): number | null {
    const kernel = this._kernels[at];
    if (kernel === undefined) {
      return null;
    }
    const births = this._byDevice.get(b.device)?.get(b.address) ?? [];
    for (const birth of births) {
      if (
        birth.kernel === kernel &&
        birth.size === b.size &&
        birth.stack === b.stack &&
        birth.run <= at &&
        (birth.freedAt === null || birth.freedAt > at)
      ) {
        return birth.run;
      }
    }
    return null;
  }

  /**
   * The run that allocated each block alive at a moment inside run `run` (its
   * peak, its out-of-memory error): `run` itself for a block `born` says it
   * allocated (its history, its diff against its start), else the run that
   * allocated the block alive at its start, the snapshot before it in its
   * kernel (none for its kernel's first run: then nothing was alive).
   */
  runsAt(run: number, born: (b: Block) => boolean): (b: Block) => number | null {
    const start = run > 0 && this._kernels[run - 1] === this._kernels[run] ? run - 1 : null;
    return b => (born(b) ? run : start === null ? null : this.runOf(b, start));
  }

  private readonly _kernels: readonly number[];
  private readonly _byDevice = new Map<number, Map<number, IBirth[]>>();
}

/**
 * A diff's sites with the blocks of copies of one cell's code told apart by
 * the run that allocated them (`run`: its key, as `runOf` gives it): a frame
 * of code that several cells share (`CellCodeNames.lookup` is ambiguous)
 * names no run, so its group is split by run; blocks whose run is unknown
 * stay together without one. Other groups are kept as they are. Largest
 * change first, as `groupBySite` orders them.
 */
export interface IRunSite extends AllocationSite {
  /** The key (`runOf`'s) of the run that allocated the group's blocks, where the frame alone cannot name it. */
  readonly run?: string;
}

/**
 * Split the groups of `groupBySite` whose site is code several cells share
 * by the run that allocated each block: `runOf(block, born)` gives a run's
 * key for a born block (allocated after the diff's first snapshot) or a
 * freed one (alive in it), or null when unknown.
 */
export function splitSitesByRun(
  groups: readonly AllocationSite[],
  table: FrameTable,
  cells: CellCodeNames,
  runOf: (b: Block, born: boolean) => string | null
): IRunSite[] {
  const out: IRunSite[] = [];
  for (const g of groups) {
    if (g.frameId < 0 || !cells.lookup(table.frame(g.frameId).filename)?.ambiguous) {
      out.push(g);
      continue;
    }
    const parts = new Map<string | null, { born: Block[]; freed: Block[] }>();
    const add = (b: Block, born: boolean) => {
      const run = runOf(b, born);
      let part = parts.get(run);
      if (!part) {
        part = { born: [], freed: [] };
        parts.set(run, part);
      }
      (born ? part.born : part.freed).push(b);
    };
    g.born.forEach(b => add(b, true));
    g.freed.forEach(b => add(b, false));
    for (const [run, part] of parts) {
      out.push({ ...siteOf(g.frameId, part.born, part.freed), ...(run === null ? {} : { run }) });
    }
  }
  return out.sort(
    (p, q) =>
      Math.abs(q.netBytes) - Math.abs(p.netBytes) ||
      q.bornBytes + q.freedBytes - (p.bornBytes + p.freedBytes) ||
      p.frameId - q.frameId ||
      // Of one site's runs, what was born first: the diff's second snapshot is what it describes.
      q.bornBytes - p.bornBytes
  );
}

/** An allocation site's figures from its blocks. */
function siteOf(frameId: number, born: readonly Block[], freed: readonly Block[]): AllocationSite {
  const bytes = (blocks: readonly Block[]) => blocks.reduce((n, b) => n + b.size, 0);
  const all = [...born, ...freed];
  const largest = all.reduce((x, b) => (b.size > x.size ? b : x), all[0]);
  const bornBytes = bytes(born);
  const freedBytes = bytes(freed);
  return {
    frameId,
    count: all.length,
    bornCount: born.length,
    freedCount: freed.length,
    bornBytes,
    freedBytes,
    netBytes: bornBytes - freedBytes,
    stack: largest.stack,
    stackCount: new Set(all.map(b => b.stack)).size,
    born,
    freed
  };
}

/** The cell among a frame's copies whose key is `run`, if it is one of them. */
export function cellOfRun(copies: readonly ICellSource[], run: string | null | undefined): ICellSource | undefined {
  return run === null || run === undefined ? undefined : copies.find(c => c.id === run);
}
