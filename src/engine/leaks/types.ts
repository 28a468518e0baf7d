/**
 * The leak finder's public shapes: what it is given (executions) and what it
 * returns (a verdict per execution, as data: codes with figures and names).
 */
import { IHolder } from '../holders';
import { LeakAdvice, LeakFinding } from '../findings';
import { Role } from '../roles';

/** One execution of a cell, in the order of the snapshots. */
export interface ILeakExecution {
  /** The cell's stable key: JupyterLab's cell id, or the manifest index as text. */
  readonly cellId: string;
  readonly executionCount: number | null;
  /** The cell's source when known; rules that read it are skipped otherwise. */
  readonly source: string | null;
  /** The error the cell raised, if any. */
  readonly error: string | null;
  /**
   * The kernel session the execution ran in (the frontend's `CellRecord.kernelSession`,
   * a manifest's `kernel_session`): a change is a restart. Absent: the kernel of the execution before.
   */
  readonly kernelSession?: number | null;
}

/**
 * `leak`: memory this code left is still alive and nothing visible should
 * hold it, or a later run of the same code leaks again. `fixed`: it leaked,
 * and a later cell (not a re-run of the same code) freed all of it.
 * `retained`: memory is alive with an owner meant to keep it. `unknown`:
 * memory is alive, but no allocation stack was recorded for it (allocation
 * history off), so nothing tells a leak from state meant to stay. `ok`:
 * nothing left, or everything freed later.
 */
export type LeakVerdict = 'leak' | 'fixed' | 'unknown' | 'retained' | 'ok';
export type Confidence = 'high' | 'medium' | 'low';

/**
 * Sizes below which a leak's confidence is capped: a few KiB (loss scalars,
 * indices) is worth knowing about but never the first thing to look at.
 */
export const LEAK_CONFIDENCE_BYTES = {
  /** Below this, a leak is low confidence whatever the rule. */
  low: 2 ** 20,
  /** Below this, a leak is at most medium confidence. */
  medium: 16 * 2 ** 20
} as const;

/** A rule's confidence capped by the leak's size. */
export function confidenceForSize(rule: Confidence, bytes: number): Confidence {
  if (bytes < LEAK_CONFIDENCE_BYTES.low) {
    return 'low';
  }
  return bytes < LEAK_CONFIDENCE_BYTES.medium && rule === 'high' ? 'medium' : rule;
}

export type LeakCause = 'growth' | 'graph' | 'output-cache' | 'traceback' | 'hook' | 'unreachable' | 'hidden';

/**
 * One allocation site behind a verdict: the blocks whose stacks end at the
 * same frame once torch and IPython plumbing is hidden (`allocationSite`
 * with the default filter), the line a person would fix.
 */
export interface ILeakEvidence {
  /** Stack id of the site's largest block. */
  readonly stack: number;
  /** Bytes of the site's blocks; the evidence of a verdict adds up to its `leakedBytes`. */
  readonly bytes: number;
  readonly blocks: number;
  /** Executions whose blocks these are. */
  readonly executions: readonly number[];
}

/** One part of a leak: memory of one role, and the fixes that free all of it. */
export interface ILeakPart {
  readonly bytes: number;
  /** What the memory is for by the kernel's roles (`activation`: saved for backward); null where none was recorded. */
  readonly role: Role | null;
  /** Positions in the verdict's `fixes` of the fixes that free this part; empty for a `fixed` leak. */
  readonly fixes: readonly number[];
}

/** The finder's judgement of one execution. */
export interface IExecutionVerdict {
  readonly execution: number;
  readonly cellId: string;
  readonly executionCount: number | null;
  readonly verdict: LeakVerdict;
  /**
   * How sure the finder is that this deserves a look: the rule's certainty,
   * capped by size (a leak under `LEAK_CONFIDENCE_BYTES.low` is low, under
   * `LEAK_CONFIDENCE_BYTES.medium` at most medium); always low for `unknown`.
   */
  readonly confidence: Confidence;
  /** Position of its kernel among the session's kernels (0 for the first; a restart starts the next). */
  readonly kernel: number;
  /** True when the kernel restarted after it with its memory still alive: the restart, not a cell, ended it. */
  readonly endedByRestart: boolean;
  /**
   * Bytes it left alive when it ended. Every other figure is part of it:
   * `leftBytes = retainedBytes + sum(freedLater.bytes)`, and `leakedBytes <= leftBytes`.
   */
  readonly leftBytes: number;
  /** Of `leftBytes`, what is still alive in the latest snapshot of its kernel. */
  readonly retainedBytes: number;
  /** Of `leftBytes`, what later executions of its kernel freed, per execution in order. */
  readonly freedLater: readonly { readonly execution: number; readonly bytes: number }[];
  /**
   * Of `leftBytes`, the memory the leak evidence covers, counted when the
   * execution ended (a later cell may have freed part of it since): exactly
   * the sum of `evidence[].bytes`. 0 unless `leak` or `fixed`. Library
   * workspaces and gradients are never part of it.
   */
  readonly leakedBytes: number;
  /** For `fixed`: the execution that freed (most of) the leaked memory; null otherwise. */
  readonly fixedBy: number | null;
  /** The causes found (also for `fixed`: what the leak was); empty for `retained` and `ok`. */
  readonly causes: readonly LeakCause[];
  /** What the finder found, as data (codes with bytes, executions and names). Views word them. */
  readonly findings: readonly LeakFinding[];
  /** What to do about a leak, as data; empty unless `leak`. Views word them. */
  readonly fixes: readonly LeakAdvice[];
  /**
   * The leaked bytes split by what frees them (parts.ts), largest first: they
   * add up to `leakedBytes`; empty unless `leak` or `fixed`. A fix to the
   * forward pass frees only what autograd saved, not the outputs you keep.
   */
  readonly parts: readonly ILeakPart[];
  /** Holders named for its live blocks (by the kernel, or guessed from the source), runs of indices folded. */
  readonly holders: readonly IHolder[];
  readonly evidence: readonly ILeakEvidence[];
}

/**
 * Memory the finder cannot trace to a line because no allocation stack was
 * recorded for it: the sum of the executions' `no-stacks` findings.
 */
export interface INoStacks {
  readonly bytes: number;
  /** The executions with such memory, in execution order. */
  readonly executions: readonly number[];
}

/** The ranking over a session. */
export interface LeakReport {
  /** One verdict per execution, in execution order. */
  readonly executions: readonly IExecutionVerdict[];
  /** Execution indices, the one to look at first first. */
  readonly ranking: readonly number[];
  /** The execution to look at first, or null when nothing leaks (a `fixed` leak never is). */
  readonly topLeak: number | null;
  /** What no allocation stack explains, or null when every snapshot recorded stacks. */
  readonly noStacks: INoStacks | null;
}
