/**
 * Leak ranking benchmark: findLeaks over a session of 200 snapshots of about
 * 40,000 blocks (the store benchmark's, decoded from the helper's real
 * messages), with ten cell sources run twenty times each so the re-run rules
 * have work to do. Prints the median of 5 runs; the target is within 1 s.
 *
 *   npm run bench   (runs node bench/leaks.js)
 */
const { findLeaks } = require('../dist/node/engine');
const { buildStore, SNAPSHOTS } = require('./store');

const RUNS = 5;
const SOURCES = 10;

function main() {
  const { store } = buildStore();
  const records = store.records;
  const snapshots = records.map(r => r.snapshot);
  const executions = records.map((r, k) => ({
    cellId: `cell-${k % SOURCES}`,
    executionCount: r.executionCount,
    source: `for _ in range(8):\n    out${k % SOURCES} = model(x)\nkeep.append(out${k % SOURCES})`,
    error: null,
    label: `Cell [${r.executionCount}]`
  }));
  const times = [];
  let report = null;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    report = findLeaks(snapshots, executions);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[RUNS >> 1];
  const blocks = snapshots[0].blocks.length;
  const leaks = report.executions.filter(v => v.verdict === 'leak').length;
  console.log(`leak ranking over ${SNAPSHOTS} snapshots x ${blocks} blocks: median ${median.toFixed(0)} ms of ${RUNS} (target 1000 ms); ` +
    `min ${times[0].toFixed(0)} ms, max ${times[RUNS - 1].toFixed(0)} ms; ${leaks} executions judged leak`);
}

main();
