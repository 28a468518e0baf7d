/**
 * The leak finder: which executions left GPU memory alive, whether that is a
 * leak, and which cell to look at first.
 *
 * Memory a cell keeps is not a leak by itself: weights, gradients and
 * optimizer state are meant to stay. A leak is memory that grows each time
 * the same code runs again, or that nothing the user can see holds: an
 * autograd graph kept through the outputs of a forward pass run outside
 * `torch.no_grad()`, the output cache `Out[n]`, the last traceback. Offline
 * the evidence is the snapshots and the cells' sources; live, the kernel's
 * holder analysis (`IBlockHolders`) names the owner and settles the verdict.
 */
import { holderKey, HolderKind, IBlockHolders, IHolder, summarizeHolders } from './holders';
import { Block, Frame, FrameTable, Snapshot } from './model';
import { isCellFilename, murmur2, parseCellFilename } from './cells';
import { allocationSite, isNativeFrame } from './frames';
import { aliveBytesAt, IExecutionRetention, kernelPositions, retentionByExecution } from './retention';
import {
  containersOf,
  displayedLines,
  gradDisabledAt,
  recurrentNames,
  hookTargets,
  registersHook,
  runsBackward,
  setsGradMode,
  storedNames
} from './source';
import { adviceText, BlockOrigin, findingText, LeakAdvice, LeakFinding } from './findings';

/** One execution of a cell, in the order of the snapshots. */
export interface ILeakExecution {
  /** The cell's stable key: JupyterLab's cell id, or the manifest index as text. */
  readonly cellId: string;
  readonly executionCount: number | null;
  /** The cell's source when known; rules that read it are skipped otherwise. */
  readonly source: string | null;
  /** The error the cell raised, if any. */
  readonly error: string | null;
  /** How a person names the cell: `cell 3 [7]` (CLI), `Cell [7]` (panel). */
  readonly label: string;
  /**
   * The kernel session the execution ran in (the frontend's `CellRecord.kernelSession`,
   * a manifest's `kernel_session`): a change is a restart. Absent: the kernel of the execution before.
   */
  readonly kernelSession?: number | null;
}

export type LeakVerdict = 'leak' | 'retained' | 'ok';
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
export type LeakCause = 'growth' | 'graph' | 'output-cache' | 'traceback' | 'hook' | 'unreachable';

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

/** The finder's judgement of one execution. */
export interface IExecutionVerdict {
  readonly execution: number;
  readonly cellId: string;
  readonly executionCount: number | null;
  readonly verdict: LeakVerdict;
  /**
   * How sure the finder is that this deserves a look: the rule's certainty,
   * capped by size (a leak under `LEAK_CONFIDENCE_BYTES.low` is low, under
   * `LEAK_CONFIDENCE_BYTES.medium` at most medium).
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
   * the sum of `evidence[].bytes`. 0 unless `leak`.
   */
  readonly leakedBytes: number;
  readonly causes: readonly LeakCause[];
  /** What the finder found, as data (codes with bytes, executions and names), in the order `reasons` words them. */
  readonly findings: readonly LeakFinding[];
  /** The findings in English (`findingText` with the executions' labels), for views that do not word them. */
  readonly reasons: readonly string[];
  /** What to do about a leak, as data, in the order `advice` words them. */
  readonly fixes: readonly LeakAdvice[];
  /** The fixes in English (`adviceText`). */
  readonly advice: readonly string[];
  /** Holders named for its live blocks (by the kernel, or guessed from the source). */
  readonly holders: readonly string[];
  readonly evidence: readonly ILeakEvidence[];
}

/** The ranking over a session. */
export interface LeakReport {
  /** One verdict per execution, in execution order. */
  readonly executions: readonly IExecutionVerdict[];
  /** Execution indices, the one to look at first first. */
  readonly ranking: readonly number[];
  /** The execution to look at first, or null when nothing leaks. */
  readonly topLeak: number | null;
}

/** Options for `findLeaks`. */
export interface IFindLeaksOptions {
  /** Holders from the live kernel for blocks of the latest snapshot. */
  holders?: IBlockHolders;
  /** `retentionByExecution(snapshots, kernels)`, when the caller already has it (ranking again with holders). */
  retention?: readonly IExecutionRetention[];
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
    return { executions: [], ranking: [], topLeak: null };
  }
  const context = new Private.Context(snapshots[0].frames, executions);
  const retention = options.retention ?? retentionByExecution(snapshots, kernelPositions(executions.map(e => e.kernelSession)));
  const findings = retention.map(r => new Private.Finding(r, executions[r.execution]));
  Private.findGrowth(findings, context);
  for (const f of findings) {
    Private.findGraph(f, findings, context);
    Private.findOutputCache(f, context);
    Private.findTraceback(f, context);
  }
  if (options.holders) {
    // The holders answer for the latest snapshot: only its kernel's blocks can be in it.
    const lastKernel = retention[retention.length - 1].kernel;
    for (const f of findings.filter(x => x.retention.kernel === lastKernel)) {
      Private.applyHolders(f, options.holders, context);
    }
  }
  const verdicts = findings.map(f => f.verdict(context));
  const ranking = Private.rank(verdicts, executions);
  const top = ranking.length && verdicts[ranking[0]].verdict === 'leak' ? ranking[0] : null;
  return { executions: verdicts, ranking, topLeak: top };
}

namespace Private {
  /** What a block's stack says made it. */
  export type Origin = BlockOrigin;

  /** A cell frame of a stack, with its source. */
  interface ICellFrame {
    readonly frame: Frame;
    readonly source: string | null;
  }

  /** Per-session lookups shared by the rules: stacks resolved once. */
  export class Context {
    constructor(
      readonly frames: FrameTable,
      readonly executions: readonly ILeakExecution[]
    ) {
      for (const e of executions) {
        if (e.source !== null) {
          this._sourceByHash.set(murmur2(e.source), e.source);
        }
      }
      this.hookTargets = executions.flatMap(e => (e.source !== null ? hookTargets(e.source) : []));
      this.hooks = this.hookTargets.length > 0 || executions.some(e => e.source !== null && registersHook(e.source));
      let off = false;
      this.gradOffGlobally = executions.map(e => {
        const was = off;
        off = (e.source !== null ? setsGradMode(e.source) : null) ?? off;
        return was || off;
      });
    }

    /** Per execution: autograd was turned off for the session (`torch.set_grad_enabled(False)`). */
    readonly gradOffGlobally: readonly boolean[];

    /** Containers the session's module hooks append to. */
    readonly hookTargets: readonly string[];

    /** True when some cell of the session registers a module hook. */
    readonly hooks: boolean;

    /** Source of a cell by its code name, when some execution ran it. */
    sourceOf(filename: string): string | null {
      const name = parseCellFilename(filename);
      if (!name) {
        return null;
      }
      if (name.kind === 'ipykernel') {
        return this._sourceByHash.get(name.hash) ?? null;
      }
      return this.executions.find(e => e.executionCount === name.executionCount)?.source ?? null;
    }

    /** Cell frames of a stack, innermost first (resolved once per stack). */
    cellFrames(stack: number): readonly ICellFrame[] {
      let frames = this._cellFrames.get(stack);
      if (!frames) {
        frames = this.frames
          .stack(stack)
          .map(id => this.frames.frame(id))
          .filter(f => isCellFilename(f.filename))
          .map(frame => ({ frame, source: this.sourceOf(frame.filename) }));
        this._cellFrames.set(stack, frames);
      }
      return frames;
    }

    /** The allocation site (frame id, -1 for none) a person sees for a stack, resolved once per stack. */
    site(stack: number): number {
      let site = this._sites.get(stack);
      if (site === undefined) {
        site = allocationSite(this.frames, stack);
        this._sites.set(stack, site);
      }
      return site;
    }

    /** What made the blocks of a stack. */
    origin(stack: number): Origin {
      let origin = this._origins.get(stack);
      if (origin === undefined) {
        origin = classify(this.frames.stack(stack).map(id => this.frames.frame(id)));
        this._origins.set(stack, origin);
      }
      return origin;
    }

    private readonly _sourceByHash = new Map<number, string>();
    private readonly _origins = new Map<number, Origin>();
    private readonly _sites = new Map<number, number>();
    private readonly _cellFrames = new Map<number, readonly ICellFrame[]>();
  }

  const TORCH = /[\\/]torch[\\/]/;

  function classify(stack: readonly Frame[]): Origin {
    const python = stack.filter(f => !isNativeFrame(f));
    if (!python.length) {
      // Autograd's backward thread allocates without Python frames: gradients.
      return 'gradient';
    }
    if (python.some(f => /[\\/]torch[\\/]optim[\\/]/.test(f.filename))) {
      return 'optimizer';
    }
    if (
      python.some(
        f =>
          /[\\/]torch[\\/]nn[\\/]init\.py$/.test(f.filename) ||
          (/[\\/]torch[\\/]nn[\\/]/.test(f.filename) &&
            /^(?:_apply|__init__|reset_parameters|flatten_parameters|load_state_dict|_load_from_state_dict|register_buffer|register_parameter)$/.test(
              f.name
            ))
      )
    ) {
      return 'parameters';
    }
    if (
      python.some(
        f =>
          (/[\\/]torch[\\/]nn[\\/]modules[\\/]/.test(f.filename) && /^(?:_call_impl|forward|_conv_forward)$/.test(f.name)) ||
          /[\\/]torch[\\/]nn[\\/]functional\.py$/.test(f.filename)
      )
    ) {
      return 'forward';
    }
    return TORCH.test(python[0].filename) ? 'forward' : 'direct';
  }

  /** Evidence and verdict being built for one execution. */
  export class Finding {
    constructor(
      readonly retention: IExecutionRetention,
      readonly execution: ILeakExecution
    ) {}

    causes = new Set<LeakCause>();
    findings: LeakFinding[] = [];
    /** Fixes proposed so far, each once (keyed by its JSON). */
    advice = new Map<string, LeakAdvice>();
    holders = new Set<string>();
    evidence: Block[] = [];
    /** Set when live holders show every block has an expected owner. */
    cleared: LeakFinding | null = null;
    confidence: Confidence = 'medium';

    get k(): number {
      return this.retention.execution;
    }

    leak(cause: LeakCause, blocks: readonly Block[], finding: LeakFinding, advice: readonly LeakAdvice[]): void {
      this.causes.add(cause);
      this.findings.push(finding);
      advice.forEach(a => this.advice.set(JSON.stringify(a), a));
      this.evidence.push(...blocks);
    }

    verdict(context: Context): IExecutionVerdict {
      const r = this.retention;
      let verdict: LeakVerdict;
      let findings: LeakFinding[];
      if (this.causes.size && !this.cleared) {
        verdict = 'leak';
        findings = [...this.findings];
      } else if (r.aliveBytes > 0) {
        verdict = 'retained';
        findings = [...(this.cleared ? [this.cleared] : []), ...describeRetained(r.alive, this, context)];
      } else {
        verdict = 'ok';
        findings = [
          r.leftBytes > 0
            ? { code: 'all-freed-later', bytes: r.leftBytes, by: [...r.freedBy.keys()].sort((a, b) => a - b) }
            : { code: 'nothing-left' }
        ];
      }
      // The headline is the evidence: its sites add up to it.
      const evidence = verdict === 'leak' ? groupEvidence(this.evidence, this.k, context) : [];
      const leakedBytes = evidence.reduce((n, e) => n + e.bytes, 0);
      const fixes: LeakAdvice[] = verdict === 'leak' ? (this.advice.size ? [...this.advice.values()] : [{ code: 'find-holder' }]) : [];
      return {
        execution: r.execution,
        cellId: this.execution.cellId,
        executionCount: this.execution.executionCount,
        verdict,
        confidence:
          verdict === 'ok' ? 'high' : verdict === 'leak' ? confidenceForSize(this.confidence, leakedBytes) : this.cleared ? 'high' : 'medium',
        kernel: r.kernel,
        endedByRestart: r.endedByRestart && r.aliveBytes > 0,
        leftBytes: r.leftBytes,
        retainedBytes: r.aliveBytes,
        freedLater: [...r.freedBy].sort((a, b) => a[0] - b[0]).map(([execution, bytes]) => ({ execution, bytes })),
        leakedBytes,
        causes: verdict === 'leak' ? [...this.causes] : [],
        findings,
        reasons: findings.map(x => findingText(x, k => context.executions[k].label)),
        fixes,
        advice: fixes.map(adviceText),
        holders: summarizeHolders([...this.holders]),
        evidence
      };
    }
  }

  /** The executions' source key: identical sources are the same code (and the same code name). */
  function codeOf(e: ILeakExecution): string {
    return e.source ?? `cell:${e.cellId}`;
  }

  /** Runs of the same code in the same kernel: a restart starts over, so a run is never compared with another kernel's. */
  function runKey(f: Finding): string {
    return `${f.retention.kernel}\u0000${codeOf(f.execution)}`;
  }

  /**
   * Growth on re-run: after each re-execution of the same code, the bytes
   * that code's executions hold are compared with what they held after the
   * previous one. More means each run adds memory nothing releases.
   */
  export function findGrowth(findings: readonly Finding[], context: Context): void {
    const byCode = new Map<string, Finding[]>();
    for (const f of findings) {
      const list = byCode.get(runKey(f)) ?? [];
      list.push(f);
      byCode.set(runKey(f), list);
    }
    for (const runs of byCode.values()) {
      const held = (upTo: number) =>
        runs.filter(f => f.k <= runs[upTo].k).reduce((n, f) => n + aliveBytesAt(f.retention, runs[upTo].k), 0);
      for (let i = 1; i < runs.length; i++) {
        const growth = held(i) - held(i - 1);
        // A re-run that only moved blocks (gradients reallocated) adds nothing.
        const added = runs[i].retention.left.filter(b => context.origin(b.stack) !== 'gradient');
        if (growth <= 0 || !added.length) {
          continue;
        }
        // The evidence is what each run left at the stacks that grew, not all it left:
        // a training step that appends its loss leaks the loss, not its gradients.
        const grown = grownStacks(runs, i, context);
        const atGrown = (f: Finding, fallback: readonly Block[]) => {
          const blocks = f.retention.left.filter(b => grown.has(b.stack));
          return blocks.length ? blocks : fallback;
        };
        const evidence = atGrown(runs[i], added);
        const advice = growthAdvice(evidence, runs[i], context);
        runs[i].leak('growth', evidence, { code: 'growth', bytes: growth, from: runs[i - 1].k, to: runs[i].k }, advice);
        runs[i].confidence = 'high';
        for (const earlier of runs.slice(0, i)) {
          if (!earlier.causes.has('growth')) {
            const blocks = atGrown(earlier, earlier.retention.left);
            earlier.leak(
              'growth',
              blocks,
              { code: 'same-code-grew', bytes: total(blocks), later: runs[i].k, grewBytes: growth },
              advice
            );
            earlier.confidence = 'high';
          }
        }
      }
    }
  }

  /**
   * Stacks whose bytes, over the runs of one code up to `runs[i]`, are higher
   * after `runs[i]` than after the run before it (gradients excepted).
   */
  function grownStacks(runs: readonly Finding[], i: number, context: Context): Set<number> {
    const heldByStack = (upTo: number) => {
      const at = runs[upTo].k;
      const bytes = new Map<number, number>();
      for (const f of runs.slice(0, upTo + 1)) {
        f.retention.left.forEach((b, j) => {
          const freed = f.retention.freedAt[j];
          if ((freed === null || freed > at) && context.origin(b.stack) !== 'gradient') {
            bytes.set(b.stack, (bytes.get(b.stack) ?? 0) + b.size);
          }
        });
      }
      return bytes;
    };
    const now = heldByStack(i);
    const then = heldByStack(i - 1);
    return new Set([...now].filter(([stack, bytes]) => bytes > (then.get(stack) ?? 0)).map(([stack]) => stack));
  }

  function growthAdvice(added: readonly Block[], f: Finding, context: Context): LeakAdvice[] {
    const source = f.execution.source ?? '';
    const advice: LeakAdvice[] = [];
    for (const line of new Set(added.map(b => outerLine(b, f, context)).filter((l): l is number => l !== null))) {
      advice.push(...detachAdvice(source, line));
      for (const name of storedNames(source, line)) {
        for (const list of containersOf(source, name)) {
          advice.push({ code: 'append-item', name, list });
          f.holders.add(list);
        }
      }
    }
    if (context.hooks && added.some(b => context.origin(b.stack) === 'forward')) {
      advice.push({ code: 'remove-hook', lists: context.hookTargets });
      context.hookTargets.forEach(t => f.holders.add(`${t} (appended to by a forward hook)`));
    }
    return advice;
  }

  function detachAdvice(source: string, line: number): LeakAdvice[] {
    const names = recurrentNames(source, line);
    return names.length ? [{ code: 'detach-hidden', names }] : [];
  }

  /** Line of the executed cell's own frame (the outermost cell frame) in a block's stack. */
  function outerLine(b: Block, f: Finding, context: Context): number | null {
    const frames = context.cellFrames(b.stack);
    return frames.length ? frames[frames.length - 1].frame.line : null;
  }

  /**
   * An autograd graph: forward-pass blocks left alive by an execution that
   * ran with grad mode on and ran no backward pass, which would have freed
   * them. Cleared when another cell frees them (a forward in one cell, the
   * backward in the next); a re-run of the same code freeing them only
   * replaces one graph with the next.
   */
  export function findGraph(f: Finding, findings: readonly Finding[], context: Context): void {
    const r = f.retention;
    const forward = r.left.filter(b => context.origin(b.stack) === 'forward');
    if (!forward.length) {
      return;
    }
    const stacks = new Set(r.left.map(b => b.stack));
    const frames = [...stacks].flatMap(s => context.cellFrames(s));
    if (frames.some(c => c.source !== null && runsBackward(c.source)) || (f.execution.source && runsBackward(f.execution.source))) {
      return;
    }
    if (context.gradOffGlobally[f.k]) {
      return;
    }
    const graph = forward.filter(b =>
      context.cellFrames(b.stack).every(c => c.source === null || !gradDisabledAt(c.source, c.frame.line))
    );
    if (!graph.length || !context.cellFrames(graph[0].stack).length) {
      return;
    }
    const bytes = graph.reduce((n, b) => n + b.size, 0);
    // Freed mostly by other code: a graph a later cell consumed, not one that lingers.
    let freedElsewhere = 0;
    for (const [k, freed] of r.freedBy) {
      if (codeOf(findings[k].execution) !== codeOf(f.execution)) {
        freedElsewhere += freed;
      }
    }
    if (freedElsewhere > r.leftBytes - freedElsewhere) {
      return;
    }
    const names = namesFor(graph, f, context);
    const source = f.execution.source ?? '';
    const detach = [...new Set(graph.map(b => outerLine(b, f, context)))].flatMap(line =>
      line === null ? [] : detachAdvice(source, line)
    );
    f.leak(
      'graph',
      graph,
      { code: 'graph', bytes, names },
      detach.length ? detach : [{ code: 'no-grad' }]
    );
    names.forEach(n => f.holders.add(`autograd graph of ${n}`));
  }

  function namesFor(blocks: readonly Block[], f: Finding, context: Context): string[] {
    const source = f.execution.source;
    if (source === null) {
      return [];
    }
    const names = new Set<string>();
    for (const b of blocks) {
      const line = outerLine(b, f, context);
      if (line !== null) {
        storedNames(source, line).forEach(n => names.add(n));
      }
    }
    return [...names];
  }

  /** The output cache: blocks made by the cell's displayed last expression, which IPython keeps in `Out[n]`. */
  export function findOutputCache(f: Finding, context: Context): void {
    const source = f.execution.source;
    const n = f.execution.executionCount;
    const shown = source === null || n === null || f.execution.error ? null : displayedLines(source);
    if (!shown || n === null) {
      return;
    }
    // Only what the expression itself or the library code it called made: a
    // user function's own allocations may well not be in its return value.
    const cached = f.retention.alive.filter(b => {
      const frames = context.cellFrames(b.stack);
      const origin = context.origin(b.stack);
      const line = frames.length === 1 ? frames[0].frame.line : null;
      return (origin === 'direct' || origin === 'forward') && line !== null && line >= shown.first && line <= shown.last;
    });
    if (!cached.length) {
      return;
    }
    const bytes = cached.reduce((s, b) => s + b.size, 0);
    f.leak(
      'output-cache',
      cached,
      { code: 'output-cache', bytes, executionCount: n },
      [{ code: 'silence-output', executionCount: n }]
    );
    f.confidence = 'high';
    f.holders.add(`Out[${n}]`);
  }

  /** The last traceback: a failed cell's function frames keep their locals alive. */
  export function findTraceback(f: Finding, context: Context): void {
    if (!f.execution.error) {
      return;
    }
    const pinned = f.retention.alive.filter(b => {
      const frames = context.cellFrames(b.stack);
      // Allocated below the cell's own <module> frame: in a function the exception unwound.
      return frames.length > 1 || (frames.length === 1 && frames[0].frame.name !== '<module>');
    });
    if (!pinned.length) {
      return;
    }
    const bytes = pinned.reduce((s, b) => s + b.size, 0);
    const fn = context.cellFrames(pinned[0].stack)[0]?.frame.name ?? 'a function';
    f.leak(
      'traceback',
      pinned,
      { code: 'traceback', bytes, fn, error: f.execution.error.split(':')[0] },
      [{ code: 'clear-traceback' }]
    );
    f.holders.add('sys.last_traceback');
  }

  // Holders nobody sees: each makes the memory it keeps a leak.
  const INVISIBLE: readonly HolderKind[] = ['graph', 'output-cache', 'traceback', 'hook', 'unreachable'];
  // Holders of state meant to stay.
  const EXPECTED: readonly HolderKind[] = ['parameter', 'gradient', 'optimizer', 'native'];
  // Holders a user sees and names.
  const VISIBLE: readonly HolderKind[] = ['variable', 'parameter', 'gradient', 'optimizer'];

  /** Live holders settle the verdict: named owners replace the guesses. */
  export function applyHolders(f: Finding, holders: IBlockHolders, context: Context): void {
    const known = f.retention.alive
      .map(block => ({ block, list: holders.get(holderKey(block.device, block.address)) }))
      .filter((e): e is { block: Block; list: readonly IHolder[] } => e.list !== undefined && e.list.length > 0);
    if (!known.length) {
      return;
    }
    f.holders.clear();
    known.forEach(e => e.list.forEach(h => f.holders.add(describeHolder(h))));
    // Freeing a graph, the cache or the traceback frees only blocks no visible name also holds.
    // Some holders confirm a cause without making one: a tensor reached only through the
    // garbage collector is held from C++ (a library cache), and an input this cell made
    // that a later cell's graph saved is that cell's leak, not this one's.
    const makesLeak = (h: IHolder, b: Block) =>
      INVISIBLE.includes(h.kind) &&
      (f.causes.size > 0 || (h.kind !== 'unreachable' && (h.kind !== 'graph' || context.origin(b.stack) === 'forward')));
    const invisible = known.filter(e => e.list.some(h => makesLeak(h, e.block)) && !e.list.some(h => VISIBLE.includes(h.kind)));
    if (invisible.length) {
      const kinds = new Set(invisible.flatMap(e => e.list.map(h => h.kind)));
      const names = invisible.flatMap(e => e.list.filter(h => !EXPECTED.includes(h.kind)).map(describeHolder));
      const bytes = invisible.reduce((n, e) => n + e.block.size, 0);
      const cause = INVISIBLE.find(k => kinds.has(k)) as LeakCause;
      const confirmed = f.causes.has(cause);
      f.leak(
        cause,
        invisible.map(e => e.block),
        { code: 'kernel-holders-leak', bytes, holders: summarizeHolders(names), confirmed },
        confirmed ? [] : holderAdvice(kinds)
      );
      f.confidence = 'high';
    } else if (!f.causes.has('growth')) {
      const named = known.filter(e => e.list.some(h => h.kind !== 'unreachable'));
      const orphans = known.length - named.length;
      const names = summarizeHolders(named.flatMap(e => e.list.filter(h => h.kind !== 'unreachable').map(describeHolder)));
      f.cleared = { code: 'kernel-holders-clear', holders: names, orphans };
    }
  }

  function describeHolder(h: IHolder): string {
    switch (h.kind) {
      case 'graph':
        return `autograd graph of ${h.path}`;
      case 'native':
        return 'native code (no tensor: a library workspace)';
      case 'unreachable':
        return `a tensor nothing visible references (${h.path})`;
      case 'hook':
        return h.via ? `${h.path} (${h.via})` : h.path;
      default:
        return h.path;
    }
  }

  function holderAdvice(kinds: Set<HolderKind>): LeakAdvice[] {
    const advice: LeakAdvice[] = [];
    if (kinds.has('hook')) {
      advice.push({ code: 'remove-hook', lists: [] });
    }
    if (kinds.has('graph')) {
      advice.push({ code: 'no-grad-or-detach' });
    }
    if (kinds.has('output-cache')) {
      advice.push({ code: 'silence-output', executionCount: null });
    }
    if (kinds.has('traceback')) {
      advice.push({ code: 'clear-traceback' });
    }
    return advice.length ? advice : [{ code: 'drop-references' }];
  }

  function describeRetained(alive: readonly Block[], f: Finding, context: Context): LeakFinding[] {
    const byOrigin = new Map<Origin, Block[]>();
    for (const b of alive) {
      const o = context.origin(b.stack);
      byOrigin.set(o, [...(byOrigin.get(o) ?? []), b]);
    }
    return [...byOrigin]
      .sort((a, b) => total(b[1]) - total(a[1]))
      .map(([origin, blocks]) => ({ code: 'retained', bytes: total(blocks), origin, names: namesFor(blocks, f, context) }));
  }

  function total(blocks: readonly Block[]): number {
    return blocks.reduce((n, b) => n + b.size, 0);
  }

  function groupEvidence(blocks: readonly Block[], execution: number, context: Context): ILeakEvidence[] {
    // The same block can come from its own snapshot and from the latest one.
    const unique = new Map(blocks.map(b => [holderKey(b.device, b.address), b]));
    const bySite = new Map<number, { stack: number; largest: number; bytes: number; blocks: number }>();
    for (const b of unique.values()) {
      const site = context.site(b.stack);
      const e = bySite.get(site) ?? { stack: b.stack, largest: 0, bytes: 0, blocks: 0 };
      if (b.size > e.largest) {
        e.stack = b.stack;
        e.largest = b.size;
      }
      e.bytes += b.size;
      e.blocks++;
      bySite.set(site, e);
    }
    return [...bySite.values()]
      .map(e => ({ stack: e.stack, bytes: e.bytes, blocks: e.blocks, executions: [execution] }))
      .sort((a, b) => b.bytes - a.bytes);
  }

  /**
   * Leaks first, grouped by code: the group with the most leaked bytes, its
   * latest run first (the one a user would re-run); then what is retained,
   * largest first; then the rest in execution order.
   */
  export function rank(verdicts: readonly IExecutionVerdict[], executions: readonly ILeakExecution[]): number[] {
    const groupBytes = new Map<string, number>();
    for (const v of verdicts) {
      if (v.verdict === 'leak') {
        const code = codeOf(executions[v.execution]);
        groupBytes.set(code, Math.max(groupBytes.get(code) ?? 0, v.leakedBytes));
      }
    }
    const order = (v: IExecutionVerdict) => (v.verdict === 'leak' ? 0 : v.verdict === 'retained' ? 1 : 2);
    return [...verdicts]
      .sort((a, b) => {
        const byVerdict = order(a) - order(b);
        if (byVerdict || a.verdict === 'ok') {
          return byVerdict || a.execution - b.execution;
        }
        if (a.verdict === 'leak') {
          const ga = groupBytes.get(codeOf(executions[a.execution]))!;
          const gb = groupBytes.get(codeOf(executions[b.execution]))!;
          return gb - ga || (codeOf(executions[a.execution]) === codeOf(executions[b.execution]) ? b.execution - a.execution : 0) || b.leakedBytes - a.leakedBytes;
        }
        return b.retainedBytes - a.retainedBytes || a.execution - b.execution;
      })
      .map(v => v.execution);
  }
}
