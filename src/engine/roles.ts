/**
 * What live memory is for: the kernel's roles (parameter, gradient,
 * optimizer state, activation, ...), per cell as bytes and per block. The
 * kernel helper computes them (kernel-helpers/.../roles.py); the role names
 * come from its protocol.py through the build, never spelled here.
 */
import { IRunSite } from './births';
import { MAX_EXACT, PAST_EXACT } from './consistency';
import { groupBySite, SnapshotDiff } from './diff';
import { clip, SnapshotError } from './errors';
import { IFrameFilterOptions } from './frames';
import { Block, Snapshot } from './model';
import { ROLES as KERNEL_ROLES, ROLE_CODES } from './protocol.generated';
import { readManifestPart } from './manifest';
import { ISessionCell, ISessionManifest, IUnreadableFile } from './session';

/** A role name, one of `ROLES` (a string: recorded files may name roles of other versions). */
export type Role = string;

/** Every role, in the kernel's precedence order (where several things keep a block, the first wins). */
export const ROLES: readonly Role[] = KERNEL_ROLES;

/** Bytes per role, every role present. */
export type RoleBytes = Readonly<Record<Role, number>>;

/** A cell's roles: bytes alive after it per role, and whether the kernel's pass finished in its time. */
export interface IRoleSummary {
  readonly bytes: RoleBytes;
  readonly partial: boolean;
}

/** The role of each allocated block of one snapshot, by device and address. */
export class BlockRoles {
  constructor(entries: Iterable<[number, number, Role]>) {
    for (const [device, address, role] of entries) {
      this._roles.set(Private.key(device, address), role);
    }
  }

  /** The number of blocks with a role. */
  get size(): number {
    return this._roles.size;
  }

  /** Whether the kernel gave this block a role. */
  has(block: Pick<Block, 'device' | 'address'>): boolean {
    return this._roles.has(Private.key(block.device, block.address));
  }

  /** The block's role; `unknown` for a block the kernel gave none. */
  roleOf(block: Pick<Block, 'device' | 'address'>): Role {
    return this._roles.get(Private.key(block.device, block.address)) ?? 'unknown';
  }

  private readonly _roles = new Map<string, Role>();
}

/** The blocks of a diff that have one role, grouped again by allocation site. */
export interface IRoleGroup {
  readonly role: Role;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
  readonly count: number;
  /** Its sites; copies of one cell's code may be told apart by run (see splitSitesByRun). */
  readonly sites: readonly IRunSite[];
}

/** A recorded cell's roles: the bytes, and per block when the folder has the cell's roles file. */
export interface ICellRoles extends IRoleSummary {
  readonly blocks: BlockRoles | null;
}

/**
 * Each cell's recorded roles (the manifest's `roles` and `roles_file`,
 * docs/session-format.md), null for a cell recorded without them;
 * `readFile` returns a file's bytes by its name in the folder, null where the
 * caller needs only the bytes (no roles file is then read). A roles file that
 * cannot be read goes to `leftOut` and its cell keeps its bytes without
 * per-block roles; by default it refuses, for a caller that needs them.
 */
export function sessionRoles(
  manifest: ISessionManifest,
  readFile: ((name: string) => Uint8Array) | null,
  leftOut: (file: IUnreadableFile) => void = file => {
    throw new SnapshotError(file.message);
  }
): (ICellRoles | null)[] {
  // The manifest's rule (manifest.ts) has checked both fields, as the replay kernel's has.
  return manifest.cells.map(({ index, roles, roles_file: file }) => {
    if (roles === undefined) {
      return null;
    }
    const summary = Private.summary(roles);
    if (file === undefined || readFile === null) {
      return { ...summary, blocks: null };
    }
    // A roles file's columns are checked here only (parseBlockRoles), not by the manifest's rule: the replay
    // kernel judges none, it sends the roles of the blocks it can read one for (replay.py block_roles) and the
    // panel checks the runs that arrive (parseBlockRuns).
    const blocks = (): BlockRoles => {
      let raw: unknown;
      try {
        raw = JSON.parse(new TextDecoder().decode(readFile(file)));
      } catch (reason) {
        // JSON.parse quotes the text it met: for a binary file, raw bytes on the terminal.
        throw new SnapshotError(
          reason instanceof SyntaxError
            ? `${file}: cannot be read as JSON`
            : `${file}: cannot be read (${(reason as Error).message})`
        );
      }
      return parseBlockRoles(raw, file);
    };
    try {
      return { ...summary, blocks: blocks() };
    } catch (reason) {
      if (!(reason instanceof SnapshotError)) {
        throw reason;
      }
      leftOut({ index, file, message: reason.message, part: 'roles' });
      return { ...summary, blocks: null };
    }
  });
}

/** A role's name as people read it: `optimizer_state` -> `optimizer state`. */
export function roleLabel(role: Role): string {
  return role.replace(/_/g, ' ');
}

/** Zero bytes for every role. */
export function emptyRoleBytes(): RoleBytes {
  return Object.fromEntries(ROLES.map(role => [role, 0]));
}

/**
 * Validate the wire's roles summary by the rule a manifest cell's `roles`
 * has (manifest_fields.json, shape `roles`); `where` names it in errors.
 */
export function parseRoleSummary(raw: unknown, where: string): IRoleSummary {
  return Private.summary(readManifestPart(raw, 'roles', where) as ISessionCell.IRoles);
}

/** Validate a `cellNN.roles.json` (columns device, address, role); `where` names it in errors. */
export function parseBlockRoles(raw: unknown, where: string): BlockRoles {
  const { device, address, role } = (raw ?? {}) as { device?: unknown; address?: unknown; role?: unknown };
  if (!Array.isArray(device) || !Array.isArray(address) || !Array.isArray(role)) {
    throw new SnapshotError(`${where} needs the columns device, address and role`);
  }
  if (device.length !== address.length || address.length !== role.length) {
    throw new SnapshotError(`${where} columns differ in length`);
  }
  // JSON.parse has rounded a larger one: it may now be another block's address.
  for (const [field, column] of [
    ['device', device],
    ['address', address]
  ] as const) {
    const k = column.findIndex(v => typeof v === 'number' && Math.abs(v) > MAX_EXACT);
    if (k >= 0) {
      throw new SnapshotError(`${where} ${field}[${k}] is out of range: ${PAST_EXACT}`);
    }
    // The protocol's addresses are numbers: text would match a block only by chance.
    const odd = column.findIndex(v => !Number.isInteger(v) || v < 0);
    if (odd >= 0) {
      throw new SnapshotError(`${where} ${field}[${odd}] is not a whole number of 0 or more`);
    }
  }
  const unknown = role.find(r => !ROLES.includes(r));
  if (unknown !== undefined) {
    // String() of a nested list recurses, and of a dict prints nothing useful: name the kind instead.
    const shown =
      typeof unknown === 'object' && unknown !== null ? (Array.isArray(unknown) ? 'a list' : 'a dict') : null;
    throw new SnapshotError(`${where} names an unknown role ${shown ?? `'${clip(String(unknown))}'`}`);
  }
  return new BlockRoles(role.map((r: Role, i: number) => [device[i] as number, address[i] as number, r]));
}

/**
 * Each allocated block's role from a snapshot message's `roles.blocks`
 * (`{count, runs}`: the roles of the snapshot's allocated blocks in device
 * and address order, one letter per role, `12a` for twelve blocks of the
 * first role; written by the kernel's roles.py
 * `block_runs`). `where` names it in errors; runs that do not cover the
 * snapshot's allocated blocks one for one are refused.
 */
export function parseBlockRuns(raw: unknown, snapshot: Snapshot, where: string): BlockRoles {
  const { count, runs } = (raw ?? {}) as { count?: unknown; runs?: unknown };
  if (!Number.isInteger(count) || typeof runs !== 'string' || !Private.RUNS.test(runs)) {
    throw new SnapshotError(`${where} needs a block count and role runs like '12a3c'`);
  }
  const allocated = snapshot.blocks.filter(b => b.state === 'active_allocated');
  if (count !== allocated.length) {
    throw new SnapshotError(`${where} names ${count} blocks, the snapshot has ${allocated.length} allocated`);
  }
  const entries: [number, number, Role][] = [];
  for (const [, n, letter] of runs.matchAll(Private.RUN)) {
    const role = ROLES[ROLE_CODES.indexOf(letter)];
    for (let k = n ? Number(n) : 1; k > 0; k--) {
      const block = allocated[entries.length];
      if (block === undefined) {
        throw new SnapshotError(`${where} runs name more blocks than its count`);
      }
      entries.push([block.device, block.address, role]);
    }
  }
  if (entries.length !== allocated.length) {
    throw new SnapshotError(`${where} runs name ${entries.length} of its ${allocated.length} blocks`);
  }
  return new BlockRoles(entries);
}

/** A block without a role in `roleCodes`. */
const NO_ROLE = 255;

/**
 * A snapshot's roles as one byte per block (its index in `ROLES`, 255 for
 * none), in the order of `snapshot.blocks`: what the page hands the engine
 * worker, which has the same blocks (`blockRolesFromCodes`).
 */
export function roleCodes(snapshot: Snapshot, roles: BlockRoles): Uint8Array {
  return Uint8Array.from(snapshot.blocks, b => (roles.has(b) ? ROLES.indexOf(roles.roleOf(b)) : NO_ROLE));
}

/** The roles `roleCodes` wrote, back on the same snapshot's blocks. */
export function blockRolesFromCodes(snapshot: Snapshot, codes: Uint8Array): BlockRoles {
  if (codes.length !== snapshot.blocks.length) {
    throw new SnapshotError(`role codes for ${codes.length} blocks, the snapshot has ${snapshot.blocks.length}`);
  }
  const entries: [number, number, Role][] = [];
  snapshot.blocks.forEach((b, i) => {
    if (codes[i] !== NO_ROLE) {
      entries.push([b.device, b.address, ROLES[codes[i]]]);
    }
  });
  return new BlockRoles(entries);
}

/** Per role, the change from `before` to `after` (`before` null: from nothing). */
export function roleChange(before: RoleBytes | null, after: RoleBytes): RoleBytes {
  return Object.fromEntries(ROLES.map(role => [role, (after[role] ?? 0) - (before?.[role] ?? 0)]));
}

/**
 * A diff grouped by role, then by allocation site: born blocks take their
 * role after the change, freed ones the role they had before it. Largest
 * change first; roles without a changed block are left out.
 */
export function groupByRole(
  diff: SnapshotDiff,
  before: BlockRoles,
  after: BlockRoles,
  options: IFrameFilterOptions = {}
): IRoleGroup[] {
  const born = new Map<Role, Block[]>();
  const freed = new Map<Role, Block[]>();
  const add = (into: Map<Role, Block[]>, role: Role, block: Block) => {
    const list = into.get(role);
    if (list) {
      list.push(block);
    } else {
      into.set(role, [block]);
    }
  };
  diff.born.forEach(b => add(born, after.roleOf(b), b));
  diff.freed.forEach(b => add(freed, before.roleOf(b), b));
  const groups: IRoleGroup[] = [];
  for (const role of ROLES) {
    const b = born.get(role) ?? [];
    const f = freed.get(role) ?? [];
    if (!b.length && !f.length) {
      continue;
    }
    const bornBytes = Private.bytes(b);
    const freedBytes = Private.bytes(f);
    const part: SnapshotDiff = { ...diff, born: b, freed: f, bornBytes, freedBytes, netBytes: bornBytes - freedBytes };
    groups.push({
      role,
      bornBytes,
      freedBytes,
      netBytes: bornBytes - freedBytes,
      count: b.length + f.length,
      sites: groupBySite(part, options)
    });
  }
  return groups.sort((x, y) => Math.abs(y.netBytes) - Math.abs(x.netBytes) || y.bornBytes - x.bornBytes);
}

/** Blocks alive on both sides of a diff whose role changed, by old and new role. */
export interface IRoleMove {
  readonly from: Role;
  readonly to: Role;
  readonly bytes: number;
  readonly count: number;
}

/**
 * The blocks a diff keeps that changed role (a list's tensors that an autograd
 * graph then saved: `user` to `activation`), largest first. A cell's change in
 * bytes per role counts them; the diff by role, which sees only blocks born
 * and freed, does not: they are the difference between the two.
 */
export function roleMoves(
  diff: SnapshotDiff,
  after: Snapshot,
  rolesBefore: BlockRoles,
  rolesAfter: BlockRoles
): IRoleMove[] {
  const born = new Set(diff.born);
  const moves = new Map<string, { from: Role; to: Role; bytes: number; count: number }>();
  for (const b of after.blocks) {
    if (born.has(b) || !rolesBefore.has(b) || !rolesAfter.has(b)) {
      continue;
    }
    const from = rolesBefore.roleOf(b);
    const to = rolesAfter.roleOf(b);
    if (from !== to) {
      const move = moves.get(`${from}\u0000${to}`) ?? { from, to, bytes: 0, count: 0 };
      move.bytes += b.size;
      move.count++;
      moves.set(`${from}\u0000${to}`, move);
    }
  }
  return [...moves.values()].sort((a, b) => b.bytes - a.bytes);
}

namespace Private {
  const LETTERS = `[${ROLE_CODES}]`;
  /** Whole runs strings: optional counts, each before a role letter. */
  export const RUNS = new RegExp(`^(?:[1-9][0-9]*)?${LETTERS}(?:(?:[1-9][0-9]*)?${LETTERS})*$|^$`);
  /** One run: its count (empty for one block) and its letter. */
  export const RUN = new RegExp(`([0-9]*)(${LETTERS})`, 'g');

  /** A summary the manifest's rule has read, every role present. */
  export function summary({ bytes, partial }: ISessionCell.IRoles): IRoleSummary {
    return { bytes: { ...emptyRoleBytes(), ...bytes }, partial: partial === true };
  }

  export function key(device: number, address: number): string {
    return `${device}:${address}`;
  }

  export function bytes(blocks: readonly Block[]): number {
    return blocks.reduce((n, b) => n + b.size, 0);
  }
}
