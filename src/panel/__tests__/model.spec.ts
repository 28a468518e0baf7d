import * as fs from 'fs';
import * as path from 'path';
import { Signal } from '@lumino/signaling';
import { SnapshotStore } from '../../capture/store';
import { cellLine, cellTag, fromTransfer, murmur2, readSnapshot, toTransfer } from '../../engine';
import { cellTagText } from '../../components/runNames';
import { DiffPanelModel, distinctFileNames, IFollowedNotebook, PanelSection } from '../model';
import { runsOf } from '../../engine/__tests__/roleRuns';
import { nullTranslator } from '@jupyterlab/translation';
import { frameText } from '../../components/stack';

const REC = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));
/** Cell `k`'s recorded snapshot, parsed as the engine worker hands it over (a frame table of its own). */
const parsed = (k: number) =>
  readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))));

function notebookWith(count: number): IFollowedNotebook & { store: SnapshotStore } {
  const store = new SnapshotStore();
  for (let k = 0; k < count; k++) {
    const after = manifest.cells[k].after;
    store.add({
      cellId: `cell-${k}`,
      executionCount: k + 1,
      reason: 'cell',
      seq: k + 1,
      before: [
        { device: 0, allocated: manifest.cells[k].before.allocated, reserved: manifest.cells[k].before.reserved }
      ],
      snapshot: readSnapshot(
        new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[k].snapshot_file))),
        store.frames
      ),
      devices: [
        {
          device: 0,
          allocated: after.allocated,
          reserved: after.reserved,
          peak_allocated: after.max_allocated,
          peak_reserved: after.max_reserved,
          device_free: null,
          device_total: null
        }
      ],
      error: null,
      replay: null
    });
  }
  return {
    title: 'demo.ipynb',
    store,
    cells: () => manifest.cells.map((c: any, i: number) => ({ id: `cell-${i}`, source: c.source }))
  };
}

describe('DiffPanelModel', () => {
  it('follows the latest cell until one is selected, and diffs it against the cell before', () => {
    const model = new DiffPanelModel();
    const notebook = notebookWith(3);
    let changes = 0;
    model.changed.connect(() => changes++);
    model.setNotebook(notebook);
    expect(model.selected!.cellId).toBe('cell-2');
    const before = model.comparison!.before;
    expect(before.kind === 'record' && before.record.cellId).toBe('cell-1');
    expect(model.diff!.netBytes).toBe(manifest.cells[2].after.allocated - manifest.cells[1].after.allocated);
    model.select(model.records[0]);
    expect(model.comparison!.before).toEqual({ kind: 'empty' });
    expect(model.diff!.netBytes).toBe(manifest.cells[0].after.allocated);
    expect(changes).toBe(2);
  });

  it('keeps one cell-name map while the cells are unchanged', () => {
    const model = new DiffPanelModel();
    const sources = manifest.cells.map((c: any) => c.source as string);
    const notebook = {
      ...notebookWith(3),
      cells: () => sources.map((source: string, i: number) => ({ id: `cell-${i}`, source }))
    };
    model.setNotebook(notebook);
    const names = model.cellNames();
    expect(model.cellNames()).toBe(names);
    sources[0] = sources[0] + '\n# edited';
    expect(model.cellNames()).not.toBe(names);
  });

  it('names a cell that has not run by its place, and follows the place when a cell is added above', () => {
    const model = new DiffPanelModel();
    const sources = manifest.cells.map((c: any) => c.source as string);
    let above = 0; // markdown cells above the code cells
    const cellsChanged = new Signal<unknown, unknown>({});
    const notebook = {
      ...notebookWith(3),
      cellsChanged,
      cells: () =>
        sources.map((source: string, i: number) => ({
          id: `cell-${i}`,
          source,
          position: { index: above + i + 1, total: above + sources.length }
        }))
    };
    model.setNotebook(notebook);
    let redraws = 0;
    model.changed.connect(() => redraws++);
    const placeOf = () =>
      model
        .cellNames()
        .lookup(`/tmp/ipykernel_447/${murmur2(sources[4])}.py`)!
        .cells.map(cellTag);
    // Cell 2 ran (its record gives [3]); its copy, cell 4, has not: named by its place.
    expect(placeOf()).toEqual(['[3]', `5/${sources.length}`]);
    above = 1;
    cellsChanged.emit(undefined);
    expect(redraws).toBe(1); // the views ask again
    expect(placeOf()).toEqual(['[3]', `6/${sources.length + 1}`]);
  });

  it('maps frames to the notebook cells with their execution counts', () => {
    const model = new DiffPanelModel();
    model.setNotebook(notebookWith(3));
    const site = model.groups[0];
    const frame = model.diff!.frames.frame(site.frameId);
    const match = model.cellNames().lookup(frame.filename)!;
    expect(match.cells.map(c => [c.id, c.executionCount])).toEqual([
      ['cell-2', 3],
      ['cell-4', null]
    ]);
  });

  it("compares any two snapshots: the notebook's and opened files", () => {
    const model = new DiffPanelModel();
    model.setNotebook(notebookWith(3));
    const file = model.addFile('cell04.pickle.gz', parsed(4));
    expect(model.isCustomComparison).toBe(true);
    expect(model.diff!.netBytes).toBe(manifest.cells[4].after.allocated);
    // the file against the notebook's cell [3]: same memory, graphs rebuilt at new places
    model.compare({ kind: 'record', record: model.records[2] }, { kind: 'file', file });
    expect(model.diff!.netBytes).toBe(manifest.cells[4].after.allocated - manifest.cells[2].after.allocated);
    expect(model.diff!.born.length).toBeGreaterThan(0);
    model.select(model.records[1]);
    expect(model.isCustomComparison).toBe(false);
  });

  it('names the cell whose snapshot the diff shows, and none while it shows a file', () => {
    const model = new DiffPanelModel();
    model.setNotebook(notebookWith(3));
    expect(model.shownRecord).toBe(model.records[2]);
    const file = model.addFile('cell04.pickle.gz', parsed(4));
    expect(model.shownRecord).toBeNull();
    // the selected cell stays selected, but the diff is not about it
    expect(model.selected).toBe(model.records[2]);
    model.compare({ kind: 'record', record: model.records[2] }, { kind: 'record', record: model.records[0] });
    expect(model.shownRecord).toBe(model.records[0]);
    model.compare({ kind: 'record', record: model.records[0] }, { kind: 'file', file });
    expect(model.shownRecord).toBeNull();
    model.select(model.records[1]);
    expect(model.shownRecord).toBe(model.records[1]);
  });

  it('keeps everything as it was when a file cannot be read', () => {
    const model = new DiffPanelModel();
    model.setNotebook(notebookWith(2));
    const kept = model.addFile('cell04.pickle.gz', parsed(4));
    const diff = model.diff;
    model.fileUnreadable('notes.txt', 'not a snapshot');
    expect(model.fileError).toBe('notes.txt: not a snapshot');
    expect(model.files).toEqual([kept]);
    expect(model.diff).toBe(diff);
    // the next file read clears the message
    model.addFile('cell03.pickle.gz', parsed(3));
    expect(model.fileError).toBeNull();
  });

  it('lets the user dismiss the note of an unreadable file, and says so once', () => {
    const model = new DiffPanelModel();
    let changes = 0;
    model.changed.connect(() => changes++);
    model.fileUnreadable('notes.txt', 'not a snapshot');
    changes = 0;
    model.dismissFileError();
    expect(model.fileError).toBeNull();
    expect(changes).toBe(1);
    // nothing left to dismiss: no redraw
    model.dismissFileError();
    expect(changes).toBe(1);
  });

  it('regroups when all frames are shown, and empties without a notebook', () => {
    const model = new DiffPanelModel();
    model.setNotebook(notebookWith(3));
    const filtered = model.groups;
    model.showAllFrames = true;
    expect(model.groups).not.toBe(filtered);
    expect(model.diff!.frames.frame(model.groups[0].frameId).filename).toContain('site-packages/torch');
    model.setNotebook(null);
    expect(model.records).toEqual([]);
    expect(model.diff).toBeNull();
  });
});

describe('DiffPanelModel devices', () => {
  it('lists the devices a two-GPU session used', () => {
    const rec = path.resolve(__dirname, '../../../test-data/recordings/multi_gpu_split--python');
    const m = JSON.parse(fs.readFileSync(path.join(rec, 'manifest.json'), 'utf-8'));
    const store = new SnapshotStore();
    store.add({
      cellId: 'a',
      executionCount: 4,
      reason: 'cell',
      seq: 1,
      snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(rec, m.cells[3].snapshot_file))), store.frames),
      devices: [],
      error: null,
      replay: null
    });
    const model = new DiffPanelModel();
    model.setNotebook({ title: 'x', store, cells: () => [] });
    expect(model.devices).toEqual([0, 1]);
    model.device = 1;
    expect(model.device).toBe(1);
  });
});

describe('DiffPanelModel files', () => {
  it('shows a new file against an empty device, not against an unrelated earlier file', () => {
    const model = new DiffPanelModel();
    const first = model.addFile('cell01.pickle.gz', parsed(1), 'runs/a/cell01.pickle.gz');
    const second = model.addFile('cell02.pickle.gz', parsed(2), 'runs/a/cell02.pickle.gz');
    expect(model.comparison).toEqual({ before: { kind: 'empty' }, after: { kind: 'file', file: second } });
    expect(model.diff!.netBytes).toBe(manifest.cells[2].after.allocated);
    // the user picks what to compare it with
    model.compare({ kind: 'file', file: first }, { kind: 'file', file: second });
    expect(model.diff!.netBytes).toBe(manifest.cells[2].after.allocated - manifest.cells[1].after.allocated);
  });

  it('says two files look like two runs, from what the worker hands over (no trace)', () => {
    const handedOver = (file: string) =>
      fromTransfer(toTransfer(readSnapshot(new Uint8Array(fs.readFileSync(path.resolve(REC, '..', file))))));
    const model = new DiffPanelModel();
    const a = model.addFile('cell01.pickle.gz', parsed(1), 'runs/a/cell01.pickle.gz');
    const b = model.addFile('cell03.pickle.gz', parsed(3), 'runs/a/cell03.pickle.gz');
    const other = model.addFile('cell02.pickle.gz', handedOver('multi_gpu_split--python/cell02.pickle.gz'));
    model.compare({ kind: 'file', file: a }, { kind: 'file', file: b });
    expect(model.differentRuns).toBeNull();
    model.compare({ kind: 'file', file: a }, { kind: 'file', file: other });
    expect(model.differentRuns?.evidence).toEqual([
      { code: 'device-count', before: 1, after: 2 },
      { code: 'segments-apart', beforeSegments: parsed(1).segments.length, afterSegments: 16 }
    ]);
    // An empty device shares nothing with anything, and says nothing.
    model.compare({ kind: 'empty' }, { kind: 'file', file: other });
    expect(model.differentRuns).toBeNull();
  });

  it('tells files of one name apart by their folders, and reopening a path replaces it', () => {
    const model = new DiffPanelModel();
    const a = model.addFile('cell01.pickle.gz', parsed(1), 'runs/a/cell01.pickle.gz');
    const b = model.addFile('cell01.pickle.gz', parsed(2), 'runs/b/cell01.pickle.gz');
    const c = model.addFile('cell03.pickle.gz', parsed(3), 'runs/b/cell03.pickle.gz');
    expect([a, b, c].map(f => model.fileLabel(f))).toEqual([
      'a/cell01.pickle.gz',
      'b/cell01.pickle.gz',
      'cell03.pickle.gz'
    ]);
    const again = model.addFile('cell01.pickle.gz', parsed(4), 'runs/a/cell01.pickle.gz');
    expect(model.files).toEqual([again, b, c]);
  });

  it('closes a file; a comparison that showed it falls back', () => {
    const model = new DiffPanelModel();
    const a = model.addFile('cell01.pickle.gz', parsed(1), 'a/cell01.pickle.gz');
    const b = model.addFile('cell02.pickle.gz', parsed(2), 'a/cell02.pickle.gz');
    model.removeFile(b);
    expect(model.files).toEqual([a]);
    expect(model.comparison).toEqual({ before: { kind: 'empty' }, after: { kind: 'file', file: a } });
    model.removeFile(a);
    expect(model.comparison).toBeNull();

    // with a notebook, closing the shown file goes back to the selected cell
    model.setNotebook(notebookWith(3));
    const f = model.addFile('cell04.pickle.gz', parsed(4));
    expect(model.isCustomComparison).toBe(true);
    model.removeFile(f);
    expect(model.isCustomComparison).toBe(false);
    expect(model.comparison!.after).toEqual({ kind: 'record', record: model.records[2] });
  });

  it('names paths by their shortest distinguishing suffix', () => {
    expect(distinctFileNames(['x/a/s.pkl', 'x/b/s.pkl', 'c.pkl'])).toEqual(['a/s.pkl', 'b/s.pkl', 'c.pkl']);
    expect(distinctFileNames(['p/q/a/s.pkl', 'r/q/a/s.pkl'])).toEqual(['p/q/a/s.pkl', 'r/q/a/s.pkl']);
    expect(distinctFileNames(['s.pkl', 's.pkl'])).toEqual(['s.pkl (1)', 's.pkl (2)']);
  });
});

describe('DiffPanelModel kernel sessions and reveal requests', () => {
  it('numbers kernel sessions from 1 in the order they ran', () => {
    const model = new DiffPanelModel();
    const notebook = notebookWith(2);
    const snapshot = notebook.store.records[0].snapshot;
    notebook.store.newKernelSession();
    notebook.store.add({
      cellId: 'cell-0',
      executionCount: 1,
      reason: 'cell',
      seq: 1,
      snapshot,
      devices: [],
      error: null,
      replay: null
    });
    model.setNotebook(notebook);
    expect(model.records.map(r => model.runTag(r))).toEqual(['[1] in kernel 1', '[2] in kernel 1', '[1] in kernel 2']);
  });

  it("names a cell in a frame by its run in the snapshot's kernel: two cells are never both [1]", () => {
    // Kernel 1 runs cell-0 [1] and cell-1 [2]; after a restart, cell-1 runs again as [1].
    const model = new DiffPanelModel();
    const notebook = notebookWith(2);
    notebook.store.newKernelSession();
    notebook.store.add({
      cellId: 'cell-1',
      executionCount: 1,
      reason: 'cell',
      seq: 1,
      snapshot: notebook.store.records[1].snapshot,
      devices: [],
      error: null,
      replay: null
    });
    model.setNotebook(notebook);
    const [first, second, again] = model.records;
    const named = (names: ReturnType<typeof model.cellNames>, k: number) =>
      names.lookup(`/tmp/ipykernel_447/${murmur2(manifest.cells[k].source)}.py`)!.cells.map(c => cellTagText(c));
    // kernel 1's snapshots: cell-1's frames are its kernel 1 run, not its latest
    const inKernel1 = model.cellNamesFor({ kind: 'record', record: second });
    expect(named(inKernel1, 0)).toEqual(['[1] in kernel 1']);
    expect(named(inKernel1, 1)).toEqual(['[2] in kernel 1']);
    // kernel 2's (and by default the kernel running now): cell-0 has not run there, its run in kernel 1 names it
    for (const names of [model.cellNamesFor({ kind: 'record', record: again }), model.cellNames()]) {
      expect(named(names, 0)).toEqual(['[1] in kernel 1']);
      expect(named(names, 1)).toEqual(['[1] in kernel 2']);
    }
    // the diff names the frames by its later side's kernel, and by its earlier one when the later is no cell
    expect(named(model.cellNamesFor({ kind: 'empty' }, { kind: 'record', record: first }), 1)).toEqual([
      '[2] in kernel 1'
    ]);
    // a name per kernel, kept while nothing changed
    expect(model.cellNamesFor({ kind: 'record', record: second })).toBe(inKernel1);
  });

  it('follows the cells of Run All after a restart unless the user picked a pair by hand', () => {
    const model = new DiffPanelModel();
    const notebook = notebookWith(3);
    const runAgain = () =>
      notebook.store.add({
        cellId: 'cell-0',
        executionCount: 1,
        reason: 'cell',
        seq: 1,
        snapshot: notebook.store.records[0].snapshot,
        devices: [],
        error: null,
        replay: null
      });
    model.setNotebook(notebook);
    // a cell selected on the chart stays selected until another cell runs
    model.select(model.records[1]);
    expect(model.shownRecord).toBe(model.records[1]);
    notebook.store.newKernelSession();
    runAgain();
    expect(model.shownRecord).toBe(model.records[3]);
    expect(model.runTag(model.shownRecord!)).toBe('[1] in kernel 2');
    // a pair picked in the pickers stays through new cells
    const [first, second] = model.records;
    model.compare({ kind: 'record', record: first }, { kind: 'record', record: second });
    runAgain();
    expect(model.comparison).toEqual({
      before: { kind: 'record', record: first },
      after: { kind: 'record', record: second }
    });
  });

  it('passes reveal requests to the views', () => {
    const model = new DiffPanelModel();
    const asked: PanelSection[] = [];
    model.revealRequested.connect((_, section) => asked.push(section));
    model.reveal('diff');
    model.reveal('leaks');
    expect(asked).toEqual(['diff', 'leaks']);
  });
});

describe('DiffPanelModel after a cell is edited', () => {
  // The demo recorded on an H200: [3] keeps every batch's autograd graph alive through `preds`.
  const DEMO = path.resolve(__dirname, '../../../test-data/recordings/gpu_memory_demo--python');
  const demo = JSON.parse(fs.readFileSync(path.join(DEMO, 'manifest.json'), 'utf-8'));
  const sources: string[] = demo.cells.map((c: { source: string }) => c.source);
  // The usual fix: the loop under no_grad, with a word above it.
  const FIXED =
    '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';

  /** The demo run cell by cell, each snapshot with the code its run ran (as the helper sends it). */
  function demoNotebook(now: string[]): IFollowedNotebook & { store: SnapshotStore } {
    const store = new SnapshotStore();
    demo.cells.forEach((c: { snapshot_file: string; execution_count: number }, k: number) => {
      store.add({
        cellId: `cell-${k}`,
        executionCount: c.execution_count,
        reason: 'cell',
        seq: k + 1,
        snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(DEMO, c.snapshot_file))), store.frames),
        devices: [],
        error: null,
        source: sources[k],
        replay: null
      });
    });
    return { title: 'demo.ipynb', store, cells: () => now.map((source, k) => ({ id: `cell-${k}`, source })) };
  }

  /** The cells the top site of the selected diff names, as the panel puts them: run, edited, line as run and now. */
  function topSite(model: DiffPanelModel) {
    const frame = model.diff!.frames.frame(model.groups[0].frameId);
    return model
      .cellNames()
      .lookup(frame.filename)
      ?.cells.map(cell => {
        const { edited, deleted, textAsRun, lineNow } = cellLine(cell, frame.line);
        return { id: cell.id, tag: cellTag(cell), line: frame.line, edited, deleted, textAsRun, lineNow };
      });
  }

  it("keeps naming an earlier run's frame by its cell, and says where its code is now", () => {
    const now = [...sources];
    const model = new DiffPanelModel();
    const notebook = demoNotebook(now);
    model.setNotebook(notebook);
    model.select(model.records[2]);
    const asRun = { id: 'cell-2', tag: '[3]', line: 3, deleted: false, textAsRun: 'preds.append(model(b))' };
    expect(topSite(model)).toEqual([{ ...asRun, edited: false, lineNow: 3 }]);

    // The user fixes the cell: the frame of run [3] still names it, edited, its code now on line 5.
    now[2] = FIXED;
    expect(topSite(model)).toEqual([{ ...asRun, edited: true, lineNow: 5 }]);

    // ... and runs it again as [5]: run [3]'s frame still names run [3].
    notebook.store.add({
      cellId: 'cell-2',
      executionCount: 5,
      reason: 'cell',
      seq: 5,
      snapshot: notebook.store.records[3].snapshot,
      devices: [],
      error: null,
      source: FIXED,
      replay: null
    });
    model.select(model.records[2]);
    expect(topSite(model)).toEqual([{ ...asRun, edited: true, lineNow: 5 }]);

    // An edit that removes the line: the frame still names the cell, with no line to land on.
    now[2] = 'preds = [model(b).detach() for b in batches]';
    expect(topSite(model)).toEqual([{ ...asRun, edited: true, lineNow: null }]);
  });

  it('redraws once typing in a cell pauses, and not for a change that renames nothing', async () => {
    const now = [...sources];
    const contentChanged = new Signal<unknown, unknown>({});
    const model = new DiffPanelModel();
    model.setNotebook({ ...demoNotebook(now), contentChanged });
    model.select(model.records[2]);
    expect(topSite(model)![0].edited).toBe(false);
    let redraws = 0;
    model.changed.connect(() => redraws++);
    const settled = () => new Promise(resolve => setTimeout(resolve, DiffPanelModel.EDIT_SETTLE_MS + 100));
    // an output arrives: no name changes
    contentChanged.emit(undefined);
    await settled();
    expect(redraws).toBe(0);
    // the user types the fix, key by key: one redraw after the last key
    for (let k = 1; k <= FIXED.length; k += 8) {
      now[2] = FIXED.slice(0, k);
      contentChanged.emit(undefined);
    }
    now[2] = FIXED;
    contentChanged.emit(undefined);
    expect(redraws).toBe(0);
    await settled();
    expect(redraws).toBe(1);
    expect(topSite(model)![0]).toMatchObject({ edited: true, lineNow: 5 });
    // another notebook followed: the first one's typing redraws nothing
    model.setNotebook(null);
    redraws = 0;
    now[2] = sources[2];
    contentChanged.emit(undefined);
    await settled();
    expect(redraws).toBe(0);
  });

  it('names a run of a deleted cell by that run, as deleted, with the line as it ran and nowhere to go', () => {
    const kept = new Set(sources.map((_, k) => `cell-${k}`));
    const notebook = demoNotebook(sources);
    const model = new DiffPanelModel();
    model.setNotebook({
      ...notebook,
      cells: () => sources.map((source, k) => ({ id: `cell-${k}`, source })).filter(c => kept.has(c.id))
    });
    model.select(model.records[2]);
    const names = model.cellNames();
    const asRun = { id: 'cell-2', tag: '[3]', line: 3, edited: false, textAsRun: 'preds.append(model(b))' };
    expect(topSite(model)).toEqual([{ ...asRun, deleted: false, lineNow: 3 }]);

    // The user deletes the leaking cell: its run's frame names that run, deleted, in the panel's words.
    kept.delete('cell-2');
    expect(model.cellNames()).not.toBe(names);
    expect(topSite(model)).toEqual([{ ...asRun, deleted: true, lineNow: null }]);
    const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
    const frame = model.diff!.frames.frame(model.groups[0].frameId);
    expect(frameText(frame, model.cellNames(), trans)).toBe('A deleted cell [3], line 3');

    // Undo brings the cell back: the frame leads to it again.
    kept.add('cell-2');
    expect(topSite(model)).toEqual([{ ...asRun, deleted: false, lineNow: 3 }]);
  });

  it('names no cell for frames of a helper that did not say its code', () => {
    const model = new DiffPanelModel();
    // the records of an older helper carry no code: an edited or deleted cell's earlier frames stay unnamed
    const older = notebookWith(3);
    model.setNotebook(older);
    model.select(model.records[2]);
    // [3] and [5] ran the same code: both cells have it
    expect(topSite(model)?.map(c => c.id)).toEqual(['cell-2', 'cell-4']);
    model.setNotebook({ ...older, cells: () => older.cells().filter(c => c.id !== 'cell-2' && c.id !== 'cell-4') });
    model.select(model.records[2]);
    expect(topSite(model)).toBeUndefined();
    const edited = manifest.cells.map((c: { source: string }) => c.source);
    edited[2] = FIXED;
    edited[4] = FIXED;
    model.setNotebook({
      ...older,
      cells: () => edited.map((source: string, i: number) => ({ id: `cell-${i}`, source }))
    });
    model.select(model.records[2]);
    expect(topSite(model)).toBeUndefined();
  });
});

describe('DiffPanelModel by role', () => {
  const ROLES_DIR = path.resolve(__dirname, '../../../test-data/roles/training_roles--python');
  const rolesManifest = JSON.parse(fs.readFileSync(path.join(ROLES_DIR, 'manifest.json'), 'utf-8'));

  /** The recorded training session as a replay kernel sends it: each cell with its block roles. */
  function trainingNotebook(withRuns: boolean): IFollowedNotebook & { store: SnapshotStore } {
    const store = new SnapshotStore();
    rolesManifest.cells.forEach((cell: any, k: number) => {
      const file = JSON.parse(fs.readFileSync(path.join(ROLES_DIR, cell.roles_file), 'utf-8'));
      store.add({
        cellId: `cell-${k}`,
        executionCount: k + 1,
        reason: 'cell',
        seq: k + 1,
        snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(ROLES_DIR, cell.snapshot_file))), store.frames),
        devices: [],
        error: null,
        replay: 'training_roles--python',
        roles: { ...cell.roles, ...(withRuns ? { blocks: runsOf(file) } : {}) }
      });
    });
    return { title: 'roles.ipynb', store, cells: () => [] };
  }

  it("groups the selected cell's diff by role from the store's block roles, and an empty side has no blocks", () => {
    const model = new DiffPanelModel();
    model.setNotebook(trainingNotebook(true));
    model.select(model.records[4]);
    expect(model.canGroupByRole).toBe(true);
    model.grouping = 'role';
    const groups = model.roleGroups!;
    expect(groups[0].role).toBe('activation');
    expect(groups.reduce((n, g) => n + g.netBytes, 0)).toBe(model.diff!.netBytes);
    // against an empty device every allocated block is born, with its role after the cell
    model.compare({ kind: 'empty' }, { kind: 'record', record: model.records[4] });
    const fromNothing = Object.fromEntries(model.roleGroups!.map(g => [g.role, g.bornBytes]));
    const held = Object.entries(rolesManifest.cells[4].roles.bytes).filter(([, n]) => (n as number) > 0);
    expect(fromNothing).toEqual(Object.fromEntries(held));
  });

  it('has no role groups when the kernel sent no block roles', () => {
    const model = new DiffPanelModel();
    model.setNotebook(trainingNotebook(false));
    model.grouping = 'role';
    expect(model.canGroupByRole).toBe(false);
    expect(model.roleGroups).toBeNull();
    expect(model.groups.length).toBeGreaterThan(0);
  });
});

describe('DiffPanelModel names a file from another process', () => {
  // The demo (live/gpu_memory_demo--holders, kernel pid 669) and eval_without_no_grad (pid 447) both run
  // `preds = []; for b in batches: preds.append(model(b))`: one source, one ipykernel hash, two processes.
  const DEMO = path.resolve(REC, '../../live/gpu_memory_demo--holders');
  const demo = JSON.parse(fs.readFileSync(path.join(DEMO, 'manifest.json'), 'utf-8'));

  function demoNotebook(): IFollowedNotebook & { store: SnapshotStore } {
    const store = new SnapshotStore();
    demo.cells.forEach((c: any, k: number) =>
      store.add({
        cellId: `cell-${k}`,
        executionCount: c.execution_count,
        reason: 'cell',
        seq: k + 1,
        snapshot: readSnapshot(new Uint8Array(fs.readFileSync(path.join(DEMO, c.snapshot_file))), store.frames),
        devices: [],
        error: null,
        replay: null
      })
    );
    return {
      title: 'gpu_memory_demo.ipynb',
      store,
      cells: () => demo.cells.map((c: any, i: number) => ({ id: `cell-${i}`, source: c.source }))
    };
  }

  it("matches a frame to a cell only where the notebook's kernel ran that code", () => {
    const model = new DiffPanelModel();
    const notebook = demoNotebook();
    model.setNotebook(notebook);
    expect([...notebook.store.cellCodeFolders]).toEqual(['/tmp/ipykernel_669/']);
    // Was "Cell [3], line 3": the other process's file read as if this notebook's Cell [3] made it.
    model.addFile('cell03.pickle.gz', parsed(3));
    const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
    const names = model.cellNamesFor(model.comparison!.before, model.comparison!.after);
    const labels = model.groups.map(g => frameText(model.diff!.frames.frame(g.frameId), names, trans));
    expect(labels).toEqual([
      '<module> (/tmp/ipykernel_447/3447429980.py:3; same code as Cell [3], run by another process)',
      '<module> (/tmp/ipykernel_447/2461975253.py:3)',
      '<module> (/tmp/ipykernel_447/3654366748.py:1)'
    ]);
    // The notebook's own snapshot, saved and dropped back: its kernel's code, so its cells.
    const own = readSnapshot(new Uint8Array(fs.readFileSync(path.join(DEMO, 'cell02.pickle.gz'))));
    model.addFile('cell02.pickle.gz', own, 'demo/cell02.pickle.gz');
    const mine = model.cellNamesFor(model.comparison!.before, model.comparison!.after);
    expect(frameText(model.diff!.frames.frame(model.groups[0].frameId), mine, trans)).toBe('Cell [3], line 3');
  });
});
