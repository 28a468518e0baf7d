/**
 * @jest-environment node
 */
// Roles as the engine reads them: a session the H200 recorded with the kernel's role pass.
import * as fs from 'fs';
import * as path from 'path';
import {
  blockRolesFromCodes,
  diffSnapshots,
  encodeFrames,
  encodeSnapshot,
  findingText,
  findLeaks,
  groupByRole,
  loadSession,
  parseBlockRoles,
  parseBlockRuns,
  parseRoleSummary,
  rankLeaks,
  roleChange,
  roleCodes,
  ROLES,
  sessionExecutions,
  sessionFolderFiles,
  sessionRoles
} from '..';
import { runsOf } from './roleRuns';
import { TEST_DATA } from './data';

const DIR = path.join(TEST_DATA, 'roles', 'training_roles--python');
const read = (name: string) => new Uint8Array(fs.readFileSync(path.join(DIR, name)));

function recorded() {
  const session = loadSession(fs.readFileSync(path.join(DIR, 'manifest.json'), 'utf-8'), read);
  return { session, roles: sessionRoles(session.manifest, read) };
}

describe('role names', () => {
  it('come from the kernel helper (generated from protocol.py), in its precedence order', () => {
    expect(new Set(ROLES).size).toBe(ROLES.length);
    expect(ROLES[0]).toBe('parameter');
    expect(ROLES[ROLES.length - 1]).toBe('unknown');
  });
});

describe('a recorded training session', () => {
  it('gives every cell bytes per role that add up to what the allocator holds', () => {
    const { session, roles } = recorded();
    roles.forEach((cell, k) => {
      expect(cell).not.toBeNull();
      const allocated = session.snapshots[k].blocks.filter(b => b.state === 'active_allocated');
      const sum = Object.values(cell!.bytes).reduce((n, v) => n + v, 0);
      expect(sum).toBe(allocated.reduce((n, b) => n + b.size, 0));
      // per block: each allocated block has the role whose bytes it counts in
      const byRole = Object.fromEntries(ROLES.map(r => [r, 0]));
      allocated.forEach(b => (byRole[cell!.blocks!.roleOf(b)] += b.size));
      expect(byRole).toEqual(cell!.bytes);
    });
    // after the eval pass: AdamW keeps two moments per parameter; gradients as large as the parameters
    const after = roles[4]!.bytes;
    expect(after.optimizer_state).toBe(2 * after.parameter);
    expect(after.gradient).toBe(after.parameter);
    expect(after.activation).toBeGreaterThan(0);
    expect(roles[5]!.bytes.output_cache).toBeGreaterThan(0);
  });

  it('says which roles a cell changed', () => {
    const { roles } = recorded();
    const change = roleChange(roles[3]!.bytes, roles[4]!.bytes);
    expect(change.activation).toBe(roles[4]!.bytes.activation);
    expect(change.parameter).toBe(0);
    expect(roleChange(null, roles[1]!.bytes)).toEqual(roles[1]!.bytes);
  });

  it('groups a diff by role, then by site; born blocks take their new role, freed ones their old', () => {
    const { session, roles } = recorded();
    const diff = diffSnapshots(session.snapshots[3], session.snapshots[4]);
    const groups = groupByRole(diff, roles[3]!.blocks!, roles[4]!.blocks!);
    expect(groups[0].role).toBe('activation');
    expect(groups.reduce((n, g) => n + g.netBytes, 0)).toBe(diff.netBytes);
    for (const g of groups) {
      expect(g.sites.reduce((n, s) => n + s.netBytes, 0)).toBe(g.netBytes);
    }
    // the training steps leave gradients, optimizer state and cuBLAS's workspaces behind
    const training = diffSnapshots(session.snapshots[2], session.snapshots[3]);
    const born = groupByRole(training, roles[2]!.blocks!, roles[3]!.blocks!).map(g => g.role);
    expect(born).toEqual(expect.arrayContaining(['optimizer_state', 'gradient', 'workspace']));
  });
});

describe('an exported session', () => {
  it('keeps each cell\u2019s roles in its manifest and each block\u2019s in a roles file, as recorded', () => {
    const { session, roles } = recorded();
    const files = sessionFolderFiles(
      session.manifest.cells.map((c, k) => ({
        index: c.index,
        executionCount: c.execution_count,
        source: c.source,
        cellId: null,
        error: null,
        snapshot: session.snapshots[k],
        oomSnapshots: [],
        devices: [],
        roles: k === 0 ? null : roles[k],
        blockRoles: roles[k]?.blocks ?? null
      }))
    );
    const manifest = JSON.parse(new TextDecoder().decode(files.get('manifest.json')!));
    const back = sessionRoles(manifest, name => files.get(name)!);
    expect(back[0]).toBeNull();
    expect(back.slice(1).map(r => r!.bytes)).toEqual(roles.slice(1).map(r => r!.bytes));
    // each allocated block with the role the recording's roles file gave it
    for (const k of [1, 4]) {
      const blocks = session.snapshots[k].blocks.filter(b => b.state === 'active_allocated');
      expect(blocks.length).toBeGreaterThan(0);
      expect(blocks.map(b => back[k]!.blocks!.roleOf(b))).toEqual(blocks.map(b => roles[k]!.blocks!.roleOf(b)));
      expect(manifest.cells[k].roles_file).toBe(`cell0${k}.roles.json`);
    }
    expect(files.has('cell00.roles.json')).toBe(false);
  });
});

describe('bad roles input', () => {
  it('names the role or field at fault in one line', () => {
    // The wire's summary is read by the rule of a manifest cell's roles (manifest_fields.json), in its words.
    expect(() => parseRoleSummary({ bytes: { weights: 1 } }, 'roles')).toThrow(
      'roles bytes must name only roles, not "weights"'
    );
    expect(() => parseRoleSummary({ bytes: { parameter: -1 } }, 'roles')).toThrow(
      'roles bytes parameter must be a whole number of bytes, not -1'
    );
    expect(() => parseRoleSummary(null, 'roles')).toThrow('roles must be an object, not null');
    expect(() => parseRoleSummary({ partial: false }, 'roles')).toThrow('roles has no bytes');
    expect(() => parseBlockRoles({ device: [0], address: [1, 2], role: ['user'] }, 'f.json')).toThrow(
      'f.json columns differ in length'
    );
    expect(() => parseBlockRoles({ device: [0], address: [1], role: ['weights'] }, 'f.json')).toThrow(
      "unknown role 'weights'"
    );
    // JSON.parse has rounded it: the role would be another block's.
    expect(() => parseBlockRoles({ device: [0, 0], address: [1, 2 ** 53], role: ['user', 'user'] }, 'f.json')).toThrow(
      'f.json address[1] is out of range: past 2^53 - 1, where numbers stop being exact'
    );
    // An address as text is refused: the protocol's addresses are numbers.
    expect(() => parseBlockRoles({ device: [0], address: ['4096'], role: ['user'] }, 'f.json')).toThrow(
      'f.json address[0] is not a whole number of 0 or more'
    );
    expect(() => parseBlockRoles({ device: [-1], address: [4096], role: ['user'] }, 'f.json')).toThrow(
      'f.json device[0] is not a whole number of 0 or more'
    );
    // A role nested 200,000 lists deep: String() of it overflowed the stack.
    let deep: unknown = 'user';
    for (let k = 0; k < 200_000; k++) {
      deep = [deep];
    }
    expect(() => parseBlockRoles({ device: [0], address: [1], role: [deep] }, 'f.json')).toThrow(
      'f.json names an unknown role a list'
    );
    expect(() => parseRoleSummary({ bytes: { ['x'.repeat(1000)]: 1 } }, 'roles')).toThrow(
      `roles bytes must name only roles, not "${'x'.repeat(40)}"…`
    );
  });

  it('leaves a roles file that cannot be read out of its cell, keeping its bytes, and reads none without readFile', () => {
    const { session } = recorded();
    const broken = (name: string) =>
      name === 'cell02.roles.json' ? new TextEncoder().encode('{"device": [') : read(name);
    const left: unknown[] = [];
    const roles = sessionRoles(session.manifest, broken, file => left.push(file));
    expect(left).toEqual([
      { index: 2, file: 'cell02.roles.json', message: 'cell02.roles.json: cannot be read as JSON', part: 'roles' }
    ]);
    expect(roles[2]).toEqual({ ...recorded().roles[2], blocks: null });
    expect(roles[3]!.blocks).not.toBeNull();
    expect(sessionRoles(session.manifest, null).every(r => r!.blocks === null)).toBe(true);
    // A caller that needs the roles (diff --by role) is refused by default.
    expect(() => sessionRoles(session.manifest, broken)).toThrow('cell02.roles.json: cannot be read as JSON');
  });

  it('fills roles a summary leaves out with zero', () => {
    expect(parseRoleSummary({ bytes: { user: 5 }, partial: true }, 'x')).toEqual({
      bytes: { ...Object.fromEntries(ROLES.map(r => [r, 0])), user: 5 },
      partial: true
    });
  });
});

describe('per-block roles on the wire', () => {
  const file = (k: number) => JSON.parse(fs.readFileSync(path.join(DIR, `cell0${k}.roles.json`), 'utf-8'));

  it("give each allocated block of the recorded snapshots the role the cell's roles file names", () => {
    const { session, roles } = recorded();
    session.snapshots.forEach((snapshot, k) => {
      const fromWire = parseBlockRuns(runsOf(file(k)), snapshot, `cell ${k}`);
      const allocated = snapshot.blocks.filter(b => b.state === 'active_allocated');
      expect(fromWire.size).toBe(allocated.length);
      allocated.forEach(b => expect(fromWire.roleOf(b)).toBe(roles[k]!.blocks!.roleOf(b)));
    });
    // the eval pass's cell: 49 blocks in a handful of runs
    expect(runsOf(file(4)).runs.length).toBeLessThan(49);
  });

  it('refuse runs that do not cover the snapshot one block for one, saying why', () => {
    const { session } = recorded();
    const runs = runsOf(file(4));
    expect(() => parseBlockRuns({ ...runs, count: runs.count + 1 }, session.snapshots[4], 'roles.blocks')).toThrow(
      `roles.blocks names ${runs.count + 1} blocks, the snapshot has ${runs.count} allocated`
    );
    expect(() => parseBlockRuns({ count: runs.count, runs: `${runs.runs}a` }, session.snapshots[4], 'r')).toThrow(
      'r runs name more blocks than its count'
    );
    expect(() => parseBlockRuns({ count: 1, runs: 'z' }, session.snapshots[4], 'r')).toThrow(
      "r needs a block count and role runs like '12a3c'"
    );
  });
});

describe('the diff by role, then by site', () => {
  it("groups the eval pass's change on the recorded session: born blocks by their later role", () => {
    const { session, roles } = recorded();
    const diff = diffSnapshots(session.snapshots[3], session.snapshots[4]);
    const groups = groupByRole(diff, roles[3]!.blocks!, roles[4]!.blocks!);
    const activation = groups.find(g => g.role === 'activation')!;
    // activation bytes after the eval pass: born in it, or blocks alive before that its graph now saves (the batch)
    expect(roles[3]!.bytes.activation).toBe(0);
    const born = new Set(diff.born);
    const kept = session.snapshots[4].blocks
      .filter(b => b.state === 'active_allocated' && roles[4]!.blocks!.roleOf(b) === 'activation')
      .filter(b => !born.has(b));
    expect(kept.length).toBeGreaterThan(0);
    expect(activation.bornBytes).toBe(roles[4]!.bytes.activation - kept.reduce((n, b) => n + b.size, 0));
    expect(activation.freedBytes).toBe(0);
    expect(activation.sites.reduce((n, s) => n + s.netBytes, 0)).toBe(activation.netBytes);
    expect(groups.reduce((n, g) => n + g.netBytes, 0)).toBe(diff.netBytes);
    expect(groups[0].role).toBe('activation');
  });
});

describe('leak reasons by role', () => {
  it('say that the eval pass kept outside no_grad leaks tensors saved for backward, and advise no_grad / detach', () => {
    const { session, roles } = recorded();
    const executions = sessionExecutions(session.manifest);
    const plain = findLeaks(session.snapshots, executions);
    const report = findLeaks(session.snapshots, executions, { roles: roles.map(r => r?.blocks ?? null) });
    const evalPass = report.executions[4];
    expect(evalPass.verdict).toBe('leak');
    const byRole = evalPass.findings.filter(f => f.code === 'leak-role');
    expect(byRole[0]).toEqual({ code: 'leak-role', role: 'activation', bytes: expect.any(Number) });
    // the reasons by role account for the leaked bytes they name, no more
    const named = byRole.reduce((n, f) => n + (f as { bytes: number }).bytes, 0);
    expect(named).toBeLessThanOrEqual(evalPass.leakedBytes);
    expect((byRole[0] as { bytes: number }).bytes).toBeGreaterThan(0.5 * evalPass.leakedBytes);
    // the graph rule already advised no_grad: the role adds no second wording of it, only the fix for the
    // outputs `preds` keeps, which no_grad leaves
    expect(evalPass.fixes).toEqual([...plain.executions[4].fixes, { code: 'release-kept', names: ['preds'] }]);
    expect(evalPass.fixes).toContainEqual({ code: 'no-grad' });
    expect(findingText(byRole[0], k => `cell ${k}`)).toMatch(
      /of it is tensors saved for backward by a live autograd graph$/
    );
    // roles add reasons, never change a verdict or its bytes
    expect(report.executions.map(v => [v.verdict, v.leakedBytes])).toEqual(
      plain.executions.map(v => [v.verdict, v.leakedBytes])
    );
    expect(plain.executions[4].findings.some(f => f.code === 'leak-role')).toBe(false);
  });
});

describe('roles handed to the engine worker', () => {
  it('come back as the same roles on the decoded snapshots, and the worker words the same leak reasons', () => {
    const { session, roles } = recorded();
    const executions = sessionExecutions(session.manifest);
    const codes = session.snapshots.map((s, k) => roleCodes(s, roles[k]!.blocks!));
    expect(codes[4].length).toBe(session.snapshots[4].blocks.length);
    const back = blockRolesFromCodes(session.snapshots[4], codes[4]);
    session.snapshots[4].blocks.forEach(b => expect(back.roleOf(b)).toBe(roles[4]!.blocks!.roleOf(b)));
    const encoded = { ...encodeFrames(session.frames), snapshots: session.snapshots.map(encodeSnapshot) };
    const { report } = rankLeaks({ key: 14, session: encoded, executions, roles: codes });
    const direct = findLeaks(session.snapshots, executions, { roles: roles.map(r => r!.blocks) });
    expect(report.executions[4].findings).toEqual(direct.executions[4].findings);
    expect(report.executions[4].findings.some(f => f.code === 'leak-role')).toBe(true);
  });
});
