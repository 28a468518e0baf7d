/**
 * @jest-environment node
 */
// One mutant per class of defect the mutation fuzzer (bench/fuzz_files.py)
// found in real recordings, run through the built CLI as a user runs it
// (npm run build:cli first). Each was a stack trace, a line naming no
// folder, or a report that dropped what it should have named.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const OOM = path.join(ROOT, 'test-data', 'recordings', 'oom--python');
const DDP = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-mutants-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf-8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A copy of `source` named `name` whose JSON file `file` is changed by `edit`. */
function mutant(source: string, name: string, file: string, edit: (json: any) => void): string {
  const copy = path.join(dir, name);
  fs.cpSync(source, copy, { recursive: true });
  const at = path.join(copy, file);
  const json = JSON.parse(fs.readFileSync(at, 'utf-8'));
  edit(json);
  fs.writeFileSync(at, JSON.stringify(json));
  return copy;
}

/** Refused in one line that starts with `file` and matches `pattern`. */
function expectRefused(r: ReturnType<typeof cli>, file: string, pattern: RegExp): void {
  expect(r.out).toBe('');
  expect(r.err.split('\n').filter(Boolean)).toEqual([expect.stringMatching(/^cuda-memdiff: /)]);
  expect(r.err.startsWith(`cuda-memdiff: ${file}`)).toBe(true);
  expect(r.err.trimEnd()).toMatch(pattern);
  expect(r.err).not.toMatch(/unexpected error|TypeError|\s+at \S+ \(/);
  expect(r.code).toBe(2);
}

describe('session folders the fuzzer broke', () => {
  it("names the folder whose manifest.json is refused, not just 'manifest.json'", () => {
    // Before: "cuda-memdiff: manifest.json cells[0] execution_count must be a whole number or null", of which folder?
    const folder = mutant(OOM, 'count', 'manifest.json', m => (m.cells[0].execution_count = '3'));
    for (const command of ['session', 'leaks']) {
      expectRefused(
        cli(command, folder),
        path.join(folder, 'manifest.json'),
        /manifest\.json cells\[0\] execution_count must be a whole number or null, not "3"$/
      );
    }
  });

  it('names the folder of the manifest beside the snapshots diff --by role reads', () => {
    // Before: "cuda-memdiff: manifest.json cells[0] execution_count must be ...", though diff was given two files.
    const folder = mutant(OOM, 'beside', 'manifest.json', m => (m.cells[0].execution_count = '3'));
    const [before, after] = ['cell00.pickle.gz', 'cell01.pickle.gz'].map(f => path.join(folder, f));
    expectRefused(
      cli('diff', before, after, '--by', 'role'),
      path.join(folder, 'manifest.json'),
      /cells\[0\] execution_count must be a whole number or null, not "3"$/
    );
  });

  it('names the folder whose manifest holds a bad roles summary', () => {
    // Before: "cuda-memdiff: manifest.json cells[1] roles is not an object"; now the manifest's rule's words.
    const folder = mutant(OOM, 'roles', 'manifest.json', m => (m.cells[1].roles = 'x'));
    expectRefused(
      cli('session', folder),
      path.join(folder, 'manifest.json'),
      /cells\[1\] roles must be an object, not "x"$/
    );
  });

  it('names the entry of the file, not of the cells read, when a cell before it was left out', () => {
    // Before: with cell00.pickle.gz unreadable, cells[2]'s bad roles were refused as "cells[1] roles ...".
    const folder = mutant(OOM, 'roles-after-left-out', 'manifest.json', m => (m.cells[2].roles = 'x'));
    fs.writeFileSync(path.join(folder, 'cell00.pickle.gz'), 'x');
    expectRefused(
      cli('session', folder),
      path.join(folder, 'manifest.json'),
      /cells\[2\] roles must be an object, not "x"$/
    );
    // diff --by role read one cell's roles, and called every cell it read cells[0].
    const [before, after] = ['cell02.pickle.gz', 'cell01.pickle.gz'].map(f => path.join(folder, f));
    expectRefused(
      cli('diff', before, after, '--by', 'role'),
      path.join(folder, 'manifest.json'),
      /cells\[2\] roles must be an object, not "x"$/
    );
  });

  it("refuses a cell error that is not text, which made leaks throw 'error.split is not a function'", () => {
    // Before: "cuda-memdiff: unexpected error: f.execution.error.split is not a function", exit 1.
    const folder = mutant(OOM, 'error', 'manifest.json', m => (m.cells[2].error = ['x']));
    expectRefused(
      cli('leaks', folder),
      path.join(folder, 'manifest.json'),
      /cells\[2\] error must be the error's text or null, not a list$/
    );
  });
});

describe('a manifest that names one snapshot for many cells', () => {
  it('says a cell that is a list must be an object, not that it has no snapshot_file', () => {
    const folder = mutant(OOM, 'list-cell', 'manifest.json', m => (m.cells[0] = [[[]]]));
    expectRefused(
      cli('session', folder),
      path.join(folder, 'manifest.json'),
      /cells\[0\] must be an object, not a list$/
    );
  });

  it('is refused at once, not decoded once per cell', () => {
    // Before: 5,000 cells naming one 2.6 KB pickle took 4.4 s and 175 MB; a 60 MB manifest of a million such
    // cells would take 15 minutes and 35 GB. Every writer gives each cell its own file.
    const folder = mutant(OOM, 'shared', 'manifest.json', m => {
      const { before, after, ...cell } = m.cells[0];
      m.cells = Array.from({ length: 1000 }, (_, i) => ({ ...cell, index: i, execution_count: i + 1 }));
    });
    const r = cli('session', folder);
    expectRefused(
      r,
      path.join(folder, 'manifest.json'),
      /cells\[1\] snapshot_file "cell00\.pickle\.gz" is cells\[0\]'s too: each cell has a snapshot of its own$/
    );
  });
});

describe('multi-rank folders the fuzzer broke', () => {
  it.each([
    ['"4"', '4'],
    ['-1', -1],
    ['4.5', 4.5],
    ['true', true]
  ])('refuses world_size %s rather than read the folder as complete', (shown, value) => {
    // Before: read as no world size, so a job of 4 ranks with 2 folders reported "2 of 2 ranks", no rank missing.
    const folder = mutant(DDP, `world${shown}`, 'ranks.json', index => (index.world_size = value));
    expectRefused(
      cli('session', folder),
      path.join(folder, 'ranks.json'),
      new RegExp(`world_size must be a whole number of ranks, not ${shown.replace('.', '\\.')}$`)
    );
  });

  it('still reads a world size the index gives as a number', () => {
    const folder = mutant(DDP, 'world4', 'ranks.json', index => (index.world_size = 4));
    const r = cli('session', folder);
    expect([r.code, r.err]).toEqual([0, '']);
    expect(r.out).toContain('Missing: no folder for ranks 2-3.');
  });
});
