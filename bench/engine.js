/**
 * Engine benchmark: prints figures, asserts nothing (targets are reported).
 *
 *   npm run bench
 *
 * Reads and diffs the real many_blocks recording (40,501 blocks) and a
 * 100,000-block pair built from its shape (bench/make_large.py), and compares
 * our reading time with Python's pickle.load on the same files. Then, for
 * snapshots with full allocation history of 100 MB, 500 MB and 1 GB built
 * from the clean_training recording (make_large.py --history), it runs the
 * CLI (`summary`) and Python's pickle.load each in a fresh process and
 * prints their wall time and peak resident memory (targets: time <= Python's,
 * peak RSS <= 3x the file). Files are written to the temporary folder one at
 * a time and deleted after; sizes that do not fit the free disk or memory
 * are skipped with the figures. BENCH_HISTORY_MB=100,500 picks the sizes.
 * The peak memory of `summary` and `diff` is printed for the 100,000-block
 * pair, and for any pair BENCH_LARGE_PAIR=before,after names.
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const engine = require('../dist/node/engine');

const ROOT = path.resolve(__dirname, '..');
const REC = path.join(ROOT, 'test-data', 'recordings', 'many_blocks--python');
const RUNS = Number(process.env.BENCH_RUNS || 7);
const PYTHON = process.env.PYTHON || 'python3';

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median wall time of fn in ms over RUNS runs, after one warm-up. */
function time(fn, runs = RUNS) {
  fn();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    times.push(performance.now() - t);
  }
  return median(times);
}

/** Median of Python's gzip + pickle.load on a file, in ms (same run count). */
function pythonLoad(file) {
  const code = [
    'import gzip, pickle, sys, time',
    'raw = open(sys.argv[1], "rb").read()',
    'def load():',
    '    return pickle.loads(gzip.decompress(raw)) if raw[:2] == b"\\x1f\\x8b" else pickle.loads(raw)',
    'load()',
    'ts = []',
    `for _ in range(${RUNS}):`,
    '    t = time.perf_counter(); load(); ts.append((time.perf_counter() - t) * 1000)',
    'print(sorted(ts)[len(ts) // 2])'
  ].join('\n');
  return Number(execFileSync(PYTHON, ['-c', code, file], { encoding: 'utf-8' }).trim());
}

function bytesOf(file) {
  return new Uint8Array(fs.readFileSync(file));
}

function report(label, ms, target) {
  const note = target === undefined ? '' : `   (target ${target})`;
  console.log(`${label.padEnd(58)} ${ms.toFixed(1).padStart(8)} ms${note}`);
}

function benchPair(label, beforeFile, afterFile) {
  const before = bytesOf(beforeFile);
  const after = bytesOf(afterFile);
  const frames = new engine.FrameTable();
  const a = engine.readSnapshot(before, frames);
  const b = engine.readSnapshot(after, frames);
  console.log(`\n${label}: ${b.blocks.length} blocks, ${(after.length / 2 ** 20).toFixed(1)} MiB gzip`);
  const readMs = time(() => engine.readSnapshot(after, new engine.FrameTable()));
  report('read + summarise (gunzip, unpickle, normalize, totals)', readMs);
  const decodeMs = time(() => engine.decodeSnapshotBytes(after));
  report('  of which gunzip + unpickle', decodeMs);
  const pyMs = pythonLoad(afterFile);
  report('python3 gzip + pickle.load, same file', pyMs);
  console.log(
    `${'ratio ours / python (unpickle; read + summarise)'.padEnd(58)} ${(decodeMs / pyMs).toFixed(2)} ; ${(readMs / pyMs).toFixed(2)}   (target <= 1)`
  );
  const diffMs = time(() => engine.diffSnapshots(a, b), RUNS * 3);
  report('diff (born / freed / kept)', diffMs, b.blocks.length >= 100000 ? '<= 50 ms' : undefined);
  const groupMs = time(() => engine.groupBySite(engine.diffSnapshots(a, b)), RUNS * 3);
  report('diff + group by allocation site', groupMs);
  const d = engine.diffSnapshots(a, b);
  console.log(`  diff: born ${d.born.length}, freed ${d.freed.length}, kept ${d.keptCount}`);
  // A badge's role moves (the store's roleMovesOf, on the main thread once a cell: the cell's diff, then the
  // blocks it kept that changed role): every block given a role by its address, one block in fifty of those
  // the cell kept another role after it than before.
  const roles = engine.ROLES;
  const roleAt = (address, shift) => roles[(address / 512 + (address % 51200 ? 0 : shift)) % 4];
  const rolesOf = (s, shift) => s.blocks.map(x => [x.device, x.address, roleAt(x.address, shift)]);
  const entries = rolesOf(b, 1);
  report(
    "per-block roles of a cell's snapshot (BlockRoles)",
    time(() => new engine.BlockRoles(entries), RUNS * 3)
  );
  const [rolesBefore, rolesAfter] = [new engine.BlockRoles(rolesOf(a, 0)), new engine.BlockRoles(entries)];
  const moves = engine.roleMoves(d, b, rolesBefore, rolesAfter);
  report(
    "a badge's role moves (the diff, then kept blocks' roles)",
    time(() => engine.roleMoves(engine.diffSnapshots(a, b), b, rolesBefore, rolesAfter), RUNS * 3)
  );
  console.log(`  moves: ${moves.map(m => `${m.count} blocks ${m.from} to ${m.to}`).join(', ')}`);
}

const CLI_MAIN = path.join(ROOT, 'dist', 'node', 'cli', 'main.js');
const HISTORY_SOURCE = path.join(ROOT, 'test-data', 'recordings', 'clean_training--python', 'cell04.pickle.gz');

/** Run the CLI (`summary FILE` unless told) in a fresh process: wall ms of the command and its own peak RSS in bytes. */
function cliRun(file, args = ['summary', file]) {
  const out = path.join(os.tmpdir(), `cuda-memdiff-bench-${process.pid}.json`);
  const rssFile = `${out}.rss`;
  const script =
    `const t = performance.now(); const code = require(${JSON.stringify(CLI_MAIN)}).main(${JSON.stringify(args)});` +
    `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ ms: performance.now() - t, code }));`;
  execFileSync(process.execPath, ['-r', path.join(__dirname, 'peak-rss.js'), '-e', script], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PEAK_RSS_FILE: rssFile }
  });
  const r = { ...JSON.parse(fs.readFileSync(out, 'utf-8')), rss: Number(fs.readFileSync(rssFile, 'utf-8')) };
  fs.rmSync(out);
  fs.rmSync(rssFile);
  return r;
}

/** Python's pickle.load on a file in a fresh process: wall ms and its own peak RSS in bytes (VmHWM, as peak-rss.js says why). */
function pythonRun(file) {
  const code = [
    'import pickle, re, sys, time',
    't = time.perf_counter()',
    'with open(sys.argv[1], "rb") as f:',
    '    pickle.load(f)',
    'ms = (time.perf_counter() - t) * 1000',
    'with open("/proc/self/status") as f:',
    '    hwm = int(re.search(r"^VmHWM:\\s+(\\d+) kB$", f.read(), re.M).group(1))',
    'print(ms, hwm * 1024)'
  ].join('\n');
  const [ms, rss] = execFileSync(PYTHON, ['-c', code, file], { encoding: 'utf-8' }).trim().split(' ').map(Number);
  return { ms, rss };
}

const mib = n => `${(n / 2 ** 20).toFixed(0)} MiB`;

/**
 * Peak resident memory of `summary` and `diff` on a pair of files, each in a
 * fresh process, against the size of the pickle (after gunzip): what a big
 * or hostile file costs, printed, not asserted.
 */
function benchMemory(label, beforeFile, afterFile) {
  const raw = bytesOf(afterFile);
  const pickleBytes =
    raw[0] === 0x1f && raw[1] === 0x8b
      ? engine.gunzipSnapshot(raw, engine.DEFAULT_DECODE_LIMITS.maxBytes).length
      : raw.length;
  console.log(`\n${label}: peak memory of the CLI, one fresh process per command (pickle ${mib(pickleBytes)})`);
  for (const args of [
    ['summary', afterFile],
    ['diff', beforeFile, afterFile]
  ]) {
    const r = cliRun(afterFile, args);
    console.log(
      `${`cuda-memdiff ${args[0]}`.padEnd(58)} ${r.ms.toFixed(0).padStart(8)} ms, peak RSS ${mib(r.rss)} ` +
        `(${(r.rss / pickleBytes).toFixed(2)}x the pickle${args[0] === 'diff' ? ' of one side' : ''})`
    );
  }
}

function benchHistory() {
  const sizes = (process.env.BENCH_HISTORY_MB || '100,500,1000').split(',').map(Number);
  const MB = 1e6;
  for (const size of sizes) {
    const tmp = os.tmpdir();
    const freeDisk = fs.statfsSync(tmp).bavail * fs.statfsSync(tmp).bsize;
    // The file, then each reader in turn: Python needs about 5x the file, ours about 3.5x.
    console.log(
      `\nfull allocation history, ${size} MB pickle (protocol 3, from clean_training's trace; free: disk ${(freeDisk / 2 ** 30).toFixed(1)} GiB, memory ${(os.freemem() / 2 ** 30).toFixed(1)} GiB of ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB)`
    );
    if (freeDisk < size * MB * 1.2 || os.totalmem() < size * MB * 6) {
      console.log(
        `  skipped: needs ${((size * 1.2) / 1000).toFixed(1)} GB of disk and about ${((size * 6) / 1000).toFixed(1)} GB of memory`
      );
      continue;
    }
    const file = path.join(fs.mkdtempSync(path.join(tmp, 'cuda-memdiff-history-')), 'history.pickle');
    try {
      const t = performance.now();
      const made = execFileSync(
        PYTHON,
        [path.join(__dirname, 'make_large.py'), '--history', HISTORY_SOURCE, file, String(size)],
        { encoding: 'utf-8' }
      ).trim();
      const bytes = fs.statSync(file).size;
      console.log(`  ${made} (generated in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
      const ours = cliRun(file);
      const py = pythonRun(file);
      report(`cuda-memdiff summary (read, normalize, totals)`, ours.ms);
      report(`python3 pickle.load, same file`, py.ms);
      console.log(
        `${'ratio ours / python (time)'.padEnd(58)} ${(ours.ms / py.ms).toFixed(2).padStart(8)}      (target <= 1)`
      );
      console.log(`${'peak RSS: ours, python'.padEnd(58)} ${mib(ours.rss).padStart(8)}, ${mib(py.rss)}`);
      console.log(
        `${'peak RSS ours / file size'.padEnd(58)} ${(ours.rss / bytes).toFixed(2).padStart(8)}      (target <= 3)`
      );
      if (ours.code !== 0) {
        console.log('  the CLI failed on this file (see its message above)');
      }
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  }
}

function main() {
  console.log(
    `cuda-memdiff engine benchmark: node ${process.version}, ${os.cpus().length} cores, median of ${RUNS} runs`
  );
  benchPair(
    'many_blocks cell02 -> cell03 (real H200 recording)',
    path.join(REC, 'cell02.pickle.gz'),
    path.join(REC, 'cell03.pickle.gz')
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-bench-'));
  try {
    execFileSync(PYTHON, [path.join(__dirname, 'make_large.py'), path.join(REC, 'cell03.pickle.gz'), dir, '100000']);
    benchPair(
      '100,000 blocks built from the real shape',
      path.join(dir, 'large_before.pickle.gz'),
      path.join(dir, 'large_after.pickle.gz')
    );
    benchMemory(
      '100,000 blocks built from the real shape',
      path.join(dir, 'large_before.pickle.gz'),
      path.join(dir, 'large_after.pickle.gz')
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // BENCH_LARGE_PAIR=before.pickle,after.pickle: the same figures for a pair of your own (a 190 MB one, say).
  if (process.env.BENCH_LARGE_PAIR) {
    const [before, after] = process.env.BENCH_LARGE_PAIR.split(',');
    benchMemory(`${path.basename(before)} -> ${path.basename(after)}`, before, after);
  }
  benchHistory();
}

if (require.main === module) {
  main();
} else {
  module.exports = { benchMemory, benchPair };
}
