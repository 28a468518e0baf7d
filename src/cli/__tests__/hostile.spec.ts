/**
 * @jest-environment node
 */
// Hostile snapshot files against the built CLI, run as a user runs it: each
// ends in one line on stderr that names what was refused (and the limit to
// raise, when a limit refused it), in bounded memory, with no stack trace and
// nothing executed. A file that made the CLI hang is killed after 60 s and
// fails the exit-code check; how fast it refuses is a benchmark's figure, not
// a test's (a timed test fails on a loaded machine). The files are built in code
// (../../engine/__tests__/hostile.ts); they are written to a temporary folder.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { pickle, PyDict, PyValue } from '../../engine';
import { HOSTILE } from '../../engine/__tests__/hostile';

const ROOT = path.resolve(__dirname, '../../..');
const MAIN = path.join(ROOT, 'dist', 'node', 'cli', 'main.js');
// Measures the child's own peak: getrusage's maxRSS starts from the jest worker's.
const PEAK_RSS = path.join(ROOT, 'bench', 'peak-rss.js');

let dir: string;

beforeAll(() => {
  if (!fs.existsSync(MAIN)) {
    throw new Error('run `npm run build:cli` before the CLI tests');
  }
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-hostile-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Write bytes to a file in the temporary folder. */
function file(name: string, bytes: Uint8Array): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, bytes);
  return p;
}

/** Run the CLI in a child process; its own peak resident memory comes back through a side file. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const rssFile = path.join(dir, 'rss');
  const r = spawnSync(
    process.execPath,
    ['-r', PEAK_RSS, '-e', `process.exitCode = require(${JSON.stringify(MAIN)}).main(${JSON.stringify(args)});`],
    { encoding: 'utf-8', env: { ...process.env, ...env, PEAK_RSS_FILE: rssFile }, timeout: 60_000 }
  );
  const rssMiB = Number(fs.readFileSync(rssFile, 'utf-8')) / 2 ** 20;
  return { code: r.status, out: r.stdout, err: r.stderr, rssMiB };
}

/** The CLI refused the file in one line matching `pattern`, within `maxMiB` of memory. */
function expectRefused(r: ReturnType<typeof cli>, pattern: RegExp, maxMiB = 400): void {
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  const lines = r.err.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^cuda-memdiff: /);
  expect(lines[0]).toMatch(pattern);
  expect(lines[0]).not.toMatch(/unexpected error|Maximum call stack|\s+at \S+ \(/);
  expect(r.rssMiB).toBeLessThan(maxMiB);
}

describe('hostile snapshot files', () => {
  it('refuses a 400 KB integer at once, without building it', () => {
    const r = cli(['summary', file('long.pickle.gz', HOSTILE.longInteger())]);
    expectRefused(
      r,
      /400,000-byte integer, over the decode limit --max-int-bytes 16; if the file is real, raise it with --max-int-bytes N or CUDA_MEMDIFF_MAX_INT_BYTES=N/
    );
  });

  it('counts one segment dict referenced 9,000 times as 18 million blocks, before building any', () => {
    const bytes = HOSTILE.sharedSegment();
    expect(bytes.length).toBeLessThan(8192);
    const r = cli(['summary', file('shared-segment.pickle.gz', bytes)]);
    expectRefused(
      r,
      /describe 18,009,000 blocks and trace entries \(memo references repeat entries.*--max-entries/,
      200
    );
  });

  it('counts one trace entry referenced 5 million times as 5 million entries', () => {
    const r = cli(['summary', file('shared-trace.pickle.gz', HOSTILE.sharedTraceEntry())]);
    expectRefused(r, /describe 5,000,000 blocks and trace entries.*--max-entries N or CUDA_MEMDIFF_MAX_ENTRIES=N/, 300);
  });

  it('still refuses them by count when the per-byte check is lifted, and reads them when the count is raised', () => {
    const shared = file('shared-trace2.pickle.gz', HOSTILE.sharedTraceEntry());
    expectRefused(
      cli(['summary', shared, '--max-entries', '1M']),
      /holds 5,000,000 blocks and trace entries, over the decode limit --max-entries 1,048,576/,
      300
    );
    const r = cli(['summary', shared, '--json'], { CUDA_MEMDIFF_MAX_ENTRIES: '6000000' });
    expect(r.err).toBe('');
    expect(JSON.parse(r.out).trace_entries).toBe(5_000_000);
  });

  it('refuses set() of one memoised 100,000-item list repeated 2,000 times before copying it twice', () => {
    // Copied in full, the 2,000 sets hold 200 million items: gigabytes from a 210 KB file.
    const bytes = HOSTILE.memoisedCalls('builtins', 'set', 100_000, w => w.int(0), 2000);
    expect(bytes.length).toBeLessThan(256 * 1024);
    expectRefused(
      cli(['summary', file('set-copies.pickle', bytes)]),
      /set-copies\.pickle: the pickle's [\d,]+ bytes make the decoder copy 200,000 items .*over the decode limit --max-entries 100,000; if the file is real, raise it with --max-entries N or CUDA_MEMDIFF_MAX_ENTRIES=N/,
      200
    );
  });

  it('stops a gzip bomb of 1 GiB of zeros at its first bytes', () => {
    const bytes = HOSTILE.gzipBomb();
    expect(bytes.length).toBeLessThan(2 ** 21);
    expectRefused(cli(['summary', file('zeros.gz', bytes)]), /not a snapshot: expected a pickle/, 200);
  });

  it('stops gunzip of a pickle-shaped bomb at the byte limit', () => {
    const bomb = file('nones.pickle.gz', HOSTILE.pickleBomb());
    expectRefused(
      cli(['summary', bomb, '--max-bytes=16M']),
      /decompresses to more bytes than allowed, over the decode limit --max-bytes 16,777,216; if the file is real, raise it with --max-bytes N or CUDA_MEMDIFF_MAX_BYTES=N/,
      250
    );
    // Under the default limit it is decoded and refused by the unpickler's own bound.
    expectRefused(cli(['summary', bomb]), /pickle stack is too deep/);
  });

  it('refuses a plain file over the byte limit before reading it', () => {
    const big = file('big.pickle', new Uint8Array(3 * 2 ** 20).fill(0x4e));
    expectRefused(
      cli(['summary', big], { CUDA_MEMDIFF_MAX_BYTES: '1M' }),
      /the snapshot is 3,145,728 bytes, over the decode limit --max-bytes 1,048,576/
    );
  });

  it('refuses 3 million devices without a stack overflow', () => {
    expectRefused(
      cli(['summary', file('devices.pickle.gz', HOSTILE.manyDevices())]),
      /traces for 3,000,000 devices, over the decode limit --max-devices 1,024/,
      300
    );
  });

  it('refuses a device index past the limit', () => {
    expectRefused(
      cli(['summary', file('device.pickle', HOSTILE.hugeDeviceIndex())]),
      /segment 0 is on device 2000000000, over the decode limit --max-devices/
    );
  });

  it.each([
    ['a negative size', (w: any) => w.raw(0x4a, 0xfb, 0xff, 0xff, 0xff), /segment 0 block 0 size is negative \(-5\)/],
    ['a size of 1e300', (w: any) => w.float(1e300), /segment 0 block 0 size is out of range \(1e\+300\)/],
    ['a fractional size', (w: any) => w.float(2.5), /segment 0 block 0 size is not an integer/],
    [
      'a size past 2^53',
      (w: any) => w.raw(0x8a, 8, 0, 0, 0, 0, 0, 0, 0x40, 0),
      /segment 0 block 0 size is out of range \(18014398509481984\)/
    ]
  ])('refuses %s', (name, write, pattern) => {
    expectRefused(cli(['summary', file('size.pickle', HOSTILE.blockSize(write))]), pattern);
  });

  it('refuses a pool id nested 200,000 deep by name, without a stack overflow', () => {
    expectRefused(
      cli(['summary', file('pool.pickle', HOSTILE.deepPoolId())]),
      /pool\.pickle: not a snapshot: segment 0 segment_pool_id is not a tuple of integers$/
    );
  });

  it('quotes a 5 MB state string cut to its first 80 characters and its length', () => {
    const r = cli(['summary', file('state.pickle', HOSTILE.longState())]);
    expectRefused(r, /segment 0 block 0 has unknown state 'z{80}…\(5,000,000 characters\)'$/);
    expect(r.err.length).toBeLessThan(400);
  });

  it('reads tuples nested a million deep without a stack overflow', () => {
    const r = cli(['summary', file('deep.pickle.gz', HOSTILE.deepNesting()), '--json']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).reserved_bytes).toBe(2 ** 20);
  });

  it('never runs code: GLOBAL and REDUCE of os.system are refused and the command does not run', () => {
    const marker = path.join(dir, 'pwned');
    expectRefused(
      cli(['summary', file('system.pickle', HOSTILE.systemCall(marker))]),
      /refused pickle: it imports posix\.system, and a snapshot never needs code/
    );
    expect(fs.existsSync(marker)).toBe(false);
  });
});

describe('terminal output', () => {
  it('ends quietly when the reader closes the pipe early', () => {
    // Before: `... --json | head -1` printed Node's EPIPE stack trace on stderr.
    const blocks: PyValue[] = [];
    for (let k = 0; k < 5000; k++) {
      const frames = [{ name: '<module>', filename: `/tmp/ipykernel_1/${k}.py`, line: 1 }];
      blocks.push({ address: k * 512, size: 512, state: 'active_allocated', frames } as PyDict);
    }
    const segment = { device: 0, address: 0, total_size: 5000 * 512, stream: 0, segment_type: 'large', blocks };
    const before = file('pipe-before.pickle', pickle({ segments: [], device_traces: [[]] }));
    const after = file('pipe-after.pickle', pickle({ segments: [segment], device_traces: [[]] } as PyDict));
    const command = [process.execPath, path.join(ROOT, 'bin', 'cuda-memdiff.js'), 'diff', before, after, '--json']
      .map(a => `'${a}'`)
      .join(' ');
    const r = spawnSync('bash', ['-c', `${command} | head -c 1; echo " \${PIPESTATUS[0]}"`], { encoding: 'utf-8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('{ 0\n');
  });

  it('escapes control characters in text and keeps them in JSON', () => {
    const before = file('empty.pickle', pickle({ segments: [], device_traces: [[]] }));
    const after = file('escape.pickle', HOSTILE.escapeSequences());
    const text = cli(['diff', before, after]);
    expect(text.code).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(text.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(text.out).toContain('\\x1b[2J\\x1b]0;pwned\\x07evil');
    expect(text.out).toContain('/tmp/\\x1b[31mred\\x0d\\x0aforged line.py:3');
    expect(text.out).not.toMatch(/^forged line/m);
    const json = JSON.parse(cli(['diff', before, after, '--json']).out);
    expect(json.groups[0].site).toEqual({
      filename: '/tmp/\x1b[31mred\r\nforged line.py',
      line: 3,
      name: '\x1b[2J\x1b]0;pwned\x07evil'
    });
  });

  it('diffs 200,000 allocation sites and caps the table with a line saying how many it left out', () => {
    const blocks: PyValue[] = [];
    for (let k = 0; k < 200_000; k++) {
      blocks.push({
        address: k * 512,
        size: 512,
        requested_size: 512,
        state: 'active_allocated',
        frames: [{ name: '<module>', filename: `/tmp/ipykernel_1/${k}.py`, line: 1 }]
      } as PyDict);
    }
    const segment = { device: 0, address: 0, total_size: 200_000 * 512, stream: 0, segment_type: 'large', blocks };
    const before = file('sites-before.pickle', pickle({ segments: [], device_traces: [[]] }));
    const after = file('sites-after.pickle', pickle({ segments: [segment], device_traces: [[]] } as PyDict));
    const r = cli(['diff', before, after]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^born 97\.7 MiB in 200000 blocks/);
    expect(r.out).toContain('... 199,800 more allocation sites not shown (--json lists them all)');
    expect(r.out.split('\n').length).toBeLessThan(400);
  });
});

describe('hostile multi-rank folders', () => {
  const DDP = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');

  /** A copy of the DDP recording whose ranks.json claims `worldSize`. */
  function ranksFolder(name: string, worldSize: number): string {
    const copy = path.join(dir, name);
    fs.cpSync(DDP, copy, { recursive: true });
    const index = path.join(copy, 'ranks.json');
    fs.writeFileSync(index, JSON.stringify({ ...JSON.parse(fs.readFileSync(index, 'utf-8')), world_size: worldSize }));
    return copy;
  }

  it('refuses a world size of a billion in one line, in bounded memory', () => {
    // Before: an array of a billion ranks, and V8 died out of memory (exit 134).
    const billion = ranksFolder('billion', 1e9);
    const r = cli(['session', billion]);
    expectRefused(r, /world_size 1,000,000,000 is more ranks than any job runs \(at most 1,048,576\)$/, 300);
    expect(r.err).toMatch(`cuda-memdiff: ${path.join(billion, 'ranks.json')}: world_size`);
  });

  it('words the ranks a million-rank world lacks as one run', () => {
    // Before: "Missing: no folder for rank 2, 3, 4, ..." with every rank spelled out.
    const r = cli(['session', ranksFolder('million', 1_000_000)]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('\nMissing: no folder for ranks 2-999,999.\n');
    expect(JSON.parse(cli(['session', path.join(dir, 'million'), '--json']).out).missing_ranks).toEqual([
      { first: 2, last: 999_999 }
    ]);
  });

  it('decodes the ranks under the decode limits given', () => {
    // Before: the flags were not passed to the ranks, so this read every rank (and raising one did not help).
    expectRefused(cli(['session', DDP, '--max-entries', '1']), /rank0: point0000\.pickle\.gz: .*--max-entries 1;/);
  });
});

describe('input that is not a plain file', () => {
  it('reads a device or pipe in chunks and stops it past --max-bytes', () => {
    // Before: /dev/zero was read whole (7.8 GB before the size was ever checked).
    expectRefused(
      cli(['summary', '/dev/zero', '--max-bytes', '1M']),
      /^cuda-memdiff: \/dev\/zero gives more than 1,048,576 bytes, over the decode limit --max-bytes 1,048,576;/,
      200
    );
  });

  it('names a manifest.json or ranks.json that is a folder', () => {
    // Before: "unexpected error: EISDIR: illegal operation on a directory, read", naming nothing.
    const session = path.join(dir, 'manifest-folder');
    fs.mkdirSync(path.join(session, 'manifest.json'), { recursive: true });
    expectRefused(
      cli(['session', session]),
      new RegExp(`${path.join(session, 'manifest.json')}: is a folder, not a file$`)
    );
    const ranks = path.join(dir, 'index-folder');
    fs.cpSync(path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu'), ranks, { recursive: true });
    fs.rmSync(path.join(ranks, 'ranks.json'));
    fs.mkdirSync(path.join(ranks, 'ranks.json'));
    expectRefused(cli(['leaks', ranks]), new RegExp(`${path.join(ranks, 'ranks.json')}: is a folder, not a file$`));
  });

  it('refuses a pipe or a device a session folder names, without waiting on it', () => {
    // Found by helper-73: a cell's snapshot that was a pipe with no writer hung session and leaks (killed
    // after 20 s); a pipe given on the command line is still read, as `<(zcat snap.pickle.gz)` is.
    for (const [name, make, kind] of [
      ['pipe', (p: string) => spawnSync('mkfifo', [p]), 'a pipe'],
      ['device', (p: string) => fs.symlinkSync('/dev/zero', p), 'a device']
    ] as const) {
      const session = path.join(dir, `session-with-${name}`);
      fs.cpSync(path.join(ROOT, 'test-data', 'recordings', 'eval_without_no_grad--python'), session, {
        recursive: true
      });
      const snapshot = path.join(session, 'cell01.pickle.gz');
      fs.rmSync(snapshot);
      make(snapshot);
      for (const command of ['session', 'leaks']) {
        // the cell is left out, saying why first; the others are read
        const r = cli([command, session]);
        expect([r.code, r.err]).toEqual([0, '']);
        expect(r.out.split('\n')[0]).toBe(
          "Cell [2] left out (the next cell's change counts from the cell before it): manifest.json names " +
            `cell01.pickle.gz, which cannot be read (${snapshot}: is ${kind}, not a file)`
        );
        expect(r.out).toMatch(
          command === 'session' ? /^ \[3\] +cell02\.pickle\.gz/m : /^ \[5\] +cell04\.pickle\.gz +leak/m
        );
      }
    }
  });

  it('is not stopped by a dangling link the folder does not need', () => {
    // Before: the multi-rank check stat'ed every entry: "unexpected error: ENOENT ... stat '.../stale'".
    const ranks = path.join(dir, 'stale-ranks');
    fs.cpSync(path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu'), ranks, { recursive: true });
    fs.symlinkSync('/nonexistent/target', path.join(ranks, 'stale'));
    const r = cli(['session', ranks]);
    expect([r.code, r.err]).toEqual([0, '']);
    expect(r.out).toMatch(/^2 of 2 ranks/);
    const bare = path.join(dir, 'stale-bare');
    fs.mkdirSync(bare);
    fs.symlinkSync('/nonexistent/target', path.join(bare, 'stale'));
    expectRefused(cli(['leaks', bare]), /stale-bare: no manifest\.json, so it is not a session folder$/);
  });
});
