#!/usr/bin/env node
/*
 * Writes exports/eval_without_no_grad--restart/: an exported session made
 * across a kernel restart, from the real H200 recording
 * recordings/eval_without_no_grad--python. The notebook ran cell by cell
 * (kernel 1), the kernel restarted, and its first two cells ran again
 * (kernel 2): the situation of issue 10 item 4.
 *
 * Nothing is made up: every snapshot is one the H200 wrote, and the folder is
 * written by the same code as the command "Export GPU Memory Session"
 * (sessionFolderFiles), with each cell's kernel session as the frontend's
 * store numbers it. The second kernel's snapshots are the recording's own
 * snapshots of those cells, as a fresh process running the same code gives
 * (a fresh CUDA context hands out the same addresses, which is the hard case:
 * the two kernels' blocks look identical).
 *
 * Run: npm run build:cli && node test-data/make_restart_session.js
 */
const fs = require('fs');
const path = require('path');
const engine = require('../dist/node/engine');

const HERE = __dirname;
const NAME = 'eval_without_no_grad--python';
const SOURCE = path.join(HERE, 'recordings', NAME);
const OUT = path.join(HERE, 'exports', 'eval_without_no_grad--restart');

/** The recorded cells to export, as [manifest position, kernel session]. */
const RUN = [
  [0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [5, 0],
  // the kernel restarts; the store's kernel session rises to 1
  [0, 1], [1, 1]
];

function main() {
  const manifestText = fs.readFileSync(path.join(SOURCE, 'manifest.json'), 'utf-8');
  const session = engine.loadSession(manifestText, f => new Uint8Array(fs.readFileSync(path.join(SOURCE, f))));
  const cells = session.manifest.cells;
  const exported = RUN.map(([k, kernelSession]) => ({
    index: cells[k].index,
    executionCount: cells[k].execution_count,
    source: cells[k].source,
    cellId: `cell-${cells[k].index}`,
    error: cells[k].error ?? null,
    snapshot: session.snapshots[k],
    oomSnapshots: [],
    devices: (cells[k].after.per_device ?? []).map(d => ({
      device: d.device,
      allocated: d.allocated,
      reserved: d.reserved,
      peak_allocated: d.max_allocated,
      peak_reserved: d.max_reserved,
      device_free: d.device_free,
      device_total: d.device_total
    })),
    kernelSession
  }));
  const files = engine.sessionFolderFiles(exported, {
    notebook: 'eval_without_no_grad.ipynb',
    made_from: `recordings/${NAME} by test-data/make_restart_session.js`,
    expected: {
      leak_cells: [2, 4],
      top_leak_cell: 4,
      clean_cells: [3, 5],
      notes:
        'kernel 1 ran every cell (cells 2 and 4 keep autograd graphs through `preds`); the kernel restarted ' +
        'and ran cells 0 and 1 again: the restart, not a cell, ended kernel 1\'s leak'
    }
  });
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, bytes] of files) {
    fs.writeFileSync(path.join(OUT, name), bytes);
  }
  process.stdout.write(`wrote ${OUT} (${files.size} files)\n`);
}

main();
