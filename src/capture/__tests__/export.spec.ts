// The panel's export of a live session, read back by the engine and the CLI: what the panel showed, the
// folder says, the peaks included. The store is filled from the helper's real messages (dump_replay.py).
import { loadSession, reportCells, sessionFolderFiles } from '../../engine';
import { manifestOf } from '../../engine/__tests__/data';
import { exportCells } from '../export';
import { replayedStore } from './replay';

/** The export of a replayed recording, as "Export CUDA Memory Session" writes it, read back. */
function exported(name: string) {
  const store = replayedStore(name);
  // the replay names the recording's cells cell-0, cell-1, ...
  const cells = manifestOf(name).cells.map(c => ({ id: `cell-${c.index}`, source: c.source }));
  const files = sessionFolderFiles(exportCells(store.records, cells), { notebook: `${name}.ipynb` });
  const manifest = new TextDecoder().decode(files.get('manifest.json'));
  return { store, files, manifest, session: loadSession(manifest, f => files.get(f)!) };
}

describe('an exported live session', () => {
  it("gives each cell the peak the panel gave it, whole: the wire's history is each cell's stretch, not a ring buffer", () => {
    const { store, session } = exported('gpu_memory_demo--python');
    const records = store.records.filter(r => r.reason === 'cell');
    const reports = reportCells(session);
    expect(reports.map(r => r.peak?.bytes)).toEqual(records.map(r => store.peakOf(r)!.bytes));
    // before, every cell after the first said "history lost entries": its file held only its own entries
    expect(reports.map(r => r.peak?.complete)).toEqual([true, true, true, true]);
    expect(reports[2].peak!.bytes).toBe(records[2].peakBytes);
  });

  it("writes each run's code, so the folder names an edited cell's frames as the panel did", () => {
    const name = 'gpu_memory_demo--python';
    const store = replayedStore(name);
    const sources = manifestOf(name).cells.map(c => c.source);
    // The leaking cell was fixed after its run.
    const now = sources.map((source, k) => ({ id: `cell-${k}`, source: k === 2 ? `# fixed\n${source}` : source }));
    const files = sessionFolderFiles(exportCells(store.records, now), { notebook: `${name}.ipynb` });
    const manifest = JSON.parse(new TextDecoder().decode(files.get('manifest.json')));
    expect(manifest.cells.map((c: { source: string }) => c.source)).toEqual(sources);
  });

  it('says in the manifest which stretch each snapshot file carries', () => {
    const { manifest } = exported('gpu_memory_demo--python');
    const cells = JSON.parse(manifest).cells;
    expect(cells[0].history).toEqual({ since_us: null, until_us: expect.any(Number), complete: true });
    cells.slice(1).forEach((c: any, k: number) => expect(c.history.since_us).toBe(cells[k].history.until_us));
  });

  it('reads a cell after one left out as a file alone, its history not linked to the cell before it', () => {
    const { files, manifest } = exported('gpu_memory_demo--python');
    const broken = new Map(files);
    broken.set('cell01.pickle.gz', new Uint8Array([1, 2, 3]));
    const session = loadSession(manifest, f => broken.get(f)!);
    expect(session.unreadable.map(u => u.file)).toEqual(['cell01.pickle.gz']);
    expect(session.snapshots[0].history).toBeDefined();
    expect(session.snapshots[1].history).toBeUndefined();
  });

  it('refuses a manifest whose history stretch is not one', () => {
    const { files, manifest } = exported('gpu_memory_demo--python');
    const bad = JSON.parse(manifest);
    bad.cells[1].history = { since_us: 'yesterday', until_us: 1, complete: true };
    expect(() => loadSession(JSON.stringify(bad), f => files.get(f)!)).toThrow(
      'manifest.json cells[1] history since_us must be a number or null, not "yesterday"'
    );
  });
});
