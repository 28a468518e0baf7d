#!/usr/bin/env node
/*
 * Writes exports/*--restart/: sessions exported across a kernel restart, made
 * from real H200 recordings (issue 10, item 4).
 *
 * - gpu_memory_demo--restart: the demo notebook ran in one process
 *   (recordings/gpu_memory_demo--python, pid 503), the kernel restarted, and
 *   its first two cells ran again in another process (the same notebook
 *   recorded separately, live/gpu_memory_demo--holders, pid 669): two real
 *   kernels, with their own code names and their own block addresses.
 * - eval_without_no_grad--restart: recordings/eval_without_no_grad--python ran
 *   whole, the kernel restarted, and its first two cells ran again, replayed
 *   from the same recording. The two kernels' blocks then look identical
 *   (same addresses, same stacks): the worst case for telling kernels apart,
 *   which a new process can meet when it happens to get the same addresses.
 *
 * Nothing is made up: every snapshot is one the H200 wrote, and each folder
 * is written by the same code as the command "Export CUDA Memory Session"
 * (sessionFolderFiles), with each cell's kernel session numbered as the
 * frontend's store numbers it (0, then 1 after the restart). The committed
 * folders were written before the export numbered kernels 1, 2 in order (and
 * named the peaks max_*): they stand for older exports, which readers still
 * take as kernels 1 and 2.
 *
 * Run: npm run build:cli && node test-data/make_restart_session.js
 */
const fs = require('fs');
const path = require('path');
const engine = require('../dist/node/engine');

const HERE = __dirname;

/** The sessions to write: each kernel's recorded folder and the manifest positions of the cells it ran. */
const SESSIONS = [
  {
    name: 'gpu_memory_demo--restart',
    notebook: 'demo/gpu_memory_demo.ipynb',
    kernels: [
      { folder: 'recordings/gpu_memory_demo--python', cells: [0, 1, 2, 3] },
      { folder: 'live/gpu_memory_demo--holders', cells: [0, 1] }
    ],
    expected: {
      leak_cells: [2],
      top_leak_cell: 2,
      notes:
        'kernel 1 ran the demo (cell 2 keeps autograd graphs through `preds`); the kernel restarted and ran ' +
        'cells 0 and 1 again: the restart, not a cell, ended kernel 1\'s leak'
    }
  },
  {
    name: 'eval_without_no_grad--restart',
    notebook: 'eval_without_no_grad.ipynb',
    kernels: [
      { folder: 'recordings/eval_without_no_grad--python', cells: [0, 1, 2, 3, 4, 5] },
      { folder: 'recordings/eval_without_no_grad--python', cells: [0, 1] }
    ],
    expected: {
      leak_cells: [2, 4],
      top_leak_cell: 4,
      clean_cells: [3, 5],
      notes:
        'kernel 1 ran every cell (cells 2 and 4 keep autograd graphs through `preds`); the kernel restarted ' +
        'and ran cells 0 and 1 again, with blocks identical to kernel 1\'s: no block may be matched across kernels'
    }
  }
];

/** The cells of one session, as the export command hands them to sessionFolderFiles. */
function exportCells(spec) {
  const frames = new engine.FrameTable();
  return spec.kernels.flatMap((kernel, kernelSession) => {
    const dir = path.join(HERE, kernel.folder);
    const manifest = engine.parseManifest(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf-8'));
    return kernel.cells.map(k => {
      const cell = manifest.cells[k];
      return {
        index: cell.index,
        executionCount: cell.execution_count,
        source: cell.source,
        cellId: `cell-${cell.index}`,
        error: cell.error ?? null,
        snapshot: engine.readSnapshot(new Uint8Array(fs.readFileSync(path.join(dir, cell.snapshot_file))), frames),
        oomSnapshots: [],
        devices: (cell.after.per_device ?? []).map(d => ({
          device: d.device,
          allocated: d.allocated,
          reserved: d.reserved,
          peak_allocated: d.max_allocated,
          peak_reserved: d.max_reserved,
          device_free: d.device_free,
          device_total: d.device_total
        })),
        kernelSession
      };
    });
  });
}

function main() {
  for (const spec of SESSIONS) {
    const files = engine.sessionFolderFiles(exportCells(spec), {
      notebook: spec.notebook,
      made_from: `${spec.kernels.map(k => k.folder).join(' + ')} by test-data/make_restart_session.js`,
      expected: spec.expected
    });
    const out = path.join(HERE, 'exports', spec.name);
    fs.rmSync(out, { recursive: true, force: true });
    fs.mkdirSync(out, { recursive: true });
    for (const [name, bytes] of files) {
      fs.writeFileSync(path.join(out, name), bytes);
    }
    process.stdout.write(`wrote ${out} (${files.size} files)\n`);
  }
}

main();
