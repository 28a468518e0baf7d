/**
 * Store memory benchmark: 200 snapshots of about 40,000 blocks, each cell
 * changing a few hundred blocks, decoded from real helper messages into the
 * real SnapshotStore. Prints the retained heap; the target is under 100 MB.
 *
 *   npm run bench   (runs node --expose-gc bench/store.js)
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { WireDecoder } = require('../dist/node/engine');
const { SnapshotStore } = require('../dist/node/capture/store');

const ROOT = path.resolve(__dirname, '..');
const SNAPSHOTS = 200;
const CHANGED = 300;
const VENV = path.join(ROOT, '.venv', 'bin', 'python');
const PYTHON = process.env.PYTHON || (fs.existsSync(VENV) ? VENV : 'python3');

function heapMiB() {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** The kernel helper's real messages replaying many_blocks; the last is cell03 (40,501 blocks). */
function realMessages() {
  const out = execFileSync(
    PYTHON,
    [
      path.join(ROOT, 'kernel-helpers', 'tests', 'dump_replay.py'),
      path.join(ROOT, 'test-data', 'recordings', 'many_blocks--python')
    ],
    { encoding: 'utf-8', maxBuffer: 1 << 30, env: { ...process.env, PYTHONPATH: path.join(ROOT, 'kernel-helpers') } }
  );
  return out
    .trim()
    .split('\n')
    .map(l => JSON.parse(l))
    .filter(m => m.type === 'snapshot');
}

/** Step k: CHANGED blocks get a new stack (freed and re-allocated by the cell); nothing new to intern. */
function stepMessage(base, k, frameCount, stackCount) {
  const stack = base.blocks.stack.slice();
  const n = stack.length;
  for (let i = 0; i < CHANGED; i++) {
    const at = (k * 7919 + i * 104729) % n;
    stack[at] = (stack[at] + 1 + k) % stackCount;
  }
  return {
    ...base,
    cell_id: `cell-${k}`,
    execution_count: k + 1,
    frames: { base: frameCount, items: [] },
    stacks: { base: stackCount, items: [] },
    blocks: { ...base.blocks, stack }
  };
}

/** A SnapshotStore of SNAPSHOTS snapshots decoded from the helper's real messages; returns it and the time taken. */
function buildStore() {
  const messages = realMessages();
  const base = messages[messages.length - 1];
  const frameCount = base.frames.base + base.frames.items.length;
  const stackCount = base.stacks.base + base.stacks.items.length;
  const store = new SnapshotStore({ maxRecords: SNAPSHOTS });
  const decoder = new WireDecoder(store.frames);
  // The earlier cells' messages carry the frames and stacks the last one refers to.
  messages.slice(0, -1).forEach(m => decoder.decode(m));
  const started = performance.now();
  for (let k = 0; k < SNAPSHOTS; k++) {
    const message = k === 0 ? base : stepMessage(base, k, frameCount, stackCount);
    store.add({
      cellId: message.cell_id,
      executionCount: message.execution_count,
      reason: 'cell',
      snapshot: decoder.decode(message),
      devices: message.devices,
      error: null,
      replay: null
    });
  }
  return { store, ms: performance.now() - started };
}

function main() {
  if (typeof global.gc !== 'function') {
    throw new Error('run with node --expose-gc');
  }
  const before = heapMiB();
  const { store, ms } = buildStore();
  const used = heapMiB() - before;
  const blocks = store.records[0].snapshot.blocks.length;
  console.log(`store of ${SNAPSHOTS} snapshots x ${blocks} blocks, ${CHANGED} changed per cell`);
  console.log(
    `retained heap ${used.toFixed(1)} MiB (target < 100 MB = 95.4 MiB); ${((used / SNAPSHOTS) * 1024).toFixed(0)} KiB per snapshot`
  );
  console.log(`decode + store ${(ms / SNAPSHOTS).toFixed(1)} ms per snapshot`);
  const shared = new Set();
  for (const r of store.records) {
    for (const b of r.snapshot.blocks) {
      shared.add(b);
    }
  }
  console.log(`distinct block objects ${shared.size} for ${SNAPSHOTS * blocks} block slots`);
}

module.exports = { buildStore, SNAPSHOTS };

if (require.main === module) {
  main();
}
