/**
 * The kernel's answer to "who holds these blocks?" (kernel-helpers'
 * holders.py), as it arrives over the comm or sits in a recorded session's
 * `cellNN.holders.json`.
 */
import { MAX_EXACT, PAST_EXACT } from './consistency';
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
  /**
   * A closure's or a paused generator's variable, with the steps into it
   * (`ref`, `batch[2]`), or a running thread's function and its local (`train() local h`).
   */
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
  /**
   * Set on the last holder the kernel listed for a block it found more
   * holders of (`more`: it said so), or may have (`cap`: a helper from
   * before it said so listed OLDER_HELPER_HOLDERS and stopped): the words
   * then say `and more` / `and maybe more`.
   */
  readonly cut?: HolderCut;
}

/** Why a block's list of holders may be incomplete (see IHolder.cut). */
export type HolderCut = 'more' | 'cap';

/**
 * Holders a helper listed per block before rows said `more`: a row of that
 * many without `more` may have been cut (holders.py SAYS_MORE_FROM).
 */
export const OLDER_HELPER_HOLDERS = 4;

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
  answer.blocks.forEach((b: { device?: unknown; address?: unknown; holders?: unknown; more?: unknown }, i: number) => {
    if (!Number.isInteger(b?.device) || !Number.isInteger(b?.address) || !Array.isArray(b?.holders)) {
      throw new SnapshotError(`holders: blocks[${i}] needs an integer device and address and a holders list`);
    }
    // JSON.parse has rounded a larger one: it may now be another block's address.
    for (const field of ['device', 'address'] as const) {
      if (Math.abs(b[field] as number) > MAX_EXACT) {
        throw new SnapshotError(`holders: blocks[${i}] ${field} is out of range: ${PAST_EXACT}`);
      }
    }
    if (b.more !== undefined && typeof b.more !== 'boolean') {
      throw new SnapshotError(`holders: blocks[${i}] more must be true or false`);
    }
    const list = (b.holders as { kind?: unknown; path?: unknown; via?: unknown; reference?: unknown }[]).map(
      (h, j): IHolder => {
        if (typeof h?.kind !== 'string' || !KINDS.has(h.kind) || typeof h.path !== 'string') {
          throw new SnapshotError(`holders: blocks[${i}].holders[${j}] has no known kind and path`);
        }
        const reference = h.reference === undefined ? undefined : parseReference(h.reference);
        if (reference === null) {
          throw new SnapshotError(
            `holders: blocks[${i}].holders[${j}] has a reference that is not one (a known type, its name, whole counts)`
          );
        }
        return {
          kind: h.kind as HolderKind,
          path: h.path,
          ...(typeof h.via === 'string' ? { via: h.via } : {}),
          ...(reference ? { reference } : {})
        };
      }
    );
    // The kernel lists a block's holders up to a limit: where it found more, or an older helper may have, say so.
    const cut: HolderCut | null =
      b.more === true ? 'more' : b.more === undefined && list.length === OLDER_HELPER_HOLDERS ? 'cap' : null;
    if (cut) {
      list[list.length - 1] = { ...list[list.length - 1], cut };
    }
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
 * An answer as the kernel sends it and `cellNN.holders.json` keeps it (the
 * inverse of parseHolderAnswer): what the panel's export writes for a cell
 * the kernel was asked about, so the CLI reads the holders the panel had.
 */
export function holderAnswerJson(holders: IBlockHolders, partial: boolean) {
  return {
    blocks: [...holders].map(([key, list]) => {
      const [device, address] = key.split(':').map(Number);
      const cut = list[list.length - 1]?.cut;
      // `more` as the kernel said it; a list an older helper may have cut is written as it wrote it, without.
      const more = cut === 'more' ? true : !cut && list.length >= OLDER_HELPER_HOLDERS ? false : undefined;
      return {
        device,
        address,
        holders: list.map(({ cut: _, ...h }) => h),
        ...(more === undefined ? {} : { more })
      };
    }),
    partial
  };
}

/**
 * A holder's reference with the fields the protocol gives, each of its type
 * (`count` a whole number, `displays` 1 to 3); null when it is not one. Every
 * type but `last-traceback` names what it is.
 */
function parseReference(value: unknown): IHolderReference | null {
  const r = value as Record<string, unknown>;
  if (typeof r !== 'object' || r === null || typeof r.type !== 'string' || !REFERENCES.has(r.type)) {
    return null;
  }
  const wrong =
    (r.type === 'last-traceback' ? r.name !== undefined && typeof r.name !== 'string' : typeof r.name !== 'string') ||
    (r.place !== undefined && typeof r.place !== 'string') ||
    (r.count !== undefined && !(Number.isInteger(r.count) && (r.count as number) >= 0)) ||
    (r.displays !== undefined && ![1, 2, 3].includes(r.displays as number));
  if (wrong) {
    return null;
  }
  const { type, name, count, displays, place } = r as Partial<Record<string, unknown>>;
  return {
    type: type as HolderReferenceType,
    ...(name === undefined ? {} : { name: name as string }),
    ...(count === undefined ? {} : { count: count as number }),
    ...(displays === undefined ? {} : { displays: displays as number }),
    ...(place === undefined ? {} : { place: place as string })
  };
}

/**
 * Shorten holder names for people: `preds[0]` ... `preds[7]` become
 * `preds[0:8]` (or `preds[…] (5 items)` when not contiguous); order is kept.
 * With `typed`, names a fix tells the user to type: runs Python reads (`foldNames`).
 */
export function summarizeHolders(names: readonly string[], typed = false): string[] {
  return foldNames(names, name => name, typed).map(g => g.label);
}

/**
 * Items grouped by their names with the last index taken out, each group
 * labelled as `summarizeHolders` labels it, in the order first seen. With
 * `typed` (names a fix tells the user to type), a group is split into runs
 * of contiguous indices instead (`errs[0:2]`, `errs[5]`): each label is a
 * name Python reads.
 */
export function foldNames<T>(
  items: readonly T[],
  nameOf: (item: T) => string,
  typed = false
): { label: string; items: T[] }[] {
  const groups = new Map<string, { prefix: string; suffix: string; indexed: [number, T][]; plain: T[] }>();
  for (const item of items) {
    const name = nameOf(item);
    const m = /^(.*)\[(\d+)\]([^[\]]*)$/.exec(name);
    const key = m ? `${m[1]}\u0000${m[3]}` : `\u0001${name}`;
    const group = groups.get(key) ?? { prefix: m ? m[1] : name, suffix: m ? m[3] : '', indexed: [], plain: [] };
    if (m) {
      group.indexed.push([Number(m[2]), item]);
    } else {
      group.plain.push(item);
    }
    groups.set(key, group);
  }
  return [...groups.values()].flatMap(({ prefix, suffix, indexed, plain }) => {
    if (!indexed.length) {
      return [{ label: prefix, items: plain }];
    }
    const runs = typed ? contiguousRuns(indexed.map(([k]) => k)) : [[...new Set(indexed.map(([k]) => k))]];
    return runs.map(run => ({
      label: label(prefix, suffix, run),
      items: indexed.filter(([k]) => run.includes(k)).map(([, item]) => item)
    }));
  });
}

/** The distinct indices, ascending, in runs of consecutive ones. */
function contiguousRuns(indices: readonly number[]): number[][] {
  const runs: number[][] = [];
  for (const k of [...new Set(indices)].sort((a, b) => a - b)) {
    const run = runs[runs.length - 1];
    if (run && run[run.length - 1] === k - 1) {
      run.push(k);
    } else {
      runs.push([k]);
    }
  }
  return runs;
}

function label(prefix: string, suffix: string, indices: readonly number[]): string {
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
  // Grouped by what they are (kind, hook, type of reference), then folded by path.
  const groups = new Map<string, IHolder[]>();
  for (const h of holders) {
    const key = `${h.kind}\u0000${h.via ?? ''}\u0000${h.reference?.type ?? ''}`;
    groups.set(key, [...(groups.get(key) ?? []), h]);
  }
  return [...groups.values()].flatMap(group => {
    const first = group[0];
    if (
      first.kind === 'output-cache' ||
      first.reference?.type === 'output' ||
      first.reference?.type === 'output-name'
    ) {
      return [...new Map(group.map(h => [h.path, h])).values()]; // each entry of the history is its own name
    }
    return foldNames(group, h => h.path).map(({ label, items }) =>
      items.length === 1 ? items[0] : { ...items[0], path: label, ...foldedReference(items), ...foldedCut(items) }
    );
  });
}

// A Python name, then attributes (`.cache`) and a module's numbered children (`.0`, which Python writes `[0]`).
const NAME = /^[\p{ID_Start}_][\p{ID_Continue}]*/u;
const PART = /^\.(?:([\p{ID_Start}_][\p{ID_Continue}]*)|(\d+))(?=$|[.[])/u;

/**
 * What to `del` to drop a holder, in Python: the name and attributes its path
 * starts with, up to an index or its end (`preds[3]` → `preds`,
 * `model.cache[4:8]` → `model.cache`, `model.layers.0.cache` →
 * `model.layers[0].cache`); the variable alone where the path goes on into
 * words (`opt.param_groups (512, 512)` → `opt`). A parameter or buffer is
 * dropped with the module that holds it, never alone from a module that needs
 * it: `model.head2.weight` → `model.head2`, `model.3.weight` → `model[3]`,
 * `heads[1].0.weight` → `heads`; one registered on the variable's own module
 * is its own attribute (`model.weight_at_run2`). Null where the path starts
 * with no name.
 */
export function deletableName(holder: Pick<IHolder, 'kind' | 'path'>): string | null {
  const { path } = holder;
  const name = NAME.exec(path)?.[0];
  if (!name) {
    return null;
  }
  const parts: string[] = [];
  let rest = path.slice(name.length);
  for (let part = PART.exec(rest); part; part = PART.exec(rest)) {
    parts.push(part[1] !== undefined ? `.${part[1]}` : `[${part[2]}]`);
    rest = rest.slice(part[0].length);
  }
  if (rest !== '' && !(rest.startsWith('[') && holder.kind !== 'parameter')) {
    return name;
  }
  const kept = holder.kind === 'parameter' && parts.length > 1 ? parts.slice(0, -1) : parts;
  return name + kept.join('');
}

/** Whether holders folded into one were cut: `more` where the kernel said so of one, else `cap` where it may have. */
function foldedCut(items: readonly IHolder[]): { cut?: HolderCut } {
  const cuts = items.map(h => h.cut);
  return cuts.includes('more') ? { cut: 'more' } : cuts.includes('cap') ? { cut: 'cap' } : {};
}

/**
 * The reference of holders folded into one: the one they share; else, where
 * only their names differ and fold into one (`cbs[0]` ... `cbs[2]`), that
 * reference with the folded name; else only its type.
 */
function foldedReference(items: readonly IHolder[]): { reference?: IHolderReference } {
  const first = items[0].reference;
  if (!first) {
    return {};
  }
  const rest = ({ name, ...others }: IHolderReference) => JSON.stringify(others);
  const refs = items.map(h => h.reference);
  if (refs.every(r => r && JSON.stringify(r) === JSON.stringify(first))) {
    return { reference: first };
  }
  if (refs.every(r => r && rest(r) === rest(first) && r.name !== undefined)) {
    const names = foldNames(refs, r => r!.name!);
    if (names.length === 1) {
      return { reference: { ...first, name: names[0].label } };
    }
  }
  return { reference: { type: first.type } };
}

/** How a `hidden` holder keeps memory: what kind of object keeps a reference no variable shows. */
const HIDDEN_REFERENCES = [
  'default-argument',
  'closure',
  'generator',
  'lru-cache',
  'partial',
  'thread'
] as const satisfies readonly HolderReferenceType[];
export type HiddenReference = (typeof HIDDEN_REFERENCES)[number];

const HIDDEN: ReadonlySet<HolderReferenceType> = new Set(HIDDEN_REFERENCES);

/** A `hidden` holder: what keeps the memory (`ref`, null when the kernel did not say) and its owner. */
export interface IHiddenHolder {
  readonly ref: HiddenReference | null;
  /**
   * What a user would type to reach the owner: the function, generator or
   * partial (`score`, `callbacks[0]`); a running thread's name (`Thread-1 (train)`).
   */
  readonly owner: string;
  /**
   * Where inside the owner, as a fix names it beside the owner: a closure's
   * or a paused generator's variable (`ref`, `batch[2]`), a running
   * thread's function and its local (`train() local h`), the whole path for
   * a default argument or a partial's argument (`score.__defaults__[0]`,
   * which says more than the owner), and nothing for an lru_cache's entries
   * (the cache is the place).
   */
  readonly place: string | null;
}

/** What keeps a `hidden` holder's memory, and whose reference it is, as its reference says. */
export function hiddenHolder(holder: IHolder): IHiddenHolder {
  const r = holder.reference;
  if (!r || !HIDDEN.has(r.type)) {
    return { ref: null, owner: holder.path, place: holder.path };
  }
  const place = r.type === 'lru-cache' ? null : (r.place ?? holder.path);
  return { ref: r.type as HiddenReference, owner: r.name ?? holder.path, place };
}

/** Whether a holder's path goes through a traceback: a kept exception's (`err.__traceback__: …`) or the last one. */
export function throughTraceback(holder: IHolder): boolean {
  return holder.reference?.type === 'exception' || holder.reference?.type === 'last-traceback';
}

/** The variable naming a kept exception whose traceback a holder goes through (`err`), or null. */
export function exceptionHolder(holder: IHolder): string | null {
  return holder.reference?.type === 'exception' ? (holder.reference.name ?? null) : null;
}
