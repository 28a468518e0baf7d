/**
 * The kernel's answer to "who holds these blocks?" (kernel-helpers'
 * holders.py), as it arrives over the comm or sits in a recorded session's
 * `cellNN.holders.json`.
 */
import { SnapshotError } from './errors';
import { HOLDER_KINDS } from './protocol.generated';
import type { HolderKind } from './protocol.generated';

// The kinds of holder the kernel tells apart, generated from the helper's protocol.py.
export type { HolderKind };

const KINDS: ReadonlySet<string> = new Set<HolderKind>(HOLDER_KINDS);

/** What keeps a block alive. */
export interface IHolder {
  readonly kind: HolderKind;
  /** What a user would type to reach it: `preds[3]`, `Out[12]`, `model.0.weight`. */
  readonly path: string;
  /** For hooks: which hook appends to the container. */
  readonly via?: string;
}

/** Holders of live blocks, keyed by `device:address`. */
export type IBlockHolders = ReadonlyMap<string, readonly IHolder[]>;

/** A parsed answer. */
export interface IHolderAnswer {
  readonly holders: IBlockHolders;
  /** True when the kernel ran out of time before looking everywhere. */
  readonly partial: boolean;
  readonly elapsedMs: number;
  /**
   * Set when the kernel replays a recording: it has no live tensors to ask,
   * and `holders` are those recorded after the last cell it replayed (none
   * when the recording kept no holders).
   */
  readonly replay: string | null;
  /** The kernel's error, when the request failed there. */
  readonly error: string | null;
}

/** The key of a block in `IBlockHolders`. */
export function holderKey(device: number, address: number): string {
  return `${device}:${address}`;
}

/** Validate and index an answer; throws SnapshotError naming what is wrong. */
export function parseHolderAnswer(value: unknown): IHolderAnswer {
  const answer = value as {
    blocks?: unknown;
    partial?: unknown;
    elapsed_ms?: unknown;
    replay?: unknown;
    error?: unknown;
  };
  if (typeof answer !== 'object' || answer === null || !Array.isArray(answer.blocks)) {
    throw new SnapshotError("holders: no 'blocks' list");
  }
  const holders = new Map<string, IHolder[]>();
  answer.blocks.forEach((b: { device?: unknown; address?: unknown; holders?: unknown }, i: number) => {
    if (!Number.isInteger(b?.device) || !Number.isInteger(b?.address) || !Array.isArray(b?.holders)) {
      throw new SnapshotError(`holders: blocks[${i}] needs an integer device and address and a holders list`);
    }
    const list = (b.holders as { kind?: unknown; path?: unknown; via?: unknown }[]).map((h, j) => {
      if (typeof h?.kind !== 'string' || !KINDS.has(h.kind) || typeof h.path !== 'string') {
        throw new SnapshotError(`holders: blocks[${i}].holders[${j}] has no known kind and path`);
      }
      return typeof h.via === 'string'
        ? { kind: h.kind as HolderKind, path: h.path, via: h.via }
        : { kind: h.kind as HolderKind, path: h.path };
    });
    holders.set(holderKey(b.device as number, b.address as number), list);
  });
  return {
    holders,
    partial: answer.partial === true,
    elapsedMs: typeof answer.elapsed_ms === 'number' ? answer.elapsed_ms : 0,
    replay: typeof answer.replay === 'string' ? answer.replay : null,
    error: typeof answer.error === 'string' ? answer.error : null
  };
}

/**
 * Shorten holder names for people: `preds[0]` ... `preds[7]` become
 * `preds[0:8]` (or `preds[…] (5 items)` when not contiguous); order is kept.
 */
export function summarizeHolders(names: readonly string[]): string[] {
  const groups = new Map<string, { prefix: string; suffix: string; indices: number[] }>();
  const order: string[] = [];
  for (const name of new Set(names)) {
    const m = /^(.*)\[(\d+)\]([^[\]]*)$/.exec(name);
    const key = m ? `${m[1]}\u0000${m[3]}` : name;
    if (!groups.has(key)) {
      groups.set(key, { prefix: m ? m[1] : name, suffix: m ? m[3] : '', indices: [] });
      order.push(key);
    }
    if (m) {
      groups.get(key)!.indices.push(Number(m[2]));
    }
  }
  return order.map(key => {
    const { prefix, suffix, indices } = groups.get(key)!;
    if (indices.length === 0) {
      return prefix;
    }
    if (indices.length === 1) {
      return `${prefix}[${indices[0]}]${suffix}`;
    }
    const sorted = [...indices].sort((a, b) => a - b);
    const contiguous = sorted.every((v, i) => v === sorted[0] + i);
    return contiguous
      ? `${prefix}[${sorted[0]}:${sorted[sorted.length - 1] + 1}]${suffix}`
      : `${prefix}[\u2026]${suffix} (${sorted.length} items)`;
  });
}

/**
 * Holders with runs of indices folded (`summarizeHolders` on the paths of
 * each kind), each once, in the order first seen. The output history's are
 * not folded: each is an entry of its own (`Out` is a dict, `_2` a name), and
 * a fix names them to `del`.
 */
export function summarizeHolderList(holders: readonly IHolder[]): IHolder[] {
  const groups = new Map<string, { kind: HolderKind; via?: string; paths: string[] }>();
  for (const h of holders) {
    const key = `${h.kind}\u0000${h.via ?? ''}`;
    let group = groups.get(key);
    if (!group) {
      group = h.via === undefined ? { kind: h.kind, paths: [] } : { kind: h.kind, via: h.via, paths: [] };
      groups.set(key, group);
    }
    group.paths.push(h.path);
  }
  return [...groups.values()].flatMap(g =>
    (g.kind === 'output-cache' ? [...new Set(g.paths)] : summarizeHolders(g.paths)).map(path =>
      g.via === undefined ? { kind: g.kind, path } : { kind: g.kind, path, via: g.via }
    )
  );
}

/** How a `hidden` holder keeps memory: what kind of object keeps a reference no variable shows. */
export type HiddenReference = 'default-argument' | 'closure' | 'generator' | 'lru-cache' | 'partial';

/** A `hidden` holder read from its path: what keeps the memory (`ref`, null when the path says not) and its owner. */
export interface IHiddenHolder {
  readonly ref: HiddenReference | null;
  /** What a user would type to reach the owner: the function, generator or partial (`score`, `callbacks[0]`). */
  readonly owner: string;
}

// The paths the kernel's walk gives `hidden` holders (walk.py), each possibly extended by container steps.
const HIDDEN_PATHS: readonly (readonly [HiddenReference, RegExp])[] = [
  ['default-argument', /^(.+?)\.__(?:kw)?defaults__\[/],
  ['closure', /^(.+?): closure variable (.+)$/],
  ['generator', /^(.+?): generator frame local (.+)$/],
  ['lru-cache', /^(.+?): lru_cache entry/],
  ['partial', /^(.+?)\.(?:args|keywords)\[/]
];

/** What a `hidden` holder's path says keeps the memory, and whose reference it is. */
export function hiddenHolder(path: string): IHiddenHolder {
  for (const [ref, pattern] of HIDDEN_PATHS) {
    const m = pattern.exec(path);
    if (m) {
      return { ref, owner: m[1] };
    }
  }
  return { ref: null, owner: path };
}

/**
 * Where inside their owner hidden references keep memory, as a fix names it
 * beside the owner: a closure's or a paused generator's variable (`ref`,
 * `batch[2]`), the whole path for a default argument or a partial's
 * argument (`score.__defaults__[0]`, which says more than the owner), and
 * nothing for an lru_cache's entries (the cache is the place).
 */
export function hiddenPlaces(ref: HiddenReference | null, paths: readonly string[]): string[] {
  if (ref === 'lru-cache') {
    return [];
  }
  // Only the closure's and the generator's patterns catch a place after the owner; the rest keep the path.
  const pattern = HIDDEN_PATHS.find(([r]) => r === ref)?.[1];
  return [...new Set(paths.map(p => pattern?.exec(p)?.[2] ?? p))];
}

// A path through an exception's traceback (`err.__traceback__: train_step() local h`), and through the last one.
const EXCEPTION_TRACEBACK = /^(.+?)\.__traceback__\b/;
const LAST_TRACEBACK = /^sys\.last_(traceback|value|exc)\b/;

/** Whether a path goes through a traceback: a kept exception's (`err.__traceback__: …`) or the last one. */
export function tracebackPath(path: string): boolean {
  return LAST_TRACEBACK.test(path) || EXCEPTION_TRACEBACK.test(path);
}

/** The variable naming a kept exception whose traceback a `traceback` holder goes through (`err`), or null (`sys.last_traceback`). */
export function exceptionHolder(path: string): string | null {
  const m = EXCEPTION_TRACEBACK.exec(path);
  return m && !m[1].startsWith('sys.') ? m[1] : null;
}
