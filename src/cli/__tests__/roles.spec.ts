/**
 * @jest-environment node
 */
// `--by role` in the built `cuda-memdiff` bin, on a session the H200 recorded with roles.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const DIR = path.join(ROOT, 'test-data', 'roles', 'training_roles--python');
const NO_ROLES = path.join(ROOT, 'test-data', 'recordings', 'clean_training--python');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf-8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('cuda-memdiff session --by role', () => {
  it('gives each cell its bytes by role in --json, null where none were recorded', () => {
    const out = JSON.parse(cli('session', DIR, '--json').out);
    expect(Object.keys(out.cells[4].roles)).toEqual([
      'parameter',
      'buffer',
      'gradient',
      'optimizer_state',
      'activation',
      'output_cache',
      'traceback',
      'user',
      'workspace',
      'unknown'
    ]);
    for (const cell of out.cells) {
      const sum = Object.values(cell.roles as Record<string, number>).reduce((n, v) => n + v, 0);
      expect(sum).toBe(cell.allocated_bytes);
    }
    expect(out.cells[4].roles.optimizer_state).toBe(2 * out.cells[4].roles.parameter);
    const plain = JSON.parse(cli('session', NO_ROLES, '--json').out);
    expect(plain.cells.every((c: { roles: unknown }) => c.roles === null)).toBe(true);
  });

  it('prints a column per role the session used', () => {
    const r = cli('session', DIR, '--by', 'role');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(
      /^cell\s+snapshot\s+allocated\s+parameter\s+buffer\s+gradient\s+optimizer_state\s+activation\s+output_cache\s+user\s+workspace$/m
    );
    expect(r.out).toMatch(
      /^\s+\[5\]\s+cell04\.pickle\.gz\s+93\.8 MiB\s+5\.06 MiB\s+8\.50 KiB\s+5\.06 MiB\s+10\.1 MiB\s+8\.51 MiB\s+0 B\s+24\.5 KiB\s+65\.0 MiB$/m
    );
    expect(r.out).not.toMatch(/traceback/);
  });

  it('adds the roles column only where a cell has something to say: not recorded, or partial', () => {
    // Before: a last column headed "roles" that was empty on every row of a folder recorded whole.
    const whole = cli('session', DIR, '--by', 'role').out;
    expect(whole).toMatch(/^cell\s+snapshot\s+allocated\s.*\sworkspace$/m);
    expect(whole.split('\n').every(line => line === line.trimEnd())).toBe(true);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-roles-'));
    fs.cpSync(DIR, dir, { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    delete manifest.cells[0].roles;
    manifest.cells[2].roles.partial = true;
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
    const mixed = cli('session', dir, '--by', 'role').out;
    expect(mixed).toMatch(/^cell\s+snapshot\s+allocated\s.*\sworkspace\s+roles$/m);
    expect(mixed).toMatch(/^\s+\[1\]\s+cell00\.pickle\.gz\s+0 B\s+not recorded$/m);
    expect(mixed).toMatch(/^\s+\[3\]\s+cell02\.pickle\.gz\s.*\s+partial \(ran out of time: the rest is unknown\)$/m);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('says in one line when the folder has no roles', () => {
    const r = cli('session', NO_ROLES, '--by', 'role');
    expect(r.code).toBe(2);
    expect(r.err.trim()).toBe(
      `cuda-memdiff: ${NO_ROLES}: no cell has recorded roles (record it with cuda_memdiff_kernel.recorder)`
    );
  });
});

describe('cuda-memdiff diff --by role', () => {
  const before = path.join(DIR, 'cell03.pickle.gz');
  const after = path.join(DIR, 'cell04.pickle.gz');

  it('groups the change by role, then by site', () => {
    const out = JSON.parse(cli('diff', before, after, '--by=role', '--json').out);
    expect(out.roles.map((g: { role: string }) => g.role)).toEqual(['activation', 'user']);
    expect(out.roles.reduce((n: number, g: { net_bytes: number }) => n + g.net_bytes, 0)).toBe(out.net_bytes);
    expect(out.roles[0].sites[0].site).toEqual(expect.objectContaining({ line: 2 }));
    const text = cli('diff', before, after, '--by', 'role').out;
    expect(text).toMatch(/^\+8\.01 MiB\s+8\.01 MiB\s+0 B\s+6\s+activation$/m);
    // the site is named by its cell, as `session` names it (the manifest lists both files)
    expect(text).toMatch(/^\+8\.01 MiB\s+8\.01 MiB\s+0 B\s+6\s+ Cell \[5\], line 2$/m);
  });

  it('names the blocks kept that changed role, which each role\u2019s total counts and the groups do not', () => {
    // The demo's batches, made by Cell [2], became activation when Cell [3]'s graph saved them: the badge's
    // +288 MiB activation is the groups' +256 MiB and these 32 MiB.
    const demo = path.join(ROOT, 'test-data', 'live', 'gpu_memory_demo--holders');
    const [cell1, cell2] = ['cell01.pickle.gz', 'cell02.pickle.gz'].map(f => path.join(demo, f));
    const out = JSON.parse(cli('diff', cell1, cell2, '--by', 'role', '--json').out);
    expect(out.role_moves).toEqual([{ from: 'user', to: 'activation', bytes: 32 * 2 ** 20, blocks: 8 }]);
    const manifest = JSON.parse(fs.readFileSync(path.join(demo, 'manifest.json'), 'utf-8'));
    const [was, now] = [manifest.cells[1].roles.bytes, manifest.cells[2].roles.bytes];
    const activation = out.roles.find((g: { role: string }) => g.role === 'activation');
    expect(activation.net_bytes + out.role_moves[0].bytes).toBe(now.activation - was.activation);
    expect(cli('diff', cell1, cell2, '--by', 'role').out).toMatch(
      /\nblocks allocated earlier changed role \(32\.0 MiB from user to activation\): the roles above count only blocks born and freed; each role's total \(session --by role\) counts these too$/m
    );
    // none between the first two training steps: no note
    const [step1, step2] = ['cell01.pickle.gz', 'cell02.pickle.gz'].map(f => path.join(DIR, f));
    expect(JSON.parse(cli('diff', step1, step2, '--by', 'role', '--json').out).role_moves).toEqual([]);
    expect(cli('diff', step1, step2, '--by', 'role').out).not.toMatch(/changed role/);
  });

  it('opens with the same line as diff by site', () => {
    const bySite = cli('diff', before, after).out.split('\n')[0];
    expect(bySite).toBe('born 8.03 MiB in 7 blocks, freed 0 B in 0 blocks, net +8.03 MiB (41 blocks kept)');
    expect(cli('diff', before, after, '--by', 'role').out.split('\n')[0]).toBe(bySite);
  });

  it('refuses snapshots without recorded roles, and other groupings, in one line', () => {
    const plain = path.join(NO_ROLES, 'cell00.pickle.gz');
    const r = cli('diff', plain, plain, '--by', 'role');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cell00\.pickle\.gz: no roles recorded for it/);
    const bad = cli('diff', before, after, '--by', 'size');
    expect(bad.code).toBe(2);
    expect(bad.err.split('\n')[0]).toBe("cuda-memdiff: --by takes 'role', not 'size'");
    expect(cli('leaks', DIR, '--by', 'role').err.split('\n')[0]).toBe('cuda-memdiff: leaks does not take --by');
  });
});

describe('a roles file that cannot be read', () => {
  // The roles folder with cell 2's roles file damaged three ways.
  const damaged = (name: string, write: (file: string) => void) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cuda-memdiff-${name}-`));
    fs.cpSync(DIR, dir, { recursive: true });
    write(path.join(dir, 'cell02.roles.json'));
    return dir;
  };
  const cases: [string, (file: string) => void, string][] = [
    ['missing', file => fs.rmSync(file), 'cell02.roles.json: cannot be read ('],
    ['binary', file => fs.writeFileSync(file, '\x1b[2J\x00\xff'), 'cell02.roles.json: cannot be read as JSON'],
    [
      'columns',
      file => fs.writeFileSync(file, JSON.stringify({ device: [0], address: [1, 2], role: ['user'] })),
      'cell02.roles.json columns differ in length'
    ]
  ];
  const dirs: string[] = [];
  afterAll(() => dirs.forEach(d => fs.rmSync(d, { recursive: true, force: true })));

  it.each(cases)('(%s) leaves leaks its other cells, and says which roles it left out', (name, write, message) => {
    // Before: the whole command stopped on the optional file ("r.json: cannot be read as JSON ...", exit 1).
    const dir = damaged(name, write);
    dirs.push(dir);
    const text = cli('leaks', dir);
    expect(text.code).toBe(0);
    expect(text.out.split('\n')[0]).toMatch(/^Cell \[3\]'s per-block roles left out: /);
    expect(text.out.split('\n')[0]).toContain(message);
    expect(text.out).toMatch(/^cell\s+snapshot\s+verdict/m);
    const json = cli('leaks', dir, '--json');
    expect(json.code).toBe(0);
    expect(json.err.trim().split('\n')).toEqual([expect.stringContaining("Cell [3]'s per-block roles left out")]);
    const out = JSON.parse(json.out);
    expect(out.unreadable).toEqual([
      { index: 2, file: 'cell02.roles.json', part: 'roles', message: expect.stringContaining(message) }
    ]);
    expect(out.cells).toHaveLength(6);
  });

  it('is not read by session, which needs only the bytes per role', () => {
    const dir = damaged('session', file => fs.rmSync(file));
    dirs.push(dir);
    const r = cli('session', dir, '--json');
    expect([r.code, r.err]).toEqual([0, '']);
    const out = JSON.parse(r.out);
    expect(out.unreadable).toBeUndefined();
    expect(out.cells[2].roles).toEqual(JSON.parse(cli('session', DIR, '--json').out).cells[2].roles);
    expect(cli('session', dir, '--by', 'role').code).toBe(0);
  });
});
