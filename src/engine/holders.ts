/**
 * The kernel's answer to "who holds these blocks?" (kernel-helpers'
 * holders.py), as it arrives over the comm or sits in a recorded session's
 * `cellNN.holders.json`.
 */
import { SnapshotError } from './errors';
import { HOLDER_KINDS, HOLDER_REFERENCES } from './protocol.generated';
import type { HolderKind, HolderReferenceType } from './protocol.generated';

// The kinds of holder the kernel tells apart, and of what no variable shows, generated from the helper's protocol.py.
export type { HolderKind, HolderReferenceType };

const KINDS: ReadonlySet<string> = new Set<HolderKind>(HOLDER_KINDS);
const REFERENCES: ReadonlySet<string> = new Set<HolderReferenceType>(HOLDER_REFERENCES);

/**
 * What no variable shows at the start of a holder's path, as the kernel's
 * walk says it (walk.Reference): the frontend reads what keeps the memory
 * from this, never from the path's words.
 */
export interface IHolderReference {
  readonly type: HolderReferenceType;
  /** What a user types to reach it: `Out[2]`, `_2`, `err`, the function `score`. */
  readonly name?: string;
  /** An output's execution count (`Out[2]`, `_2`). */
  readonly count?: number;
  /** How many more displayed results until `_` (3), `__` (2) or `___` (1) lets go of it. */
  readonly displays?: number;
  /** A closure's or a paused generator's variable, with the steps into it (`ref`, `batch[2]`). */
  readonly place?: string;
}

/** What keeps a block alive. */
export interface IHolder {
  readonly kind: HolderKind;
  /** What a user would type to reach it: `preds[3]`, `Out[12]`, `model.0.weight`. */
  readonly path: string;
  /** For hooks: which hook appends to the container. */
  readonly via?: string;
  /** Where the path starts at something no variable shows (an output, a kept exception, a closure). */
  readonly reference?: IHolderReference;
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
    const list = (b.holders as { kind?: unknown; path?: unknown; via?: unknown; reference?: unknown }[]).map(
      (h, j): IHolder => {
        if (typeof h?.kind !== 'string' || !KINDS.has(h.kind) || typeof h.path !== 'string') {
          throw new SnapshotError(`holders: blocks[${i}].holders[${j}] has no known kind and path`);
        }
        const reference = h.reference === undefined ? undefined : parseReference(h.reference);
        if (reference === null) {
          throw new SnapshotError(`holders: blocks[${i}].holders[${j}] has a reference of no known type`);
        }
        return {
          kind: h.kind as HolderKind,
          path: h.path,
          ...(typeof h.via === 'string' ? { via: h.via } : {}),
          ...(reference ? { reference } : {})
        };
      }
    );
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

/** A holder's reference with only the fields the protocol gives, each of its type; null when it is none. */
function parseReference(value: unknown): IHolderReference | null {
  const r = value as Record<string, unknown>;
  if (typeof r !== 'object' || r === null || typeof r.type !== 'string' || !REFERENCES.has(r.type)) {
    return null;
  }
  const text = (key: 'name' | 'place') => (typeof r[key] === 'string' ? { [key]: r[key] as string } : {});
  const whole = (key: 'count' | 'displays') => (Number.isInteger(r[key]) ? { [key]: r[key] as number } : {});
  return {
    type: r.type as HolderReferenceType,
    ...text('name'),
    ...whole('count'),
    ...whole('displays'),
    ...text('place')
  };
}

/**
 * Shorten holder names for people: `preds[0]` ... `preds[7]` become
 * `preds[0:8]` (or `preds[…] (5 items)` when not contiguous); order is kept.
 */
export function summarizeHolders(names: readonly string[]): string[] {
  return foldNames(names, name => name).map(g => g.label);
}

/**
 * Items grouped by their names with the last index taken out, each group
 * labelled as `summarizeHolders` labels it; in the order first seen.
 */
export function foldNames<T>(items: readonly T[], nameOf: (item: T) => string): { label: string; items: T[] }[] {
  const groups = new Map<string, { prefix: string; suffix: string; indices: Set<number>; items: T[] }>();
  for (const item of items) {
    const name = nameOf(item);
    const m = /^(.*)\[(\d+)\]([^[\]]*)$/.exec(name);
    const key = m ? `${m[1]}\u0000${m[3]}` : `\u0001${name}`;
    const group = groups.get(key) ?? { prefix: m ? m[1] : name, suffix: m ? m[3] : '', indices: new Set(), items: [] };
    if (m) {
      group.indices.add(Number(m[2]));
    }
    group.items.push(item);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ prefix, suffix, indices, items }) => ({
    label: label(prefix, suffix, indices),
    items
  }));
}

function label(prefix: string, suffix: string, indices: ReadonlySet<number>): string {
  if (indices.size === 0) {
    return prefix;
  }
  const sorted = [...indices].sort((a, b) => a - b);
  if (sorted.length === 1) {
    return `${prefix}[${sorted[0]}]${suffix}`;
  }
  const contiguous = sorted.every((v, i) => v === sorted[0] + i);
  return contiguous
    ? `${prefix}[${sorted[0]}:${sorted[sorted.length - 1] + 1}]${suffix}`
    : `${prefix}[\u2026]${suffix} (${sorted.length} items)`;
}

/**
 * Holders with runs of indices folded (`summarizeHolders` on the paths of
 * each kind), each once, in the order first seen. The output history's are
 * not folded: each is an entry of its own (`Out` is a dict, `_2` a name), and
 * a fix names them to `del`.
 */
export function summarizeHolderList(holders: readonly IHolder[]): IHolder[] {
  // Grouped by what they are (kind, hook, type of reference); a folded group keeps the reference its
  // holders share, or only its type.
  const groups = new Map<string, { first: IHolder; same: boolean; paths: string[] }>();
  for (const h of holders) {
    const key = `${h.kind}\u0000${h.via ?? ''}\u0000${h.reference?.type ?? ''}`;
    const group = groups.get(key);
    if (group) {
      group.paths.push(h.path);
      group.same &&= JSON.stringify(h.reference) === JSON.stringify(group.first.reference);
    } else {
      groups.set(key, { first: h, same: true, paths: [h.path] });
    }
  }
  return [...groups.values()].flatMap(({ first, same, paths }) => {
    const folded = first.kind === 'output-cache' ? [...new Set(paths)] : summarizeHolders(paths);
    const shared = first.reference && !same ? { reference: { type: first.reference.type } } : {};
    return folded.map(path =>
      folded.length === 1 && paths.length === 1 ? first : { ...first, path, ...(same ? {} : shared) }
    );
  });
}

/** How a `hidden` holder keeps memory: what kind of object keeps a reference no variable shows. */
export type HiddenReference = Extract<
  HolderReferenceType,
  'default-argument' | 'closure' | 'generator' | 'lru-cache' | 'partial'
>;

const HIDDEN: ReadonlySet<HolderReferenceType> = new Set<HiddenReference>([
  'default-argument',
  'closure',
  'generator',
  'lru-cache',
  'partial'
]);

/** A `hidden` holder: what keeps the memory (`ref`, null when the kernel did not say) and its owner. */
export interface IHiddenHolder {
  readonly ref: HiddenReference | null;
  /** What a user would type to reach the owner: the function, generator or partial (`score`, `callbacks[0]`). */
  readonly owner: string;
  /**
   * Where inside the owner, as a fix names it beside the owner: a closure's
   * or a paused generator's variable (`ref`, `batch[2]`), the whole path for
   * a default argument or a partial's argument (`score.__defaults__[0]`,
   * which says more than the owner), and nothing for an lru_cache's entries
   * (the cache is the place).
   */
  readonly place: string | null;
}

/** What keeps a `hidden` holder's memory, and whose reference it is, as its reference says. */
export function hiddenHolder(holder: IHolder): IHiddenHolder {
  const r = holder.reference;
  if (!r || !HIDDEN.has(r.type) || r.name === undefined) {
    return { ref: null, owner: holder.path, place: holder.path };
  }
  const place = r.type === 'lru-cache' ? null : (r.place ?? holder.path);
  return { ref: r.type as HiddenReference, owner: r.name, place };
}

/** Whether a holder's path goes through a traceback: a kept exception's (`err.__traceback__: …`) or the last one. */
export function throughTraceback(holder: IHolder): boolean {
  return holder.reference?.type === 'exception' || holder.reference?.type === 'last-traceback';
}

/** The variable naming a kept exception whose traceback a holder goes through (`err`), or null. */
export function exceptionHolder(holder: IHolder): string | null {
  return holder.reference?.type === 'exception' ? (holder.reference.name ?? null) : null;
}
