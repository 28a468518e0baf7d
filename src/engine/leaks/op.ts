/**
 * The leak ranking as an engine-worker operation (src/worker/handlers.ts):
 * the page sends a session encoded once (transfer.ts) and the worker keeps
 * it, with its retention, for the second ranking the kernel's holders ask
 * for, which then sends only the holders.
 */
import { IBlockHolders } from '../holders';
import { isAllocated, Snapshot } from '../model';
import { BlockRoles, blockRolesFromCodes } from '../roles';
import { IExecutionRetention, kernelPositions, retentionByExecution } from '../retention';
import { findLeaks } from './find';
import { decodeSession, IEncodedSession } from './transfer';
import { ILeakExecution, LeakReport } from './types';

/** What `rankLeaks` takes. */
export interface IRankLeaksRequest {
  /** Names the session; a later request with the same key and no `session` reuses it. */
  readonly key: number;
  /** The encoded snapshots, or absent to rank the kept session again. */
  readonly session?: IEncodedSession;
  readonly executions: readonly ILeakExecution[];
  /** The kernel's holders for the latest snapshot. */
  readonly holders?: IBlockHolders;
  /** Per execution, the kernel's answer given right after it, null where none (`findLeaks`' `holdersAfter`). */
  readonly holdersAfter?: readonly (IBlockHolders | null)[];
  /** With `session`: each snapshot's roles (engine/roles.ts `roleCodes`), null where the kernel gave none. */
  readonly roles?: readonly (Uint8Array | null)[];
  /** How many of the latest snapshot's allocated blocks, largest first, to list for asking the kernel (0: none). */
  readonly queries?: number;
}

/** What `rankLeaks` gives back. */
export interface IRankLeaksResult {
  readonly report: LeakReport;
  /** The blocks to ask the kernel about, as `[device, address, size]`, largest first. */
  readonly queries: readonly [number, number, number][];
}

/** The one session the worker keeps: the panel ranks one notebook at a time. */
let kept: {
  key: number;
  snapshots: Snapshot[];
  retention: IExecutionRetention[];
  roles: (BlockRoles | null)[];
} | null = null;

/** Rank a session's leaks; throws when asked to re-rank a session it no longer keeps. */
export function rankLeaks(request: IRankLeaksRequest): IRankLeaksResult {
  if (request.session) {
    const snapshots = decodeSession(request.session);
    const kernels = kernelPositions(request.executions.map(e => e.kernelSession));
    const roles = snapshots.map((s, k) => {
      const codes = request.roles?.[k];
      return codes ? blockRolesFromCodes(s, codes) : null;
    });
    kept = { key: request.key, snapshots, retention: retentionByExecution(snapshots, kernels), roles };
  } else if (kept?.key !== request.key) {
    throw new Error(`rankLeaks: session ${request.key} is not kept; send it again`);
  }
  const report = findLeaks(kept!.snapshots, request.executions, {
    holders: request.holders,
    holdersAfter: request.holdersAfter,
    retention: kept!.retention,
    roles: kept!.roles
  });
  return {
    report,
    queries: request.queries ? largestAllocated(kept!.snapshots[kept!.snapshots.length - 1], request.queries) : []
  };
}

/** The allocated blocks of a snapshot, largest first (sorting 40,000 blocks is work the page should not do). */
function largestAllocated(snapshot: Snapshot, most: number): [number, number, number][] {
  return snapshot.blocks
    .filter(isAllocated)
    .sort((a, b) => b.size - a.size)
    .slice(0, most)
    .map(b => [b.device, b.address, b.size]);
}
