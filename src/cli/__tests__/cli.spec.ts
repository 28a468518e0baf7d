/**
 * @jest-environment node
 */
// The built `cuda-memdiff` bin, run as a user runs it (npm run build:cli first).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { gzipSync } from 'fflate';
import {
  decodeSnapshotBytes,
  formatBytes,
  FrameTable,
  parseManifest,
  pickle,
  PyDict,
  PyValue,
  readSnapshot,
  sessionFolderFiles,
  Snapshot,
  snapshotToPickle
} from '../../engine';
import { fragmentedOom, twoDeviceOom } from '../../engine/__tests__/oomCases';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const REC = path.join(ROOT, 'test-data', 'recordings');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf-8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function json(...args: string[]) {
  const r = cli(...args, '--json');
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out);
}

/**
 * Text with each table row whose `why` wraps under itself on one line again,
 * so a row is matched as a whole (the continuation lines are blank up to the column).
 */
function unwrapped(text: string): string {
  const out: string[] = [];
  let column = -1;
  for (const line of text.split('\n')) {
    if (/^ *cell +snapshot .* why$/.test(line)) {
      column = line.length - 'why'.length;
    } else if (column > 0 && line.length > column && !line.slice(0, column).trim()) {
      out[out.length - 1] += ` ${line.slice(column)}`;
      continue;
    } else if (!line) {
      column = -1;
    }
    out.push(line);
  }
  return out.join('\n');
}

beforeAll(() => {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'node', 'cli', 'main.js'))) {
    throw new Error('run `npm run build:cli` before the CLI tests');
  }
});

describe('cuda-memdiff summary', () => {
  it('gives allocated and reserved bytes per device', () => {
    const out = json('summary', path.join(REC, 'many_blocks--python', 'cell03.pickle.gz'));
    expect(out.devices).toEqual([
      expect.objectContaining({
        device: 0,
        allocated_bytes: 2445312000,
        reserved_bytes: 2447376384,
        active_blocks: 40500
      })
    ]);
  });

  it('says which blocks it counts: the table the allocated ones, --json both', () => {
    // Before: the table's `blocks` said 24 and --json's `blocks` 35 (free blocks included), both unnamed.
    const file = path.join(REC, 'clean_training--python', 'cell01.pickle.gz');
    const r = cli('summary', file);
    expect(r.out).toMatch(/^device .* largest free  allocated blocks  segments$/m);
    expect(r.out).toMatch(/^cuda:0 .* 24 +8$/m);
    expect(json('summary', file)).toMatchObject({ blocks: 35, allocated_blocks: 24 });
  });

  it('prints a table with binary units', () => {
    const r = cli('summary', path.join(REC, 'multi_gpu_split--python', 'cell03.pickle.gz'));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/cuda:0 .*MiB/);
    expect(r.out).toMatch(/cuda:1 .*MiB/);
  });
});

describe('cuda-memdiff --version', () => {
  it("prints the package's version and exits 0", () => {
    const r = cli('--version');
    const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf-8')).version;
    expect([r.out, r.code]).toEqual([`cuda-memdiff ${version}\n`, 0]);
  });
});

describe('cuda-memdiff summary of an OOM dump', () => {
  const dump = path.join(REC, 'oom--python', 'oom00.pickle.gz');

  it('says why the program ran out of memory and what filled the device', () => {
    const r = cli('summary', dump);
    expect(r.out).toMatch(
      /^the program ran out of memory on cuda:0: it asked for 60\.0 GiB; the device had 39\.3 GiB free, and PyTorch's segments 0 B free \(largest free block 0 B\)\n {2}not fragmentation: the request is 20\.7 GiB more than all the free memory together, and torch\.cuda\.empty_cache\(\) cannot help \(PyTorch empties its cache before it gives up\); free what filled the device, or ask for less \(a smaller batch, shorter sequences\)\n {2}the device held: 100 GiB from \/tmp\/ipykernel_709\/1313211645\.py:3$/m
    );
    // a file has no cell start to diff against
    expect(r.out).not.toMatch(/since the cell started/);
  });

  it('counts the out-of-memory events in words, one event as one', () => {
    // Before: "1 out-of-memory event(s) in the trace".
    expect(cli('summary', dump).out).toMatch(/^1 out-of-memory event in the trace$/m);
  });

  it('gives the post-mortem in --json, and null for a file without an OOM', () => {
    expect(json('summary', dump).oom).toEqual({
      request_bytes: 60 * 2 ** 30,
      device_free_bytes: 42183294976,
      largest_free_block_bytes: 0,
      segment_free_bytes: 0,
      fragmentation: false,
      short_bytes: 60 * 2 ** 30 - 42183294976,
      device: 0,
      written_at_error: true
    });
    expect(json('summary', path.join(REC, 'oom--python', 'cell00.pickle.gz')).oom).toBeNull();
  });
});

describe('cuda-memdiff diff', () => {
  it('groups born blocks by allocation site with filtered frames', () => {
    const dir = path.join(REC, 'eval_without_no_grad--python');
    const out = json('diff', path.join(dir, 'cell01.pickle.gz'), path.join(dir, 'cell02.pickle.gz'));
    expect(out.net_bytes).toBe(504406016 - 167813120);
    expect(out.born_bytes - out.freed_bytes).toBe(out.net_bytes);
    const top = out.groups[0];
    expect(top.site).toEqual({ filename: '/tmp/ipykernel_447/3447429980.py', line: 3, name: '<module>' });
    expect(top.count).toBeGreaterThan(0);
    expect(top.frames.some((f: { filename?: string }) => f.filename?.includes('site-packages'))).toBe(false);
    const all = json('diff', path.join(dir, 'cell01.pickle.gz'), path.join(dir, 'cell02.pickle.gz'), '--all-frames');
    expect(all.groups[0].frames.some((f: { filename?: string }) => f.filename?.includes('site-packages/torch'))).toBe(
      true
    );
  });

  it('prints the summary line, the groups and a stack', () => {
    const dir = path.join(REC, 'eval_without_no_grad--python');
    const r = cli('diff', path.join(dir, 'cell01.pickle.gz'), path.join(dir, 'cell02.pickle.gz'));
    expect(r.out).toMatch(/^born 321 MiB in \d+ blocks, freed 0 B in 0 blocks, net \+321 MiB/);
    expect(r.out).toMatch(/3447429980\.py:3 in <module>/);
  });

  it('names a site by its cell, as session does, when both files are snapshots of one session folder', () => {
    const dir = path.join(ROOT, 'test-data', 'live', 'history--python');
    const [before, after] = ['cell00.pickle.gz', 'cell01.pickle.gz'].map(f => path.join(dir, f));
    const rows = cli('diff', before, after).out.split('\n').slice(4, 8);
    expect(rows.map(r => r.replace(/^.*\d +/, ''))).toEqual([
      'Cell [1], line 2',
      'Cell [2], line 2',
      'Cell [1], line 3',
      'Cell [2], line 4'
    ]);
    expect(cli('session', dir).out).toMatch(/^Cell \[2\] peak 288 MiB: 256 MiB from Cell \[2\], line 2, /m);
    // --json keeps the kernel's file name and says which cell's code it is
    const [top] = json('diff', before, after).groups;
    expect(top.site.filename).toMatch(/^\/tmp\/ipykernel_\d+\/\d+\.py$/);
    expect(top.frames[0].cells).toEqual([{ index: '0', execution_count: 1 }]);
    // a file from elsewhere: no manifest lists both, so no cell names
    const other = path.join(REC, 'out_cache--python', 'cell00.pickle.gz');
    expect(cli('diff', other, after).out).toMatch(/^ *[+-][\d.]+ MiB .* \/tmp\/ipykernel_\d+\/\d+\.py:2 <module>$/m);
  });

  it('names the run that allocated each block where two cells of the folder ran the same code', () => {
    // eval_without_no_grad: [3] and [5] run identical code. From [2] to [5] survive [3]'s 33 MiB of cuBLAS
    // workspace and [5]'s 288 MiB of graphs; from [4] to [5], [5] frees [3]'s graphs and builds its own.
    // Was one row, "+321 MiB ... Cell [5], line 3", and "-288 ... Cell [5]" for what [3] had made.
    const dir = path.join(REC, 'eval_without_no_grad--python');
    const rows = (a: string, b: string) =>
      cli('diff', path.join(dir, a), path.join(dir, b))
        .out.split('\n')
        .filter(l => / \d+ {2}Cell \[/.test(l));
    expect(rows('cell01.pickle.gz', 'cell04.pickle.gz')).toEqual([
      ' +288 MiB   288 MiB    0 B      24  Cell [5], line 3',
      '+33.0 MiB  33.0 MiB    0 B       2  Cell [3], line 3'
    ]);
    expect(rows('cell03.pickle.gz', 'cell04.pickle.gz')).toEqual([
      '+288 MiB  288 MiB      0 B      24  Cell [5], line 3',
      '-288 MiB      0 B  288 MiB      24  Cell [3], line 3'
    ]);
    const groups = json('diff', path.join(dir, 'cell03.pickle.gz'), path.join(dir, 'cell04.pickle.gz')).groups;
    expect(groups.map((g: { run: number; net_bytes: number }) => [g.run, g.net_bytes])).toEqual([
      [4, 288 * 2 ** 20],
      [2, -288 * 2 ** 20]
    ]);
  });

  it('still diffs two files beside a manifest that cannot be read, by file name', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-'));
    for (const f of ['cell00.pickle.gz', 'cell01.pickle.gz']) {
      fs.copyFileSync(path.join(ROOT, 'test-data', 'live', 'history--python', f), path.join(dir, f));
    }
    fs.writeFileSync(path.join(dir, 'manifest.json'), '{"cells": ');
    const r = cli('diff', path.join(dir, 'cell00.pickle.gz'), path.join(dir, 'cell01.pickle.gz'));
    fs.rmSync(dir, { recursive: true, force: true });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\/tmp\/ipykernel_\d+\/\d+\.py:2 <module>$/m);
  });

  it('counts one block as one block', () => {
    const dir = path.join(REC, 'out_cache--python');
    const r = cli('diff', path.join(dir, 'cell00.pickle.gz'), path.join(dir, 'cell01.pickle.gz'));
    expect(r.out.split('\n')[0]).toBe('born 64.0 MiB in 1 block, freed 0 B in 0 blocks, net +64.0 MiB (1 block kept)');
  });
});

describe('cuda-memdiff leaks', () => {
  it('accounts for all of a leak the kernel confirmed: what only the graph holds and what names hold too', () => {
    // The demo's Cell [3]: "Leak 288 MiB", then "confirmed by the kernel: 256 MiB held only by autograd graph
    // of preds[0:8]", and nothing said of the other 32 MiB: the 8 outputs, which `preds` itself holds.
    const dir = path.join(ROOT, 'test-data', 'live', 'gpu_memory_demo--holders');
    expect(cli('leaks', dir).out).toContain(
      '  - confirmed by the kernel: 256 MiB held only by autograd graph of preds[0:8]; 32.0 MiB held by preds[0:8]\n'
    );
    const finding = json('leaks', dir).cells[2].findings.find(
      (f: { code: string }) => f.code === 'kernel-holders-leak'
    );
    expect([finding.bytes, finding.named.bytes]).toEqual([256 * 2 ** 20, 32 * 2 ** 20]);
    expect(finding.bytes + finding.named.bytes).toBe(json('leaks', dir).cells[2].leaked_bytes);
  });

  it("says how much of the demo's leak each fix frees, as the panel does, from the engine's parts", () => {
    // "Leak 288 MiB" with one fix, torch.no_grad(), which frees the 256 MiB autograd saved, not the 32 MiB
    // of outputs `preds` keeps: a user who applied it saw 32 MiB stay.
    const dir = path.join(ROOT, 'test-data', 'live', 'gpu_memory_demo--holders');
    const cell = json('leaks', dir).cells[2];
    const parts: { bytes: number; role: string; fixes: number[] }[] = cell.parts;
    expect(parts.reduce((n, p) => n + p.bytes, 0)).toBe(cell.leaked_bytes);
    const noGrad = cell.fixes.findIndex((f: { code: string }) => f.code === 'no-grad');
    const freed = (i: number) => parts.reduce((n, p) => n + (p.fixes.includes(i) ? p.bytes : 0), 0);
    const text = cli('leaks', dir).out;
    expect(text).toContain(
      `  fix (frees ${formatBytes(freed(noGrad))} of the ${formatBytes(cell.leaked_bytes)}): evaluate under \`torch.no_grad()\``
    );
    expect(text).toContain(
      `  fix (frees all ${formatBytes(cell.leaked_bytes)}): \`del preds\` once you are done with the tensors it keeps`
    );
  });

  it.each(fs.readdirSync(REC).filter(d => fs.existsSync(path.join(REC, d, 'manifest.json'))))(
    '%s: verdicts and top_leak match the manifest',
    dir => {
      const expected = JSON.parse(fs.readFileSync(path.join(REC, dir, 'manifest.json'), 'utf-8')).expected;
      const out = json('leaks', path.join(REC, dir));
      // Leaks a later cell fixed are `fixed` at the end, and never the top leak.
      const fixed: number[] = expected.fixed_cells ?? [];
      expect(out.top_leak).toBe(fixed.includes(expected.top_leak_cell) ? null : expected.top_leak_cell);
      expect(
        out.cells.filter((c: { verdict: string }) => c.verdict === 'leak').map((c: { index: number }) => c.index)
      ).toEqual(expected.leak_cells.filter((c: number) => !fixed.includes(c)));
      expect(
        out.cells
          .filter((c: { verdict: string }) => c.verdict === 'fixed')
          .map((c: { index: number; fixed_by: { index: number } }) => [c.index, c.fixed_by.index])
      ).toEqual(fixed.map(c => [c, expected.fixed_by]));
      for (const cell of out.cells) {
        // recorded with stacks: never `unknown`
        expect(['leak', 'fixed', 'retained', 'ok']).toContain(cell.verdict);
        expect(Number.isInteger(cell.retained_bytes)).toBe(true);
        expect(cell.reasons.length).toBeGreaterThan(0);
      }
    }
  );

  it('tells people which cell to look at first, why, and what to do', () => {
    const r = cli('leaks', path.join(REC, 'out_cache--python'));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^cell\s+snapshot\s+verdict\s+left\s+retained\s+leaked\s+why/);
    expect(r.out).toMatch(/Look at Cell \[2\] first \(high confidence\)/);
    expect(r.out).toMatch(/held by: Out\[2\]/);
    expect(r.out).toMatch(/fix: end the line with `;` or `del Out\[2\]`/);
    expect(cli('leaks', path.join(REC, 'clean_training--python')).out).toMatch(/No cell leaks\./);
  });

  it('wraps a long why under itself, within 100 columns, and keeps all of it', () => {
    // Before: control_clean's rows ran to 594 characters, which a terminal wrapped across the other columns.
    const dir = path.join(ROOT, 'test-data', 'live', 'control_clean--holders');
    const text = cli('leaks', dir).out;
    const table = text.slice(0, text.indexOf('\n\n')).split('\n');
    expect(table.length).toBeGreaterThan(6);
    expect(Math.max(...table.map(l => l.length))).toBeLessThanOrEqual(100);
    const reasons = json('leaks', dir)
      .cells.find((c: { index: number }) => c.index === 1)
      .reasons.join('; ');
    expect(unwrapped(text).split('\n')).toContain(
      ` [2]  cell01.pickle.gz  retained  89.3 MiB  81.2 MiB          ${reasons} (8.09 MiB freed later by Cell [3])`
    );
  });

  it('shows figures that add up: the leak is its evidence, and a row says where the rest went', () => {
    // gpu_memory_demo: "321 MiB" leaked was shown with "193 MiB in 18 block(s)" and "128 MiB in 8 block(s)" at one line;
    // then as 321 MiB in 26 blocks, the 33 MiB of cuBLAS workspace included: it is now said apart
    const demo = cli('leaks', path.join(REC, 'gpu_memory_demo--python')).out;
    expect(demo).toMatch(
      // named as the peak lines name a cell, not by ipykernel's file name for its code
      /^ {2}leaked: 288 MiB in 24 blocks, allocated at:\n {4}288 MiB in 24 blocks from Cell \[3\], line 3$/m
    );
    expect(demo).toMatch(/^ {2}- also keeps 33\.0 MiB of library workspace \(cuBLAS, cuDNN\).*not part of the leak$/m);
    // forward_hook_list: "retained 0 B / leaked 32 MiB" was a leak; cell 3 freed it: fixed, and by which cell
    const hook = unwrapped(cli('leaks', path.join(REC, 'forward_hook_list--python')).out);
    expect(hook).toMatch(
      /^ +\[3\] +cell02\.pickle\.gz +fixed +32\.0 MiB +0 B +32\.0 MiB +memory held by this code grew .*; fixed: the 32\.0 MiB it leaked was freed by Cell \[4\]$/m
    );
    expect(hook).toMatch(/No cell leaks\./);
    // losses_without_item: a 5 KiB leak is low confidence, and the earlier run leaked 5 KiB, not the 81 MiB it left
    const losses = cli('leaks', path.join(REC, 'losses_without_item--python')).out;
    expect(losses).toMatch(/Look at Cell \[3\] first \(low confidence\)/);
    expect(losses).toMatch(/^ +\[2\] +cell01\.pickle\.gz +leak +81\.0 MiB +65\.0 MiB +5\.00 KiB /m);
    for (const dir of fs.readdirSync(REC).filter(d => fs.existsSync(path.join(REC, d, 'manifest.json')))) {
      for (const c of json('leaks', path.join(REC, dir)).cells) {
        const freed = c.freed_later.reduce((n: number, f: { bytes: number }) => n + f.bytes, 0);
        expect(c.retained_bytes + freed).toBe(c.left_bytes);
        expect(c.evidence.reduce((n: number, e: { bytes: number }) => n + e.bytes, 0)).toBe(c.leaked_bytes);
      }
    }
  });

  it('gives the findings as data in --json, keyed like the rest of the JSON', () => {
    const out = json('leaks', path.join(REC, 'out_cache--python'));
    expect(out.cells.map((c: { execution: number; findings: unknown[] }) => [c.execution, c.findings])).toEqual([
      [0, [{ code: 'all-freed-later', bytes: 67108864, by: [2] }]],
      [1, [{ code: 'output-cache', bytes: 67108864, execution_count: 2, names: ['Out[2]'] }]],
      [2, [{ code: 'nothing-left' }]]
    ]);
  });

  it("names a cell as the panel does, by its prompt's count, not by the manifest index", () => {
    // As the panel exports it: the index counts the markdown cell before each code cell, from 0.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-markdown-'));
    fs.cpSync(path.join(REC, 'gpu_memory_demo--python'), dir, { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    manifest.cells.forEach((c: { index: number }, k: number) => (c.index = 2 * k + 1));
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
    const leaks = unwrapped(cli('leaks', dir).out);
    expect(leaks).toMatch(/^Look at Cell \[3\] first \(medium confidence\):$/m);
    expect(leaks).toMatch(/^ +288 MiB in 24 blocks from Cell \[3\], line 3$/m);
    // The table names each cell's snapshot file, which `diff` takes; the index (a notebook position) is --json's.
    expect(leaks).toMatch(/^ +\[3\] +cell02\.pickle\.gz +leak /m);
    expect(leaks).not.toMatch(/^cell +index/m);
    expect(json('leaks', dir).top_leak).toBe(5);
    const typed = cli('diff', path.join(dir, 'cell01.pickle.gz'), path.join(dir, 'cell02.pickle.gz'));
    expect(typed.code).toBe(0);
    expect(typed.out).toMatch(/^ *\+321 MiB .* Cell \[3\], line 3$/m);
    const session = cli('session', dir).out;
    expect(session).toMatch(/^Cell \[3\] peak 481 MiB: 321 MiB from Cell \[3\], line 3, /m);
    // No sentence names a cell any other way ("cell 5", "cell 5 [3]").
    expect(`${leaks}\n${session}`).not.toMatch(/\bcell \d/i);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives evidence with the stack back to the cell', () => {
    const out = json('leaks', path.join(REC, 'gpu_memory_demo--python'));
    const top = out.cells.find((c: { index: number }) => c.index === out.top_leak);
    expect(top.causes).toEqual(['graph']);
    const frames = top.evidence[0].stack.filter((f: { cells?: unknown }) => f.cells);
    expect(frames[frames.length - 1]).toEqual(
      expect.objectContaining({ line: 3, cells: [{ index: '2', execution_count: 3 }] })
    );
  });
});

describe('cuda-memdiff leaks on a session recorded with allocation history off', () => {
  // eval_without_no_grad as history `off` gives it: every block's stack empty, no trace.
  let dir: string;
  beforeAll(() => {
    const src = path.join(REC, 'eval_without_no_grad--python');
    const manifest = parseManifest(fs.readFileSync(path.join(src, 'manifest.json'), 'utf-8'));
    const frames = new FrameTable();
    const cells = manifest.cells.map(c => {
      const s = readSnapshot(new Uint8Array(fs.readFileSync(path.join(src, c.snapshot_file))), frames);
      const snapshot = {
        ...s,
        traces: [],
        blocks: s.blocks.map(b => ({ ...b, stack: 0 })),
        segments: s.segments.map(g => ({ ...g, stack: 0 }))
      };
      const cell = { index: c.index, executionCount: c.execution_count, source: c.source, cellId: null, error: null };
      return { ...cell, snapshot, oomSnapshots: [], devices: [] };
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-histoff-'));
    for (const [name, bytes] of sessionFolderFiles(cells)) {
      fs.writeFileSync(path.join(dir, name), bytes);
    }
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('says what no stack explains and how to record stacks, instead of "No cell leaks."', () => {
    // Before: every cell "keeps … of gradients and workspaces of the backward pass", then "No cell leaks."
    const r = cli('leaks', dir);
    expect(r.code).toBe(0);
    expect(unwrapped(r.out)).not.toMatch(/No cell leaks|backward pass/);
    expect(unwrapped(r.out)).toMatch(
      /^ +\[3\] +cell02\.pickle\.gz +unknown +321 MiB +201 MiB +201 MiB has no allocation stack \(history was off\)/m
    );
    expect(r.out).toMatch(
      /^No allocation stacks were recorded \(allocation history was off, or the snapshots kept none\): for 513 MiB in 5 cells /m
    );
    expect(r.out).toMatch(/^Start with Cell \[3\], which keeps the most of it: 201 MiB \(low confidence\)\.$/m);
    expect(r.out).toMatch(
      /^To see causes and lines: turn allocation history on .*Allocation history, `all` or `state`/m
    );
    const out = json('leaks', dir);
    expect(out.top_leak).toBeNull();
    expect(out.no_stacks).toEqual({ bytes: 537960448, cells: [0, 1, 2, 4, 5] });
    expect(out.cells[2]).toMatchObject({
      verdict: 'unknown',
      confidence: 'low',
      findings: [{ code: 'no-stacks', bytes: 210763776 }]
    });
  });

  it('leaves the JSON of a session with stacks without no_stacks', () => {
    expect(json('leaks', path.join(REC, 'eval_without_no_grad--python'))).not.toHaveProperty('no_stacks');
  });
});

describe('cuda-memdiff diff --ranks', () => {
  const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');

  it('names the capture point as the ranks table does, with the index --point takes', () => {
    expect(cli('session', ranks).out).toMatch(/^step 5 +105 MiB +361 MiB$/m);
    expect(cli('diff', ranks, '--ranks', '0,1').out.split('\n')[0]).toBe(
      'Rank 0 against rank 1 at step 5 (point 4), live memory by allocation site:'
    );
    expect(json('diff', ranks, '--ranks', '0,1', '--point', '0')).toEqual({
      point: 0,
      label: 'step 1',
      a: 0,
      b: 1,
      sites: []
    });
  });

  it('says which points there are when --point K is the step number, not the index', () => {
    const r = cli('diff', ranks, '--ranks', '0,1', '--point', '5');
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      `cuda-memdiff: ${ranks}: rank 0 has no capture point 5: its points are 0 (step 1) to 4 (step 5)\n`
    );
  });

  it('names the folder of a rank it does not have, as session --rank does', () => {
    // Before: "no rank 5 in this session (ranks: 0, 1)", where session --rank 7 named the folder.
    const r = cli('diff', ranks, '--ranks', '0,5');
    expect(r.code).toBe(2);
    expect(r.err).toBe(`cuda-memdiff: ${ranks}: no rank 5 (ranks: 0, 1)\n`);
    expect(cli('session', ranks, '--rank', '7').err).toBe(`cuda-memdiff: ${ranks}: no rank 7 (ranks: 0, 1)\n`);
    expect(cli('leaks', ranks, '--rank', '7').err).toBe(`cuda-memdiff: ${ranks}: no rank 7 (ranks: 0, 1)\n`);
  });
});

describe('cuda-memdiff session and leaks of one rank', () => {
  const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
  // Before: "Cell [ ] (index 3)" and a `[ ]` cell column, where the ranks table said "step 4".

  it('names each capture point by its label, as the ranks table does', () => {
    const session = cli('session', ranks, '--rank', '1');
    expect(session.code).toBe(0);
    expect(session.out).not.toMatch(/Cell \[ \]|\[ \]/);
    expect(session.out).toMatch(/^step 4 +point0003\.pickle\.gz +297 MiB +318 MiB +\+64\.0 MiB /m);
    expect(session.out).toMatch(/^step 4 peak 305 MiB: /m);
    const leaks = cli('leaks', ranks, '--rank', '1');
    expect(leaks.out).not.toMatch(/Cell \[ \]|\[ \]/);
    expect(unwrapped(leaks.out)).toMatch(
      /^step 4 +point0003\.pickle\.gz +leak .*\(step 3 → step 4\) \(8\.01 MiB freed later by step 5\)$/m
    );
    expect(leaks.out).toMatch(/^Look at step 5 first \(high confidence\):$/m);
    // The rank's own folder, given directly, is the same session.
    expect(cli('session', path.join(ranks, 'rank1')).out).toBe(session.out);
  });

  it('adds the label to --json, and only on labelled cells', () => {
    expect(json('session', ranks, '--rank', '1').cells[3]).toMatchObject({ index: 3, label: 'step 4' });
    expect(json('leaks', ranks, '--rank', '1').cells[3]).toMatchObject({ index: 3, label: 'step 4' });
    expect(json('session', path.join(REC, 'out_cache--python')).cells[0]).not.toHaveProperty('label');
  });

  it('escapes a label that would start a line of its own', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-label-'));
    try {
      fs.cpSync(path.join(ranks, 'rank1'), dir, { recursive: true });
      const file = path.join(dir, 'manifest.json');
      const manifest = JSON.parse(fs.readFileSync(file, 'utf-8'));
      manifest.cells[4].label = 'after eval\nforged line';
      fs.writeFileSync(file, JSON.stringify(manifest));
      for (const command of ['session', 'leaks']) {
        const r = cli(command, dir);
        expect(r.out).toMatch(/after eval\\x0aforged line/);
        expect(r.out).not.toMatch(/^forged line/m);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cuda-memdiff session on ranks, one with too few capture points', () => {
  // test-data/ranks/ddp_one_gpu with rank 1 cut to its first point.
  let dir: string;
  beforeAll(() => {
    const src = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-ranks-'));
    fs.cpSync(src, dir, { recursive: true });
    const file = path.join(dir, 'rank1', 'manifest.json');
    const manifest = JSON.parse(fs.readFileSync(file, 'utf-8'));
    fs.writeFileSync(file, JSON.stringify({ ...manifest, cells: manifest.cells.slice(0, 1) }));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('says that rank has too few steps to tell, not that every rank is flat', () => {
    const r = cli('session', dir);
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(/Every rank/);
    expect(r.out).toMatch(
      /^Rank 0 is flat from step to step\. Rank 1 has fewer than two optimizer-step capture points: too few steps to tell\.$/m
    );
    expect(json('session', dir).verdict).toEqual({ code: 'all-flat', unmeasured: [1] });
  });
});

describe('cuda-memdiff session', () => {
  it('says what a peak line leaves out, so its sites add up to what --json lists', () => {
    // Was "Cell [6] peak 541 MiB: 321 MiB ..., 128 MiB ..., 60.0 MiB ...": 509 MiB, a 32 MiB site dropped unsaid.
    const dir = path.join(REC, 'eval_without_no_grad--python');
    expect(cli('session', dir).out).toMatch(
      /^Cell \[6\] peak 541 MiB: 288 MiB from Cell \[5\], line 3, 128 MiB from Cell \[1\], line 3, 60\.0 MiB from Cell \[6\], line 2, 65\.0 MiB from 2 more sites$/m
    );
    // Every recording: a peak line's figures add up to its sites in --json (to the 3 digits figures are shown with).
    const UNITS: { [unit: string]: number } = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 };
    for (const name of fs.readdirSync(REC).filter(d => fs.existsSync(path.join(REC, d, 'manifest.json')))) {
      const cells = json('session', path.join(REC, name)).cells;
      const lines = cli('session', path.join(REC, name)).out.split('\n');
      for (const c of cells.filter((c: { peak: unknown }) => c.peak)) {
        const line = lines.find(l => l.startsWith(`Cell [${c.execution_count}] peak `));
        const shown = [...(line ?? '').matchAll(/([\d.]+) (B|KiB|MiB|GiB) from /g)];
        const sum = shown.reduce((n, m) => n + Number(m[1]) * UNITS[m[2]], 0);
        const listed = c.peak.sites.reduce((n: number, site: { bytes: number }) => n + site.bytes, 0);
        expect([name, c.execution_count, Math.abs(sum - listed) <= listed * 0.005]).toEqual([
          name,
          c.execution_count,
          true
        ]);
      }
    }
  });

  it('refuses manifest fields of the wrong kind by name, and reads nbformat sources given as lines', () => {
    const recording = path.join(REC, 'eval_without_no_grad--python');
    const manifest = JSON.parse(fs.readFileSync(path.join(recording, 'manifest.json'), 'utf-8'));
    function withCell(change: (cell: Record<string, unknown>) => void) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-manifest-'));
      for (const f of fs.readdirSync(recording)) {
        fs.copyFileSync(path.join(recording, f), path.join(dir, f));
      }
      const copy = JSON.parse(JSON.stringify(manifest));
      change(copy.cells[2]);
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(copy));
      return dir;
    }
    const refused: [(cell: Record<string, unknown>) => void, string][] = [
      [c => (c.oom_snapshots = 'oom00.pickle.gz'), 'cells[2] oom_snapshots must be a list of names'],
      [c => ((c.after as Record<string, number>).max_allocated = -5), 'cells[2] after max_allocated must be a whole'],
      [c => (c.index = 1.5), 'cells[2] index must be an integer'],
      // read as its position, a quoted index would name another cell than the one the manifest says
      [c => (c.index = '2'), 'cells[2] index must be an integer'],
      [c => (c.execution_count = 'two'), 'cells[2] execution_count must be a whole number or null'],
      [c => (c.source = 42), 'cells[2] source must be a string or a list of lines']
    ];
    for (const [change, message] of refused) {
      const r = cli('session', withCell(change));
      expect(r.code).not.toBe(0);
      expect(r.err.trim().split('\n')).toEqual([expect.stringContaining(message)]);
    }
    // A holders file that is no JSON is left out of its cell, and said first: the session is still reported.
    const holders = cli(
      'session',
      withCell(c => (c.holders_file = 'cell00.pickle.gz'))
    );
    expect([holders.code, holders.err]).toEqual([0, '']);
    expect(holders.out.split('\n')[0]).toBe("Cell [3]'s holders left out: cell00.pickle.gz cannot be read as JSON");
    // nbformat's list of lines is the same source: cell 2 keeps its code name, so its leak stays its own
    const lines = json(
      'leaks',
      withCell(c => (c.source = (c.source as string).split(/(?<=\n)/)))
    );
    expect(lines.top_leak).toBe(json('leaks', recording).top_leak);
  });

  it("credits a re-run cell's own allocations at its peak to that run, not to the first copy of its code", () => {
    // Cells 2 and 4 run the same code (preds.append(model(b)) outside no_grad). Per the trace's snapshot
    // markers, at cell 4's peak 288 MiB were allocated by cell 4's run and 33 MiB were cell 2's still alive.
    const out = json('session', path.join(REC, 'eval_without_no_grad--python'));
    const sites = out.cells[4].peak.sites.filter((s: { line: number; cell: number }) => s.line === 3 && s.cell !== 0);
    expect(sites.map((s: { cell: number; bytes: number }) => [s.cell, s.bytes])).toEqual([
      [4, 288 * 2 ** 20],
      [2, 34603008]
    ]);
  });

  it('credits what was alive at a peak to the run that allocated it, as the leak finder and the diff rows do', () => {
    // Cells [3] and [5] run identical code (one file name). [5] freed [3]'s 288 MiB of graphs and made its own;
    // [6]'s peak holds [5]'s 288 MiB and [3]'s 33 MiB of cuBLAS workspace. Was "321 MiB from Cell [3], line 3".
    const dir = path.join(REC, 'eval_without_no_grad--python');
    const text = cli('session', dir).out;
    expect(text).toMatch(/^Cell \[6\] peak 541 MiB: 288 MiB from Cell \[5\], line 3, /m);
    const sixth = json('session', dir).cells[5].peak.sites;
    expect(
      sixth.filter((s: { line: number }) => s.line === 3).map((s: { cell: number; bytes: number }) => [s.cell, s.bytes])
    ).toEqual([
      [4, 288 * 2 ** 20],
      [0, 134258688],
      [2, 33 * 2 ** 20]
    ]);
    // the leak finder blames the same run for the same bytes
    expect(cli('leaks', dir).out).toContain('288 MiB in 24 blocks from Cell [5], line 3');
    // [5]'s diff: what it made, and what it freed of [3]'s, each by its run
    const [made, freed] = json('session', dir).cells[4].top_sites;
    expect([made.run, made.born_bytes, made.freed_bytes]).toEqual([4, 288 * 2 ** 20, 0]);
    expect([freed.run, freed.born_bytes, freed.freed_bytes]).toEqual([2, 0, 288 * 2 ** 20]);
    // copies of one cell's code: cells [2] and [3] of history--python; [3] replaced [2]'s buffers before [4]
    expect(cli('session', path.join(ROOT, 'test-data', 'live', 'history--python')).out).toMatch(
      /^Cell \[4\] peak 808 MiB: 512 MiB from Cell \[4\], line 2, 256 MiB from Cell \[3\], line 2, 32\.0 MiB from Cell \[3\], line 4, /m
    );
  });

  it("names a cell's top site by the cell, as its peak line does, and a re-run's by that run", () => {
    const rows = cli('session', path.join(REC, 'eval_without_no_grad--python'))
      .out.split('\n')
      .filter(l => /^ +\[\d+\] +cell\d+\.pickle\.gz /.test(l));
    // the top site column: cell 2's code allocated in Cell [3], then again (the same code) in Cell [5]
    expect(rows.map(l => / {2}(Cell \[\d+\], line \d+)$/.exec(l)?.[1] ?? '')).toEqual([
      'Cell [1], line 3',
      'Cell [2], line 1',
      'Cell [3], line 3',
      '', // it changed nothing
      'Cell [5], line 3',
      'Cell [6], line 2'
    ]);
  });

  it('reports each cell with nets that match the recording', () => {
    const dir = path.join(REC, 'clean_training--python');
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    const out = json('session', dir);
    expect(out.cells.map((c: { net_bytes: number }) => c.net_bytes)).toEqual(
      manifest.cells.map(
        (c: { after: { allocated: number }; before: { allocated: number } }) => c.after.allocated - c.before.allocated
      )
    );
    expect(out.cells[1]).toMatchObject({
      index: 1,
      execution_count: 2,
      allocated_bytes: 71780352,
      peak_bytes: 409529856
    });
    // notebook frames name the cell they belong to
    const frame = out.cells[0].top_sites[0].frames.find((f: { cells?: unknown }) => f.cells);
    expect(frame.cells).toEqual([{ index: '0', execution_count: 1 }]);
  });

  it('gives the OOM cell its post-mortem: the request, the free memory and who held the device', () => {
    // oom--python: five 20 GiB tensors from cell 0, line 3; cell 1 asks for 60 GiB with 39.29 GiB free.
    const out = json('session', path.join(REC, 'oom--python'));
    expect(out.cells[0].oom).toBe(false);
    expect(out.cells[2].oom).toBe(false);
    expect(out.cells[1].oom).toEqual({
      request_bytes: 60 * 2 ** 30,
      device_free_bytes: 42183294976,
      largest_free_block_bytes: 0,
      segment_free_bytes: 0,
      fragmentation: false,
      short_bytes: 60 * 2 ** 30 - 42183294976
    });
    const text = cli('session', path.join(REC, 'oom--python')).out;
    expect(text).toContain(
      "Cell [2] ran out of memory on cuda:0: it asked for 60.0 GiB; the device had 39.3 GiB free, and PyTorch's segments 0 B free"
    );
    expect(text).toContain('the device held: 100 GiB from Cell [1], line 3');
  });

  it('gives each cell its peak from the recorded history, by allocating cell and line', () => {
    const out = json('session', path.join(REC, 'oom--python'));
    expect(out.cells.map((c: { peak: { bytes: number } }) => c.peak.bytes)).toEqual([
      100 * 2 ** 30,
      100 * 2 ** 30,
      100 * 2 ** 30
    ]);
    expect(out.cells[0].peak).toEqual({
      bytes: 100 * 2 ** 30,
      sites: [{ cell: 0, line: 3, filename: '/tmp/ipykernel_709/1313211645.py', bytes: 100 * 2 ** 30 }]
    });
  });
});

describe('cuda-memdiff session on a function one cell defines and another calls', () => {
  it('names the function at the peak, at the line of the cell that defines it', () => {
    // exception_kept: cell 0 defines train_step (x at line 6, h at line 7); cell 1 calls it.
    const text = cli('session', path.join(ROOT, 'test-data', 'live', 'exception_kept--holders')).out;
    expect(text).toMatch(
      /^Cell \[2\] peak 353 MiB: 161 MiB from train_step \(Cell \[1\], line 7\), 128 MiB from train_step \(Cell \[1\], line 6\), 64\.0 MiB from Cell \[1\], line 4$/m
    );
  });
});

describe('cuda-memdiff session on OOMs the adversarial run found misread', () => {
  // Built from the recordings as /work/adv/geno.py and gent.py built them (../../engine/__tests__/oomCases.ts).
  let tmp: string;
  /** A copy of a recording with its manifest edited and, when given, the cell's OOM snapshot written. */
  function sessionFrom(name: string, cell: number, atOom: Snapshot | null): string {
    const dir = path.join(tmp, name);
    fs.cpSync(path.join(REC, name), dir, { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    manifest.cells[cell].oom_snapshots = atOom ? ['oom00.pickle.gz'] : [];
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
    if (atOom) {
      fs.writeFileSync(path.join(dir, 'oom00.pickle.gz'), snapshotToPickle(atOom));
    }
    return dir;
  }
  beforeAll(() => (tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-oom-'))));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("describes the newest OOM of two devices, with that device's figures and holders", () => {
    const dir = sessionFrom('multi_gpu_split--python', 3, twoDeviceOom().atOom);
    expect(json('session', dir).cells[3].oom).toEqual({
      request_bytes: 10 * 2 ** 30,
      device_free_bytes: 5 * 2 ** 30,
      largest_free_block_bytes: 16 * 2 ** 20,
      segment_free_bytes: 17809408,
      fragmentation: false,
      short_bytes: 10 * 2 ** 30 - 5 * 2 ** 30 - 17809408
    });
    const text = cli('session', dir).out;
    expect(text).toContain('Cell [4] ran out of memory on cuda:0: it asked for 10.0 GiB; the device had 5.00 GiB free');
    // cuda:0's 113 MiB, not cuda:1's 161 MiB blocks of Cell [3]
    expect(text).toContain(
      'the device held: 64.0 MiB from Cell [1], line 3, 33.0 MiB from Cell [3], line 2, 16.0 MiB from Cell [2], line 1'
    );
  });

  it('reports an OOM that only the cell history records, from the cell end, and says so', () => {
    const dir = sessionFrom('oom--python', 1, null);
    const cells = json('session', dir).cells;
    expect(cells.map((c: { oom: unknown }) => typeof c.oom)).toEqual(['boolean', 'object', 'boolean']);
    expect(cells[1].oom).toEqual({
      request_bytes: 60 * 2 ** 30,
      device_free_bytes: 42183294976,
      largest_free_block_bytes: 0,
      segment_free_bytes: 0,
      fragmentation: false,
      // the segments are of the cell end, the free memory of the error: not added up
      short_bytes: null
    });
    const text = cli('session', dir).out;
    expect(text).toMatch(/^ +\[2\] +cell01\.pickle\.gz .* OOM/m);
    expect(text).toContain(
      'Cell [2] ran out of memory on cuda:0: it asked for 60.0 GiB; the device had 39.3 GiB free, ' +
        "and after the cell (no snapshot was taken at the error) PyTorch's segments had 0 B free"
    );
    expect(text).toContain('the device held after the cell: 100 GiB from Cell [1], line 3');
  });

  it('does not suggest expandable segments when they are already on', () => {
    const on = cli('session', sessionFrom('eval_without_no_grad--python', 2, fragmentedOom(true).atOom)).out;
    expect(on).toContain(
      'no free block is big enough; expandable segments are already on, so that setting will not help'
    );
    expect(on).not.toContain('expandable_segments:True');
    fs.rmSync(path.join(tmp, 'eval_without_no_grad--python'), { recursive: true });
    const off = cli('session', sessionFrom('eval_without_no_grad--python', 2, fragmentedOom(false).atOom)).out;
    expect(off).toContain('no free block is big enough; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True');
  });
});

describe('an export made across a kernel restart', () => {
  // test-data/make_restart_session.js: eval_without_no_grad, restart, its first two cells again.
  const dir = path.join(ROOT, 'test-data', 'exports', 'eval_without_no_grad--restart');

  it('session shows the restart: a line in the table, kernel_session per cell, kernel 2 from an empty device', () => {
    const r = cli('session', dir);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    const marker = lines.findIndex(l => /kernel restarted: kernel 2 starts from an empty device/.test(l));
    expect(marker).toBe(2 + 6);
    expect(lines[marker + 1]).toMatch(/^\s+\[1\]\s+cell06\.pickle\.gz\s+128 MiB\s+130 MiB\s+\+128 MiB/);
    const out = json('session', dir);
    expect(out.cells.map((c: { kernel_session: number }) => c.kernel_session)).toEqual([1, 1, 1, 1, 1, 1, 2, 2]);
    expect(out.cells.map((c: { after_restart: boolean }) => c.after_restart)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      true,
      false
    ]);
    expect(out.cells[6]).toMatchObject({ net_bytes: 134258688, freed_bytes: 0 });
  });

  it("leaks still finds kernel 1's leak and names the restart, not a cell, as what ended it", () => {
    const out = json('leaks', dir);
    expect(out.top_leak).toBe(4);
    const leaks = out.cells.filter((c: { verdict: string }) => c.verdict === 'leak');
    expect(leaks.map((c: { index: number; kernel_session: number }) => [c.index, c.kernel_session])).toEqual([
      [2, 1],
      [4, 1]
    ]);
    expect(leaks.every((c: { ended_by_restart: boolean }) => c.ended_by_restart)).toBe(true);
    const r = cli('leaks', dir);
    expect(r.out).not.toMatch(/No cell leaks/);
    expect(r.out).not.toMatch(/freed later \(by Cell \[1\]/);
    expect(r.out).toMatch(/^cell\s+snapshot\s+kernel\s+verdict/);
    expect(r.out).toMatch(/Look at Cell \[5\] first \(kernel 1 of 2, /);
    expect(r.out).toMatch(/ended by: the kernel restart after Cell \[6\], not by a cell/);
  });
});

describe('the demo exported across a restart (two real kernels)', () => {
  const dir = path.join(ROOT, 'test-data', 'exports', 'gpu_memory_demo--restart');

  it('leaks finds the demo\'s leak instead of "No cell leaks ... all freed later (by Cell [1])"', () => {
    const r = cli('leaks', dir);
    expect(r.code).toBe(0);
    expect(unwrapped(r.out)).not.toMatch(/No cell leaks|freed later/);
    expect(unwrapped(r.out)).toMatch(
      /^ +\[3\] +cell02\.pickle\.gz +1 +leak +321 MiB +321 MiB +288 MiB +keeps 288 MiB .*\(until the kernel restarted after Cell \[4\]\)$/m
    );
    expect(r.out).toMatch(/Look at Cell \[3\] first \(kernel 1 of 2, medium confidence\)/);
    const out = json('leaks', dir);
    expect(out.top_leak).toBe(2);
    expect(out.cells.map((c: { kernel_session: number }) => c.kernel_session)).toEqual([1, 1, 1, 1, 2, 2]);
  });

  it("numbers an older export's kernels 1 and 2 too, as its text does, whatever numbers the file holds", () => {
    // Exports made before kernels were numbered in order hold the frontend's own count (0 then 1, or 1 then 4).
    const older = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-older-'));
    fs.cpSync(dir, older, { recursive: true });
    const manifestPath = path.join(older, 'manifest.json');
    const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf-8'));
    manifest.cells.forEach((c: { kernel_session: number }, k: number) => (c.kernel_session = k < 4 ? 1 : 4));
    fs.writeFileSync(manifestPath, JSON.stringify(manifest));
    const kernels = (command: string) =>
      json(command, older).cells.map((c: { kernel_session: number }) => c.kernel_session);
    expect(kernels('session')).toEqual([1, 1, 1, 1, 2, 2]);
    expect(kernels('leaks')).toEqual([1, 1, 1, 1, 2, 2]);
    expect(cli('session', older).out).toMatch(/kernel restarted: kernel 2 starts from an empty device/);
    fs.rmSync(older, { recursive: true, force: true });
  });

  it('session starts kernel 2 from an empty device', () => {
    const r = cli('session', dir);
    expect(r.out).toMatch(
      /\n~~ kernel restarted: kernel 2 starts from an empty device ~~\n +\[1\] +cell04\.pickle\.gz +128 MiB +130 MiB +\+128 MiB +128 MiB +128 MiB +0 B +Cell \[1\], line 4$/m
    );
  });

  it("says which kernel each peak line is about (before: kernel 1's and kernel 2's Cell [1] read alike)", () => {
    const peaks = cli('session', dir)
      .out.split('\n')
      .filter(line => /^Cell .* peak /.test(line));
    expect(peaks).toEqual([
      'Cell [1] in kernel 1 peak 128 MiB: 128 MiB from Cell [1], line 4',
      'Cell [2] in kernel 1 peak 160 MiB: 128 MiB from Cell [1], line 4, 32.0 MiB from Cell [2], line 1',
      expect.stringMatching(/^Cell \[3\] in kernel 1 peak 481 MiB: /),
      expect.stringMatching(/^Cell \[4\] in kernel 1 peak 541 MiB: /),
      'Cell [1] in kernel 2 peak 128 MiB: 128 MiB from Cell [1], line 4',
      'Cell [2] in kernel 2 peak 160 MiB: 128 MiB from Cell [1], line 4, 32.0 MiB from Cell [2], line 1'
    ]);
  });

  it('names each snapshot file in the table, so a user can diff what they read', () => {
    const table = cli('session', dir).out.split('\n\n')[0];
    expect(table.split('\n')[0]).toMatch(/^cell +snapshot +allocated /);
    const files = [...table.matchAll(/ (cell\d\d\.pickle\.gz) /g)].map(m => m[1]);
    expect(files).toEqual(['cell00', 'cell01', 'cell02', 'cell03', 'cell04', 'cell05'].map(f => `${f}.pickle.gz`));
    const out = json('session', dir);
    expect(out.cells.map((c: { snapshot_file: string }) => c.snapshot_file)).toEqual(files);
    expect(json('leaks', dir).cells.map((c: { snapshot_file: string }) => c.snapshot_file)).toEqual(files);
  });
});

describe('bad input', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-'));
    fs.writeFileSync(path.join(tmp, 'empty.pickle'), '');
    fs.writeFileSync(
      path.join(tmp, 'corrupt.pickle.gz'),
      Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from('not gzip at all')])
    );
    const real = fs.readFileSync(path.join(REC, 'oom--python', 'cell00.pickle.gz'));
    const raw = require('fflate').gunzipSync(new Uint8Array(real));
    fs.writeFileSync(path.join(tmp, 'truncated.pickle'), raw.subarray(0, raw.length >> 1));
    fs.writeFileSync(path.join(tmp, 'list.pickle'), Buffer.from([0x80, 4, 0x5d, 0x2e]).subarray(0, 4));
    fs.writeFileSync(path.join(tmp, 'notsnap.pickle'), Buffer.from([0x80, 4, 0x4b, 1, 0x2e]));
    fs.writeFileSync(
      path.join(tmp, 'evil.pickle'),
      Buffer.from('\x80\x02cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.', 'latin1')
    );
    fs.writeFileSync(path.join(tmp, 'text.json.gz'), gzipSync(new TextEncoder().encode('{"segments": 3}')));
    fs.mkdirSync(path.join(tmp, 'nocells'));
    fs.writeFileSync(path.join(tmp, 'nocells', 'manifest.json'), JSON.stringify({ cells: [] }));
    // eval_without_no_grad with its cells listed last first: its leak read as "No cell leaks."
    const recording = path.join(REC, 'eval_without_no_grad--python');
    fs.cpSync(recording, path.join(tmp, 'reversed'), { recursive: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(recording, 'manifest.json'), 'utf-8'));
    manifest.cells.reverse();
    fs.writeFileSync(path.join(tmp, 'reversed', 'manifest.json'), JSON.stringify(manifest));
    fs.cpSync(recording, path.join(tmp, 'oomnumber'), { recursive: true });
    manifest.cells.reverse();
    manifest.cells[1].oom_snapshots = [5];
    fs.writeFileSync(path.join(tmp, 'oomnumber', 'manifest.json'), JSON.stringify(manifest));
    fs.mkdirSync(path.join(tmp, 'nomanifest'));
    fs.mkdirSync(path.join(tmp, 'missing'));
    fs.writeFileSync(
      path.join(tmp, 'missing', 'manifest.json'),
      JSON.stringify({ cells: [{ index: 0, execution_count: 1, source: '', snapshot_file: 'cell00.pickle.gz' }] })
    );
  });
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it.each([
    [['leaks', 'nowhere'], /nowhere: no such folder/],
    [['leaks', 'nomanifest'], /nomanifest: no manifest\.json/],
    [['leaks', 'missing'], /manifest\.json names cell00\.pickle\.gz, which cannot be read/],
    [['summary', 'nope.pickle'], /nope\.pickle: no such file/],
    [['summary', 'empty.pickle'], /empty\.pickle: empty file/],
    [['summary', 'corrupt.pickle.gz'], /corrupt\.pickle\.gz: corrupt gzip data/],
    [['summary', 'truncated.pickle'], /truncated\.pickle: truncated pickle/],
    [['summary', 'notsnap.pickle'], /notsnap\.pickle: not a snapshot/],
    [['summary', 'evil.pickle'], /evil\.pickle: refused pickle: it imports posix\.system/],
    [['summary', 'text.json.gz'], /text\.json\.gz: not a snapshot/],
    [['diff', 'nope.pickle', 'empty.pickle'], /nope\.pickle: no such file/],
    [['session', 'nomanifest'], /nomanifest: no manifest\.json/],
    [['session', 'missing'], /manifest\.json names cell00\.pickle\.gz, which cannot be read/],
    [['session', 'nowhere'], /nowhere: no such folder/],
    [['session', 'nocells'], /nocells\/manifest\.json: lists no cells, so there is nothing to report/],
    [['leaks', 'nocells'], /nocells\/manifest\.json: lists no cells/],
    [
      ['leaks', 'reversed'],
      /^cuda-memdiff: \S+\/reversed\/manifest\.json: cells are not in execution order: cells\[\d+\] \(Cell \[6\]\) comes before cells\[\d+\] \(Cell \[5\]\)/
    ],
    [['session', 'oomnumber'], /manifest\.json cells\[1\] oom_snapshots\[0\] must be a name inside the folder, not 5/]
  ])('%j exits non-zero with one clear line', (args, message) => {
    const resolved = (args as string[]).map((a, i) => (i === 0 ? a : path.join(tmp, a)));
    const r = cli(...resolved);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(message as RegExp);
  });

  it('says which command reads a folder and which a file when given the other, not "no such folder"', () => {
    const session = path.join(REC, 'oom--python');
    const file = path.join(session, 'cell00.pickle.gz');
    const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
    for (const [args, message] of [
      [
        ['summary', session],
        `${session}: is a session folder, not a snapshot file: read it with \`cuda-memdiff session\``
      ],
      [['diff', file, ranks], `${ranks}: is a multi-rank folder, not a snapshot file`],
      [['session', file], `${file}: is a file, not a session folder: \`cuda-memdiff summary\` reads one snapshot file`],
      [['leaks', file], `${file}: is a file, not a session folder`]
    ] as const) {
      const r = cli(...args);
      expect(r.code).toBe(2);
      expect(r.err.trim().split('\n')).toEqual([expect.stringContaining(`cuda-memdiff: ${message}`)]);
    }
    // a folder that is neither still says only what it is
    expect(cli('summary', REC).err).toBe(`cuda-memdiff: ${REC}: is a folder, not a file\n`);
  });

  it('says a notebook is one, and how to get a snapshot or a session folder from it', () => {
    // Before: "not a snapshot: expected a dict with a 'segments' list, ..." and, for session, "is a file".
    const notebook = path.join(ROOT, 'test-data', 'notebooks', 'out_cache.ipynb');
    for (const args of [
      ['summary', notebook],
      ['diff', notebook, notebook]
    ]) {
      const r = cli(...args);
      expect(r.code).toBe(2);
      expect(r.err).toBe(
        `cuda-memdiff: ${notebook}: is a Jupyter notebook, not a snapshot: ` +
          'call torch.cuda.memory._dump_snapshot("snap.pickle") in it, or run it in JupyterLab with this extension ' +
          'and use Save CUDA Memory Snapshot as Pickle (Export CUDA Memory Session writes a folder of them for ' +
          '`cuda-memdiff session` and `leaks`)\n'
      );
    }
    for (const command of ['session', 'leaks']) {
      const r = cli(command, notebook);
      expect(r.code).toBe(2);
      expect(r.err).toBe(
        `cuda-memdiff: ${notebook}: is a Jupyter notebook, not a session folder: run it in JupyterLab with this ` +
          'extension and use Export CUDA Memory Session, or record one on a CUDA machine with ' +
          `\`python -m cuda_memdiff_kernel.recorder ${notebook} OUT_DIR\`\n`
      );
    }
  });

  it('refuses an option the command would ignore, which would read as applied', () => {
    const file = path.join(REC, 'oom--python', 'cell00.pickle.gz');
    const session = path.join(REC, 'oom--python');
    const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
    for (const [args, message] of [
      [['summary', file, '--rank', '1'], 'summary does not take --rank'],
      [['summary', file, '--all-frames'], 'summary does not take --all-frames'],
      [['leaks', session, '--point', '3'], 'leaks does not take --point'],
      [['session', ranks, '--ranks', '0,1'], 'session does not take --ranks'],
      [['diff', file, file, '--point', '1'], '--point goes with --ranks A,B'],
      [['diff', ranks, '--ranks', '0,1', '--by', 'role'], '--by role reads one session folder'],
      [['session', ranks, '--by', 'role'], `--by role reads one session folder: ${ranks} has ranks, so add --rank N`]
    ] as const) {
      const r = cli(...args);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err.split('\n')[0]).toContain(`cuda-memdiff: ${message}`);
    }
  });

  it('refuses a number too large to read exactly, quoting it as given, and takes --rank=N as --max-bytes=N', () => {
    const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
    const huge = '99999999999999999999';
    for (const [args, message] of [
      [['session', ranks, '--rank', huge], `--rank takes a whole number below 2^53, not '${huge}'`],
      [['diff', ranks, '--ranks', '0,1', '--point', huge], `--point takes a whole number below 2^53, not '${huge}'`],
      [['summary', ranks, '--max-bytes', huge], `--max-bytes takes a positive integer below 2^53`]
    ] as const) {
      const r = cli(...args);
      expect(r.code).toBe(2);
      expect(r.err.split('\n')[0]).toContain(`cuda-memdiff: ${message}`);
    }
    expect(cli('session', ranks, '--rank=1').out).toBe(cli('session', ranks, '--rank', '1').out);
    expect(json('diff', ranks, '--ranks=0,1', '--point=0')).toEqual(
      json('diff', ranks, '--ranks', '0,1', '--point', '0')
    );
  });

  it('answers unknown commands and options with usage and exit 2', () => {
    expect(cli('frobnicate').code).toBe(2);
    const r = cli('summary', '--bogus');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown option --bogus/);
  });
});

describe('a session folder with a file that cannot be read', () => {
  const recording = path.join(REC, 'eval_without_no_grad--python');
  function broken(damage: (dir: string) => void) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-broken-'));
    for (const f of fs.readdirSync(recording)) {
      fs.copyFileSync(path.join(recording, f), path.join(dir, f));
    }
    damage(dir);
    return dir;
  }
  const truncate = (name: string) => (dir: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, fs.readFileSync(file).subarray(0, 200));
  };

  it('reports every other cell, says which one was left out and why, and measures the next from the one before', () => {
    const whole = json('session', recording);
    const dir = broken(truncate('cell02.pickle.gz'));
    const text = cli('session', dir);
    expect([text.code, text.err]).toEqual([0, '']);
    expect(text.out.split('\n')[0]).toBe(
      "Cell [3] left out (the next cell's change counts from the cell before it): cell02.pickle.gz: the gzip data is cut short (the file is truncated)"
    );
    const r = cli('session', dir, '--json');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^cuda-memdiff: Cell \[3\] left out .*cut short \(the file is truncated\)\n$/);
    const read = JSON.parse(r.out);
    expect(read.unreadable).toEqual([
      {
        index: 2,
        file: 'cell02.pickle.gz',
        part: 'cell',
        message: 'cell02.pickle.gz: the gzip data is cut short (the file is truncated)'
      }
    ]);
    const index = (cells: { index: number }[]) => cells.map(c => c.index);
    expect(index(read.cells)).toEqual(index(whole.cells).filter(k => k !== 2));
    // Cell 3 after cell 1: its net change is cells 2 and 3 together, what the whole session says of them.
    const net = (cells: { index: number; net_bytes: number }[], k: number) => cells.find(c => c.index === k)!.net_bytes;
    expect(net(read.cells, 3)).toBe(net(whole.cells, 2) + net(whole.cells, 3));
    expect(net(read.cells, 1)).toBe(net(whole.cells, 1));
  });

  it("names a left-out cell's code where the next cell's figures show it", () => {
    const demo = path.join(REC, 'gpu_memory_demo--python');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-broken-'));
    fs.cpSync(demo, dir, { recursive: true });
    truncate('cell02.pickle.gz')(dir);
    const lines = cli('session', dir).out.split('\n');
    expect(lines.find(l => l.startsWith('Cell [4] peak'))).toMatch(/: 321 MiB from Cell \[3\], line 3,/);
  });

  it('still finds the leak from the cells it can read', () => {
    type Leaks = { top_leak: number; cells: { execution: number; index: number; verdict: string }[] };
    const topCell = (leaks: Leaks) => leaks.cells.find(c => c.execution === leaks.top_leak)?.index;
    const whole: Leaks = json('leaks', recording);
    const r = cli('leaks', broken(truncate('cell05.pickle.gz')), '--json');
    expect(r.code).toBe(0);
    const read = JSON.parse(r.out);
    expect(read.unreadable.map((u: { index: number }) => u.index)).toEqual([5]);
    expect(topCell(read)).toBe(topCell(whole));
    expect(read.cells.find((c: { index: number }) => c.index === topCell(whole)).verdict).toBe('leak');
  });

  it("points at a left-out cell whose code made the next cell's leak, as the stacks say", () => {
    type Cell = { index: number; leaked_bytes: number; left_out_before?: unknown };
    // Recorded leaks whose cell is left out; eval_without_no_grad's cells 2 and 4 run one source (one code name).
    const cases = [
      path.join(ROOT, 'test-data', 'live', 'exception_kept--holders'),
      path.join(ROOT, 'test-data', 'live', 'out_cache--holders'),
      path.join(ROOT, 'test-data', 'live', 'generator_frame--holders'),
      recording
    ];
    for (const folder of cases) {
      const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8'));
      const top: number = manifest.expected.top_leak_cell;
      const cell = manifest.cells[top];
      const whole: Cell[] = json('leaks', folder).cells;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-broken-'));
      fs.cpSync(folder, dir, { recursive: true });
      truncate(cell.snapshot_file)(dir);
      const read: Cell[] = JSON.parse(cli('leaks', dir, '--json').out).cells;
      // The next cell's row counts the left-out one, and says what of its leak that cell made: all it leaked.
      expect(read.find(c => c.index === top + 1)!.left_out_before).toEqual([
        { index: top, execution_count: cell.execution_count, leaked_bytes: whole[top].leaked_bytes }
      ]);
      expect(read.filter(c => c.left_out_before).length).toBe(1);
      const story = cli('leaks', dir).out.split('\n');
      expect(story.find(l => l.startsWith('Look at'))).toMatch(
        new RegExp(`^Look at Cell \\[${cell.execution_count}\\] first \\(its snapshot could not be read`)
      );
    }
  });

  it('is refused in a multi-rank folder, whose ranks line up capture point by capture point', () => {
    const ranks = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-ranks-'));
    fs.cpSync(ranks, dir, { recursive: true });
    truncate(path.join('rank1', 'point0002.pickle.gz'))(dir);
    for (const args of [
      ['session', dir],
      ['session', dir, '--rank', '0'],
      ['diff', dir, '--ranks', '0,1']
    ]) {
      const r = cli(...args);
      expect([r.code, r.out]).toEqual([2, '']);
      expect(r.err).toBe(
        `cuda-memdiff: ${path.join(dir, 'rank1')}: point0002.pickle.gz: the gzip data is cut short (the file is truncated)\n`
      );
    }
  });

  it('is refused with the first reason when no cell can be read', () => {
    const dir = broken(d =>
      fs
        .readdirSync(d)
        .filter(f => f.startsWith('cell'))
        .forEach(f => truncate(f)(d))
    );
    const r = cli('session', dir);
    expect(r.code).toBe(2);
    // The folder is named too: with several at hand, "cell00.pickle.gz" alone does not say which.
    expect(r.err).toBe(
      `cuda-memdiff: ${path.join(dir, 'cell00.pickle.gz')}: the gzip data is cut short (the file is truncated)\n`
    );
  });
});

describe('a session whose allocation history says odd things', () => {
  /** A copy of a recording with one cell's raw snapshot changed by `change` (written as a plain pickle). */
  function changed(folder: string, cell: string, change: (raw: PyDict) => void) {
    const recording = path.join(REC, folder);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-odd-'));
    for (const f of fs.readdirSync(recording)) {
      fs.copyFileSync(path.join(recording, f), path.join(dir, f));
    }
    const raw = decodeSnapshotBytes(fs.readFileSync(path.join(recording, cell))).value as PyDict;
    change(raw);
    fs.writeFileSync(path.join(dir, cell), pickle(raw));
    return dir;
  }
  const traces = (raw: PyDict) => (raw.device_traces as PyValue[][])[0] as PyDict[];
  // The peak line of the cell with this execution count.
  const peakLine = (out: string, count: number) => out.split('\n').find(l => l.startsWith(`Cell [${count}] peak `));

  it('prints a file name from the history as one line, its newline escaped, and an unreadable line number as 0', () => {
    const dir = changed('clean_training--python', 'cell02.pickle.gz', raw =>
      traces(raw).forEach((e, k) => {
        if (k % 2 === 0) {
          e.frames = [{ name: 'step', filename: '/tmp/ipykernel_1/\r\nforged.py', line: k % 4 ? NaN : 1 } as PyDict];
        }
      })
    );
    const r = cli('session', dir);
    expect([r.code, r.err]).toEqual([0, '']);
    const line = peakLine(r.out, 3)!;
    expect(line).toMatch(/ from \/tmp\/ipykernel_1\/\\x0d\\x0aforged\.py:[01],/);
    expect(r.out).not.toMatch(/^forged/m);
    expect(r.out).not.toContain('NaN');
  });

  it('says a request the `oom` entry gives no size for is unknown, not 0 B', () => {
    const dir = changed('oom--python', 'oom00.pickle.gz', raw =>
      traces(raw).forEach(e => e.action === 'oom' && delete e.size)
    );
    const r = cli('session', dir);
    expect(r.out).toMatch(/ran out of memory on cuda:0: it asked for an unknown amount; the device had 39\.3 GiB free/);
    const oom = json('session', dir).cells.find((c: { index: number }) => c.index === 1).oom;
    expect(oom.request_bytes).toBeNull();
    expect(oom.fragmentation).toBe(false);
  });

  it('marks a peak whose history lost entries as incomplete in JSON, as the text says "or more"', () => {
    const dir = changed('clean_training--python', 'cell02.pickle.gz', raw => traces(raw).forEach(e => delete e.size));
    expect(peakLine(cli('session', dir).out, 3)).toMatch(/ or more \(history lost entries\): /);
    const peak = json('session', dir).cells.find((c: { index: number }) => c.index === 2).peak;
    expect(peak.complete).toBe(false);
    const whole = json('session', path.join(REC, 'clean_training--python')).cells[2].peak;
    expect(whole.complete).toBeUndefined();
  });

  it("says why a peak is not broken down where the history is not the snapshots'", () => {
    // The cell's allocations again on a device that holds nothing at its end: a history of another device.
    const dir = changed('clean_training--python', 'cell02.pickle.gz', raw => {
      const entries = (raw.device_traces as PyValue[][])[0];
      (raw.device_traces as PyValue[][]).push(entries, entries);
    });
    // torch's figure for the cell, then why it is not broken down
    expect(peakLine(cli('session', dir).out, 3)).toBe(
      `Cell [3] peak ${formatBytes(json('session', dir).cells[2].peak_bytes)}: not broken down: its allocation ` +
        'history ends holding blocks the snapshot after the cell does not (a history of another session or device?)'
    );
    const cells = json('session', dir).cells;
    expect([cells[2].peak, cells[2].peak_contradiction]).toEqual([null, 'not-this-snapshot']);
    expect(cells.filter((c: object) => 'peak_contradiction' in c).length).toBe(1);
  });
});

describe('cuda-memdiff diff of two files given the wrong way round', () => {
  const cell = (k: number) => path.join(REC, 'clean_training--python', `cell0${k}.pickle.gz`);

  it('says so where the histories tell which was taken first, and only then', () => {
    const note = 'note: BEFORE was taken after AFTER (its history is newer): were the files given the wrong way round?';
    const backwards = cli('diff', cell(3), cell(2));
    expect(backwards.code).toBe(0);
    expect(backwards.out.split('\n')[0]).toBe(note);
    expect(json('diff', cell(3), cell(2)).before_newer_than_after).toBe(true);
    expect(cli('diff', cell(2), cell(3)).out).not.toContain(note);
    expect(json('diff', cell(2), cell(3)).before_newer_than_after).toBeUndefined();
  });
});

describe('cuda-memdiff diff of two snapshots of different runs', () => {
  const demo = path.join(REC, 'gpu_memory_demo--python', 'cell02.pickle.gz');
  const oom = path.join(REC, 'oom--python', 'cell00.pickle.gz');
  const twoGpus = path.join(REC, 'multi_gpu_split--python', 'cell02.pickle.gz');
  const rank = (r: number) => path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu', `rank${r}`, 'point0004.pickle.gz');

  it('says so in one line above the table, with what tells', () => {
    const r = cli('diff', oom, demo);
    expect(r.code).toBe(0);
    const [note, head] = r.out.split('\n');
    expect(note).toBe(
      "note: BEFORE and AFTER look like snapshots of different runs (none of BEFORE's 5 segments is among " +
        "AFTER's 23), so the figures below are not a leak: every block counts as freed or born"
    );
    expect(head).toMatch(/^born 481 MiB in 38 blocks, freed 100 GiB in 5 blocks/);
    expect(cli('diff', demo, twoGpus).out.split('\n')[0]).toContain('(BEFORE saw 1 device, AFTER 2; none of');
    expect(cli('diff', rank(0), rank(1)).out.split('\n')[0]).toContain(
      '(their histories on cuda:0 overlap in time but share no event; none of'
    );
  });

  it('gives the evidence in --json, null for two cells of one session', () => {
    expect(json('diff', oom, demo).different_runs).toEqual({
      evidence: [{ code: 'segments_apart', before_segments: 5, after_segments: 23 }]
    });
    expect(json('diff', demo, twoGpus).different_runs.evidence[0]).toEqual({
      code: 'device_count',
      before: 1,
      after: 2
    });
    const cell = (k: number) => path.join(REC, 'gpu_memory_demo--python', `cell0${k}.pickle.gz`);
    expect(json('diff', cell(1), cell(3)).different_runs).toBeNull();
    expect(cli('diff', cell(1), cell(3)).out).not.toContain('different runs');
  });

  it('leaves out "the wrong way round": two runs\' clocks say nothing of which came first', () => {
    // The ranks ran side by side: rank 1's newest entry is newer than rank 0's or not, by chance.
    const [a, b] = [rank(0), rank(1)];
    for (const [before, after] of [
      [a, b],
      [b, a]
    ]) {
      const out = json('diff', before, after);
      expect(out.different_runs).not.toBeNull();
      expect(out.before_newer_than_after).toBeUndefined();
    }
  });
});
