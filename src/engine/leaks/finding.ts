/**
 * The evidence the rules gather for one execution, and the verdict it comes
 * to: `leak` while the leaked memory lives (or a later run of the same code
 * leaks again), `fixed` once another cell freed it, otherwise `retained` or
 * `ok` by what is still alive.
 */
import { LeakAdvice, LeakFinding } from '../findings';
import { deletableName, holderKey, HolderKind, IHolder, summarizeHolderList } from '../holders';
import { Block } from '../model';
import { IExecutionRetention } from '../retention';
import { BlockOrigin } from '../findings';
import { Role } from '../roles';
import { codeOf, Context, total } from './context';
import { fixesThatFree, leakParts } from './parts';
import {
  Confidence,
  confidenceForSize,
  IExecutionVerdict,
  ILeakEvidence,
  ILeakExecution,
  LeakCause,
  LeakVerdict
} from './types';

// Causes in the order a person should read them: what was seen (growth), then the references that keep the
// rest (a kept exception's frames, `Out[n]`, a closure, a hook's list: dropping one frees the graph it
// reaches too), then what they keep (an autograd graph), last memory only the garbage collector reached.
const CAUSE_ORDER: readonly LeakCause[] = [
  'growth',
  'traceback',
  'output-cache',
  'hidden',
  'hook',
  'graph',
  'unreachable'
];

/** What one cause recorded (advice by its JSON key). */
interface ICauseRecord {
  findings: LeakFinding[];
  advice: string[];
  blocks: Block[];
}

// Holders the user can clear or delete by the name the kernel gives: a variable's contents, a module attribute.
const CLEARABLE: readonly HolderKind[] = ['variable', 'parameter'];

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
  holders: IHolder[] = [];
  evidence: Block[] = [];
  /** The kernel's role of each evidence block it gave one, by `holderKey` (roles.ts). */
  roles = new Map<string, Role>();
  /** Set when live holders show the leak's live memory has owners meant to keep it. */
  cleared: LeakFinding | null = null;
  /** Set when another cell freed all the leaked memory (see fixed.ts). */
  fixed: { readonly by: number; readonly bytes: number } | null = null;
  confidence: Confidence = 'medium';

  /** The execution's position in the session. */
  get k(): number {
    return this.retention.execution;
  }

  /** Its code in its kernel: runs of the same code are compared only within one process. */
  get runKey(): string {
    return `${this.retention.kernel}\u0000${codeOf(this.execution)}`;
  }

  /** True while rules (or the kernel) say it leaks and nothing cleared it. */
  get leaking(): boolean {
    return this.causes.size > 0 && !this.cleared;
  }

  /**
   * Record a cause with its blocks. Gradients and library workspaces are
   * never leaked bytes of a cell: they are dropped from the evidence, and a
   * cause left with no blocks is not recorded. Returns whether it was.
   */
  leak(
    cause: LeakCause,
    blocks: readonly Block[],
    finding: LeakFinding,
    advice: readonly LeakAdvice[],
    context: Context
  ): boolean {
    const evidence = blocks.filter(b => context.canLeak(b, this.retention));
    if (!evidence.length) {
      return false;
    }
    this.causes.add(cause);
    this.findings.push(finding);
    advice.forEach(a => this.advice.set(JSON.stringify(a), a));
    for (const b of evidence) {
      this.evidence.push(b);
    }
    const own = this._byCause.get(cause) ?? { findings: [], advice: [], blocks: [] };
    own.findings.push(finding);
    own.advice.push(...advice.map(a => JSON.stringify(a)));
    own.blocks.push(...evidence);
    this._byCause.set(cause, own);
    return true;
  }

  /** Replace advice of `code` with `advice` (the kernel knows better than the guess). */
  replaceAdvice(code: LeakAdvice['code'], advice: LeakAdvice): void {
    const key = JSON.stringify(advice);
    const stale = new Set([...this.advice].filter(([, a]) => a.code === code).map(([k]) => k));
    this.advice = new Map([...[...this.advice].filter(([k]) => !stale.has(k)), [key, advice]]);
    for (const own of this._byCause.values()) {
      own.advice = own.advice.map(k => (stale.has(k) ? key : k));
    }
  }

  /** Put `next` in place of a recorded finding (the kernel's names for a guess's). */
  replaceFinding(previous: LeakFinding, next: LeakFinding): void {
    this.findings = this.findings.map(x => (x === previous ? next : x));
    for (const own of this._byCause.values()) {
      own.findings = own.findings.map(x => (x === previous ? next : x));
    }
  }

  /** The evidence blocks recorded for one cause. */
  blocksOf(cause: LeakCause): readonly Block[] {
    return this._byCause.get(cause)?.blocks ?? [];
  }

  /**
   * Take back a cause the kernel's answer contradicts: its findings, the
   * advice no other cause gave, and the evidence no other cause has.
   */
  retract(cause: LeakCause): void {
    const own = this._byCause.get(cause);
    if (!own) {
      return;
    }
    this._byCause.delete(cause);
    this.causes.delete(cause);
    const others = [...this._byCause.values()];
    this.findings = this.findings.filter(x => !own.findings.includes(x));
    const advised = new Set(others.flatMap(c => c.advice));
    own.advice.filter(k => !advised.has(k)).forEach(k => this.advice.delete(k));
    const kept = new Set(others.flatMap(c => c.blocks));
    this.evidence = this.evidence.filter(b => kept.has(b));
  }

  /** Name a holder (once). */
  hold(holder: IHolder): void {
    if (!this.holders.some(h => h.kind === holder.kind && h.path === holder.path && h.via === holder.via)) {
      this.holders.push(holder);
    }
  }

  /** The evidence, each block once (the same block can come from its own snapshot and from the latest one). */
  uniqueEvidence(): Block[] {
    return [...new Map(this.evidence.map(b => [holderKey(b.device, b.address), b])).values()];
  }

  /** Per evidence block, the execution that freed it, or null while it lives (or lived until a restart). */
  freedAtOf(b: Block): number | null {
    if (!this._freedAt) {
      this._freedAt = new Map();
      this.retention.left.forEach((x, j) =>
        this._freedAt!.set(holderKey(x.device, x.address), this.retention.freedAt[j])
      );
    }
    return this._freedAt.get(holderKey(b.device, b.address)) ?? null;
  }

  verdict(context: Context): IExecutionVerdict {
    const r = this.retention;
    let verdict: LeakVerdict;
    let findings: LeakFinding[];
    if (this.leaking) {
      verdict = this.fixed ? 'fixed' : 'leak';
      findings = this._inCauseOrder(this.findings, (own, x) => own.findings.includes(x));
    } else if (r.aliveBytes > 0) {
      findings = [...(this.cleared ? [this.cleared] : []), ...describeRetained(r.alive, this, context)];
      // Without stacks nothing tells a leak from state meant to stay, unless the kernel named every owner.
      verdict = !this.cleared && findings.some(x => x.code === 'no-stacks') ? 'unknown' : 'retained';
    } else {
      verdict = 'ok';
      findings = [
        r.leftBytes > 0
          ? { code: 'all-freed-later', bytes: r.leftBytes, by: [...r.freedBy.keys()].sort((a, b) => a - b) }
          : { code: 'nothing-left' }
      ];
    }
    // The headline is the evidence: its sites add up to it.
    const leaked = verdict === 'leak' || verdict === 'fixed';
    const blocks = leaked ? this.uniqueEvidence() : [];
    const evidence = groupEvidence(blocks, this.k, context);
    const leakedBytes = evidence.reduce((n, e) => n + e.bytes, 0);
    if (verdict === 'fixed') {
      findings.push({ code: 'fixed', bytes: leakedBytes, by: this.fixed!.by });
    }
    // A leak without stacks still says so: its site is unknown.
    const stackless = total(blocks.filter(b => context.originOf(b, r) === null));
    if (stackless > 0) {
      findings.push({ code: 'no-stacks', bytes: stackless });
    }
    if (leaked) {
      const workspace = total(r.alive.filter(b => context.isWorkspace(b, r.kernel)));
      if (workspace > 0) {
        findings.push({ code: 'workspace', bytes: workspace });
      }
    }
    const byRole = new Map<Role | null, number>();
    for (const b of blocks) {
      const role = this.roles.get(holderKey(b.device, b.address)) ?? null;
      byRole.set(role, (byRole.get(role) ?? 0) + b.size);
    }
    const advised = fixesThatFree(
      byRole,
      this._inCauseOrder([...this.advice], (own, [key]) => own.advice.includes(key)).map(([, a]) => a)
    );
    const fixes: LeakAdvice[] = verdict === 'leak' ? (advised.length ? advised : this._holderFix()) : [];
    if (verdict === 'leak' && stackless > 0) {
      fixes.push({ code: 'record-stacks' });
    }
    return {
      execution: r.execution,
      cellId: this.execution.cellId,
      executionCount: this.execution.executionCount,
      verdict,
      confidence: this._confidence(verdict, leakedBytes, stackless),
      kernel: r.kernel,
      endedByRestart: r.endedByRestart && r.aliveBytes > 0,
      leftBytes: r.leftBytes,
      retainedBytes: r.aliveBytes,
      freedLater: [...r.freedBy].sort((a, b) => a[0] - b[0]).map(([execution, bytes]) => ({ execution, bytes })),
      leakedBytes,
      fixedBy: verdict === 'fixed' ? this.fixed!.by : null,
      causes: leaked ? [...this.causes] : [],
      findings,
      fixes,
      parts: leakParts(byRole, fixes),
      holders: summarizeHolderList(this.holders),
      evidence
    };
  }

  /**
   * Findings or advice in the order their causes should be read (CAUSE_ORDER),
   * the order they were recorded within one cause; those no cause recorded
   * (a role's) after them.
   */
  private _inCauseOrder<T>(items: readonly T[], recorded: (own: ICauseRecord, item: T) => boolean): T[] {
    const rank = (item: T) =>
      Math.min(
        ...[...this._byCause].filter(([, own]) => recorded(own, item)).map(([cause]) => CAUSE_ORDER.indexOf(cause)),
        CAUSE_ORDER.length
      );
    return items
      .map((item, k) => ({ item, k, r: rank(item) }))
      .sort((a, b) => a.r - b.r || a.k - b.k)
      .map(e => e.item);
  }

  /**
   * The fix where no rule named one: what the kernel says keeps the memory
   * (a list, a dict, a module attribute the user can clear), else the
   * general search.
   */
  private _holderFix(): LeakAdvice[] {
    // A module's parameter is dropped with what keeps the module: `model.0.weight` names `model`.
    const kept = [
      ...new Set(
        summarizeHolderList(this.holders.filter(h => CLEARABLE.includes(h.kind))).map(h =>
          h.kind === 'parameter' ? (deletableName(h) ?? h.path) : h.path
        )
      )
    ];
    return kept.length ? [{ code: 'clear-holder', holders: kept }] : [{ code: 'find-holder' }];
  }

  private _confidence(verdict: LeakVerdict, leakedBytes: number, stackless: number): Confidence {
    if (verdict === 'ok') {
      return 'high';
    }
    // Without stacks, which bytes a rule blames is a guess (a re-run that grew by a few KiB blames all
    // it left); only the kernel's holders see the blocks themselves.
    if (verdict === 'unknown' || (stackless > 0 && !this.findings.some(x => x.code === 'kernel-holders-leak'))) {
      return 'low';
    }
    if (verdict === 'leak' || verdict === 'fixed') {
      return confidenceForSize(this.confidence, leakedBytes);
    }
    return this.cleared ? 'high' : 'medium';
  }

  private _freedAt: Map<string, number | null> | null = null;
  /** What each cause recorded (advice by its JSON key), so that a contradicted guess can be taken back. */
  private _byCause = new Map<LeakCause, ICauseRecord>();
}

/** Names the lines that made these blocks store them in, from the execution's own source. */
export function namesFor(blocks: readonly Block[], f: Finding, context: Context): string[] {
  const source = f.execution.source;
  if (source === null) {
    return [];
  }
  const names = new Set<string>();
  const stacks = new Set(blocks.map(b => b.stack));
  for (const stack of stacks) {
    context.storedNamesAt(stack, source).forEach(n => names.add(n));
  }
  return [...names];
}

/** What the live memory is, by what made it, largest first; memory nothing says that of is `no-stacks`. */
function describeRetained(alive: readonly Block[], f: Finding, context: Context): LeakFinding[] {
  const byOrigin = new Map<BlockOrigin | null, Block[]>();
  for (const b of alive) {
    const o = context.originOf(b, f.retention);
    // Pushed, not copied: a cell keeping 40,000 blocks made copying quadratic (16 s).
    const list = byOrigin.get(o);
    if (list) {
      list.push(b);
    } else {
      byOrigin.set(o, [b]);
    }
  }
  return [...byOrigin]
    .map(([origin, blocks]) => ({ origin, blocks, bytes: total(blocks) }))
    .sort((a, b) => b.bytes - a.bytes)
    .map(({ origin, blocks, bytes }) =>
      origin === null
        ? { code: 'no-stacks', bytes }
        : { code: 'retained', bytes, origin, names: origin === 'workspace' ? [] : namesFor(blocks, f, context) }
    );
}

function groupEvidence(blocks: readonly Block[], execution: number, context: Context): ILeakEvidence[] {
  const bySite = new Map<number, { stack: number; largest: number; bytes: number; blocks: number }>();
  for (const b of blocks) {
    const site = context.site(b.stack);
    let e = bySite.get(site);
    if (!e) {
      e = { stack: b.stack, largest: 0, bytes: 0, blocks: 0 };
      bySite.set(site, e);
    }
    if (b.size > e.largest) {
      e.stack = b.stack;
      e.largest = b.size;
    }
    e.bytes += b.size;
    e.blocks++;
  }
  return [...bySite.values()]
    .map(e => ({ stack: e.stack, bytes: e.bytes, blocks: e.blocks, executions: [execution] }))
    .sort((a, b) => b.bytes - a.bytes);
}
