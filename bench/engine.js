/**
 * Engine benchmark: prints figures, asserts nothing (targets are reported).
 *
 *   npm run bench
 *
 * Reads and diffs the real many_blocks recording (40,501 blocks) and a
 * 100,000-block pair built from its shape (bench/make_large.py), and compares
 * our reading time with Python's pickle.load on the same files.
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
  console.log(`${'ratio ours / python (unpickle; read + summarise)'.padEnd(58)} ${(decodeMs / pyMs).toFixed(2)} ; ${(readMs / pyMs).toFixed(2)}   (target <= 1)`);
  const diffMs = time(() => engine.diffSnapshots(a, b), RUNS * 3);
  report('diff (born / freed / kept)', diffMs, b.blocks.length >= 100000 ? '<= 50 ms' : undefined);
  const groupMs = time(() => engine.groupBySite(engine.diffSnapshots(a, b)), RUNS * 3);
  report('diff + group by allocation site', groupMs);
  const d = engine.diffSnapshots(a, b);
  console.log(`  diff: born ${d.born.length}, freed ${d.freed.length}, kept ${d.keptCount}`);
}

function main() {
  console.log(`cuda-memdiff engine benchmark: node ${process.version}, ${os.cpus().length} cores, median of ${RUNS} runs`);
  benchPair('many_blocks cell02 -> cell03 (real H200 recording)', path.join(REC, 'cell02.pickle.gz'), path.join(REC, 'cell03.pickle.gz'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-bench-'));
  try {
    execFileSync(PYTHON, [path.join(__dirname, 'make_large.py'), path.join(REC, 'cell03.pickle.gz'), dir, '100000']);
    benchPair('100,000 blocks built from the real shape', path.join(dir, 'large_before.pickle.gz'), path.join(dir, 'large_after.pickle.gz'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
