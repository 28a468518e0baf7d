/**
 * The leak finder: which executions left GPU memory alive, whether that is a
 * leak, and which cell to look at first.
 *
 * Memory a cell keeps is not a leak by itself: weights, gradients, optimizer
 * state and library workspaces are meant to stay. A leak is memory that grows
 * each time the same code runs again (growth.ts), or that nothing the user can
 * see holds: an autograd graph kept through the outputs of a forward pass run
 * outside `torch.no_grad()` (graph.ts), the output cache `Out[n]`
 * (outputCache.ts), the last traceback (traceback.ts). Offline the evidence
 * is the snapshots and the cells' sources; live, the kernel's holder analysis
 * (`IBlockHolders`, holders.ts) names the owner and refines the verdict; the
 * answer given right after a cell names what held memory a later cell freed. A leak
 * another cell freed is `fixed` (fixed.ts); rank.ts orders the verdicts.
 * Where the kernel gave each block's role, a leak's reasons say what its
 * memory is for (roles.ts). A snapshot taken with allocation history off
 * has no stacks: its memory is `unknown` unless it grew on a re-run or the
 * kernel named its holders, and the report sums it (`noStacks`).
 */
import { IBlockHolders } from '../holders';
import { Block, Snapshot } from '../model';
import { BlockRoles } from '../roles';
import { IExecutionRetention, kernelPositions, retentionByExecution } from '../retention';
import { Context, recordsStacks } from './context';
import { Finding } from './finding';
import { settleFixed } from './fixed';
import { findGraph } from './graph';
import { findGrowth } from './growth';
import { applyHolders, applyHoldersAfter } from './holders';
import { findOutputCache } from './outputCache';
import { rank } from './rank';
import { explainRoles } from './roles';
import { findTraceback } from './traceback';
import { IExecutionVerdict, ILeakExecution, INoStacks, LeakReport } from './types';

/** Options for `findLeaks`. */
export interface IFindLeaksOptions {
  /** Holders from the live kernel for blocks of the latest snapshot. */
  holders?: IBlockHolders;
  /**
   * Per execution, the kernel's answer given right after it (null where
   * none), as a recorded session keeps them: it names the holders of memory
   * a later cell freed, which the latest answer cannot see.
   */
  holdersAfter?: readonly (IBlockHolders | null)[];
  /** `retentionByExecution(snapshots, kernels)`, when the caller already has it (ranking again with holders). */
  retention?: readonly IExecutionRetention[];
  /** Each snapshot's per-block roles (null where the kernel gave none), in the snapshots' order. */
  roles?: readonly (BlockRoles | null)[];
}

/** Rank the executions of a session whose snapshots (one per execution) share one FrameTable. */
export function findLeaks(
  snapshots: readonly Snapshot[],
  executions: readonly ILeakExecution[],
  options: IFindLeaksOptions = {}
): LeakReport {
  if (snapshots.length !== executions.length) {
    throw new Error(`findLeaks: ${snapshots.length} snapshots for ${executions.length} executions`);
  }
  if (!snapshots.length) {
    return { executions: [], ranking: [], topLeak: null, noStacks: null };
  }
  const retention =
    options.retention ?? retentionByExecution(snapshots, kernelPositions(executions.map(e => e.kernelSession)));
  const context = new Context(snapshots[0].frames, executions, retention, snapshots.map(recordsStacks));
  const findings = retention.map(r => new Finding(r, executions[r.execution]));
  // The holders answer for the latest snapshot: only its kernel's blocks can be in it.
  const lastKernel = retention[retention.length - 1].kernel;
  const current = findings.filter(f => f.retention.kernel === lastKernel);
  if (options.holders) {
    const holders = options.holders;
    current.forEach(f => context.applyHolders(holders, lastKernel, f.retention.alive));
  }
  findGrowth(findings, context);
  for (const f of findings) {
    findGraph(f, findings, context);
    findOutputCache(f, context);
    findTraceback(f, context);
  }
  for (const f of findings) {
    const after = options.holdersAfter?.[f.k];
    if (after) {
      applyHoldersAfter(f, after, context);
    }
  }
  if (options.holders) {
    for (const f of current) {
      applyHolders(f, options.holders, context);
    }
  }
  if (options.roles?.some(r => r !== null)) {
    const roles = options.roles;
    // A block's role: in the latest snapshot of its kernel that holds it, else its own execution's.
    const holds = (k: number, b: Block) => roles[k]?.has(b) ?? false;
    for (const f of findings) {
      const last = f.retention.lastOfKernel;
      explainRoles(f, b => (holds(last, b) ? roles[last] : holds(f.k, b) ? roles[f.k] : null));
    }
  }
  settleFixed(findings);
  const verdicts = findings.map(f => f.verdict(context));
  const ranking = rank(verdicts, executions);
  const top = ranking.length && verdicts[ranking[0]].verdict === 'leak' ? ranking[0] : null;
  return { executions: verdicts, ranking, topLeak: top, noStacks: noStacksOf(verdicts) };
}

/** Bytes of a verdict's memory no allocation stack explains (its `no-stacks` finding), 0 when none. */
export function stacklessBytes(v: IExecutionVerdict): number {
  return v.findings.reduce((n, f) => n + (f.code === 'no-stacks' ? f.bytes : 0), 0);
}

/** The executions' `no-stacks` findings summed: what no stack explains, or null when there is none. */
function noStacksOf(verdicts: readonly IExecutionVerdict[]): INoStacks | null {
  const executions = verdicts.filter(v => stacklessBytes(v) > 0);
  return executions.length
    ? { bytes: executions.reduce((n, v) => n + stacklessBytes(v), 0), executions: executions.map(v => v.execution) }
    : null;
}
