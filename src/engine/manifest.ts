/**
 * A session folder's manifest.json, read by the one rule both languages
 * share: kernel-helpers/cuda_memdiff_kernel/manifest_fields.json, embedded by
 * scripts/embed-helper.js. The table lists the fields, what null and absence
 * mean and the words of each refusal; this module only says what each kind of
 * value is, as the helper's manifest.py does, so the CLI, the panel and the
 * replay kernel take and refuse the same files with the same words.
 */
import { SnapshotError } from './errors';
import { MANIFEST_FIELDS } from './manifest.generated';
import { ROLES } from './protocol.generated';

/** The vocabulary of manifest_fields.json (its `$comment` says what each key means). */
export namespace ManifestFields {
  /** What kind of value a field takes. */
  export type Kind = 'name' | 'text' | 'integer' | 'whole' | 'number' | 'flag' | 'lines' | 'list' | 'object' | 'role';

  /** How one field (or one item of a list) is read. */
  export interface IRule {
    readonly kind: Kind;
    readonly words?: string;
    readonly items?: IRule;
    readonly shape?: string;
    readonly keys?: IRule;
    readonly each?: IRule;
    readonly required?: boolean;
    readonly nullable?: boolean;
    readonly emptyIsAbsent?: boolean;
    readonly default?: string | null;
    readonly defaultIsPosition?: boolean;
    readonly unique?: string;
  }

  /** The whole table. */
  export interface ITable {
    readonly file: string;
    readonly refusals: { readonly notJson: string; readonly tooDeep: string; readonly missing: string };
    readonly values: {
      readonly list: string;
      readonly object: string;
      readonly huge: string;
      readonly tiny: string;
      readonly quoteLength: number;
    };
    readonly kinds: { readonly [kind in Kind]: string };
    readonly manifest: IRule;
    readonly shapes: { readonly [shape: string]: { readonly [field: string]: IRule } };
  }
}

/** The table; assigning it here has the compiler check it against the vocabulary. */
const FIELDS: ManifestFields.ITable = MANIFEST_FIELDS;

/** True for a file name inside the session folder: text, relative (no drive), no `..` part, no NUL. */
export function insideFolder(name: unknown): boolean {
  return (
    typeof name === 'string' &&
    name !== '' &&
    !name.includes('\0') &&
    !/^[\\/]/.test(name) &&
    !/^[A-Za-z]:/.test(name) &&
    !name.split(/[\\/]/).includes('..')
  );
}

/**
 * The manifest in `text`, checked and read by the rule: nbformat's source
 * lines joined, defaults filled in, null read as absent where the rule says
 * so. A SnapshotError of one line that starts with the file's name says why
 * one is refused.
 */
export function readManifest(text: string): unknown {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (reason) {
    throw new SnapshotError(`${FIELDS.file} ${FIELDS.refusals.notJson} (${(reason as Error).message})`);
  }
  try {
    return Private.read(raw, FIELDS.manifest, FIELDS.file, 0, new Map());
  } catch (reason) {
    // Only per_device lists nested in per_device recurse: thousands deep, the stack runs out.
    if (reason instanceof RangeError) {
      throw new SnapshotError(`${FIELDS.file} ${FIELDS.refusals.tooDeep}`);
    }
    throw reason;
  }
}

/**
 * A part of a manifest that a kernel message carries too (a cell's `roles`,
 * the table's shape `roles`), read by its shape; refusals start with `where`.
 */
export function readManifestPart(value: unknown, shape: string, where: string): unknown {
  return Private.read(value, { kind: 'object', shape }, where, 0, new Map());
}

/** A value from the file as a refusal quotes it, in the same words the helper's `quoted_value` gives. */
export function quotedValue(value: unknown): string {
  const { values } = FIELDS;
  if (value === null || typeof value === 'boolean') {
    return String(value);
  }
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) {
      return String(value);
    }
    if (Math.abs(value) > Number.MAX_SAFE_INTEGER) {
      return values.huge;
    }
    // From 1e-4 to 2^53 JavaScript and Python print a fraction's shortest digits alike, without an exponent.
    return Math.abs(value) >= 1e-4 ? String(value) : values.tiny;
  }
  if (typeof value === 'string') {
    // Code points, as Python counts them; those UTF-16 and Python would count apart, or that do not print, read as '?'.
    const points = Array.from(value);
    const kept = points.slice(0, values.quoteLength).map(Private.quoted).join('');
    return `"${kept}"${points.length > values.quoteLength ? '…' : ''}`;
  }
  return Array.isArray(value) ? values.list : values.object;
}

namespace Private {
  type Fields = Record<string, unknown>;
  /** Per unique field, the place of the item that has each value first. */
  type Seen = Map<string, Map<unknown, number>>;

  /** Whether a value is of the kind (`lines` and the numbers are read on in `read`). */
  const IS: { readonly [kind in ManifestFields.Kind]: (value: unknown) => boolean } = {
    name: insideFolder,
    text: v => typeof v === 'string',
    integer: v => Number.isSafeInteger(v),
    whole: v => Number.isSafeInteger(v) && (v as number) >= 0,
    number: v => typeof v === 'number' && Number.isFinite(v),
    flag: v => typeof v === 'boolean',
    lines: v => typeof v === 'string' || (Array.isArray(v) && v.every(line => typeof line === 'string')),
    list: v => Array.isArray(v),
    object: v => typeof v === 'object' && v !== null && !Array.isArray(v),
    role: v => typeof v === 'string' && (ROLES as readonly string[]).includes(v)
  };

  /** `value` read by `rule` at `where` (its place in its list: `position`). */
  export function read(
    value: unknown,
    rule: ManifestFields.IRule,
    where: string,
    position: number,
    seen: Seen
  ): unknown {
    if (!IS[rule.kind](value)) {
      throw new SnapshotError(`${where} ${rule.words ?? FIELDS.kinds[rule.kind]}, not ${quotedValue(value)}`);
    }
    if (rule.kind === 'lines' && Array.isArray(value)) {
      return value.join(''); // nbformat's list of lines
    }
    if (rule.kind === 'list') {
      const list = value as unknown[];
      list.forEach((item, k) => (list[k] = read(item, rule.items!, `${where}[${k}]`, k, seen)));
    } else if (rule.kind === 'object' && rule.shape !== undefined) {
      readFields(value as Fields, FIELDS.shapes[rule.shape], where, position, seen);
    } else if (rule.kind === 'object') {
      readEntries(value as Fields, rule, where, position, seen);
    }
    return value;
  }

  /** An object of any keys (a cell's bytes per role): each key by `keys`, each value by `each`. */
  function readEntries(object: Fields, rule: ManifestFields.IRule, where: string, position: number, seen: Seen): void {
    // Object.keys lists array indices first, ascending: the order manifest.py takes them in too.
    for (const key of Object.keys(object)) {
      if (rule.keys !== undefined) {
        read(key, rule.keys, where, position, seen);
      }
      object[key] = read(object[key], rule.each!, `${where} ${key}`, position, seen);
    }
  }

  function readFields(
    object: Fields,
    shape: { readonly [field: string]: ManifestFields.IRule },
    where: string,
    position: number,
    seen: Seen
  ): void {
    for (const [field, rule] of Object.entries(shape)) {
      if (absent(object, field, rule)) {
        delete object[field];
        if (rule.required) {
          throw new SnapshotError(`${where} ${FIELDS.refusals.missing} ${field}`);
        }
        if (rule.defaultIsPosition) {
          object[field] = position;
        } else if (rule.default !== undefined) {
          object[field] = rule.default;
        }
        continue;
      }
      const value = object[field];
      if (value === null) {
        continue; // null, where it is a value
      }
      const taken = read(value, rule, `${where} ${field}`, position, seen);
      object[field] = taken;
      if (rule.unique !== undefined) {
        const firsts = seen.get(field) ?? new Map<unknown, number>();
        seen.set(field, firsts);
        const first = firsts.get(taken) ?? position;
        firsts.set(taken, first);
        if (first !== position) {
          throw new SnapshotError(
            `${where} ${field} ${quotedValue(taken)} ${rule.unique.replace('{first}', String(first))}`
          );
        }
      }
    }
  }

  /** The field is not given: missing, null where null is no value, or '' where that names nothing. */
  function absent(object: Fields, field: string, rule: ManifestFields.IRule): boolean {
    const value = object[field];
    return (
      !Object.prototype.hasOwnProperty.call(object, field) ||
      (value === null && !rule.nullable) ||
      (value === '' && rule.emptyIsAbsent === true)
    );
  }

  /** One character of a quoted value: one that prints, counted alike in both languages, else '?'. */
  export function quoted(c: string): string {
    const code = c.codePointAt(0)!;
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || (code >= 0xd800 && code < 0xe000) || code > 0xffff) {
      return '?';
    }
    return c === '"' || c === '\\' ? `\\${c}` : c;
  }
}
