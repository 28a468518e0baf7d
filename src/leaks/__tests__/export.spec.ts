// The session the panel exports carries the kernel's answers about who holds each block, so
// `cuda-memdiff leaks` on the folder gives the verdicts the panel gave (npm run build:cli first).
// Before: the panel said "high confidence" for the demo's leak and the CLI "medium confidence".
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { exportCells } from '../../capture/export';
import { IHolderAnswer, parseHolderAnswer, sessionFolderFiles } from '../../engine';
import { DiffPanelModel, IFollowedNotebook } from '../../panel/model';
import { LeakFinderModel } from '../model';
import { recordedStore } from './recorded';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const LIVE = path.join(ROOT, 'test-data', 'live', 'gpu_memory_demo--holders');

/** The demo replayed in the panel: the replay kernel answers with the holders recorded after the last cell. */
function demo() {
  const { manifest, store } = recordedStore(LIVE);
  const last = manifest.cells[manifest.cells.length - 1];
  const answer = (): IHolderAnswer => ({
    ...parseHolderAnswer(JSON.parse(fs.readFileSync(path.join(LIVE, last.holders_file!), 'utf-8'))),
    replay: 'gpu_memory_demo--holders'
  });
  const cells = manifest.cells.map((c, i) => ({ id: `cell-${i}`, source: c.source }));
  const notebook: IFollowedNotebook = {
    title: 'gpu_memory_demo.ipynb',
    store,
    cells: () => cells,
    requestHolders: () => Promise.resolve(answer())
  };
  const panel = new DiffPanelModel();
  panel.setNotebook(notebook);
  return { store, cells, leaks: new LeakFinderModel(panel) };
}

/** The export written to a folder, as the export command writes it. */
function writeExport(files: Map<string, Uint8Array>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-export-'));
  for (const [name, bytes] of files) {
    fs.writeFileSync(path.join(dir, name), bytes);
  }
  return dir;
}

function leaksJson(dir: string) {
  const r = spawnSync(process.execPath, [BIN, 'leaks', dir, '--json'], { encoding: 'utf-8' });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as {
    top_leak: number | null;
    cells: { execution: number; verdict: string; confidence: string; holders: string[] }[];
  };
}

describe('the session the panel exports', () => {
  it('carries the holders the kernel named, so the CLI gives the verdicts the panel gave', async () => {
    const { store, cells, leaks } = demo();
    const panel = (await leaks.run().refined)!;
    expect(panel.holders).toBe('kernel');
    expect(panel.top!.verdict.confidence).toBe('high');

    const files = sessionFolderFiles(
      exportCells(store.records, cells, r => store.holdersOf(r)),
      { notebook: 'gpu_memory_demo.ipynb' }
    );
    const manifest = JSON.parse(new TextDecoder().decode(files.get('manifest.json')));
    // only the cell the kernel was asked about after has an answer: the one the finder ranked last
    expect(manifest.cells.map((c: { holders_file?: string }) => c.holders_file ?? null)).toEqual([
      null,
      null,
      null,
      'cell03.holders.json'
    ]);
    const dir = writeExport(files);
    try {
      const cli = leaksJson(dir);
      const byExecution = new Map(cli.cells.map(c => [c.execution, c]));
      for (const entry of panel.entries) {
        const cell = byExecution.get(entry.verdict.execution)!;
        expect([cell.verdict, cell.confidence]).toEqual([entry.verdict.verdict, entry.verdict.confidence]);
      }
      expect(cli.top_leak).toBe(2);
      expect(byExecution.get(2)!.holders).toContain('autograd graph of preds[0:8]');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no holders files where the kernel was never asked', () => {
    const { store, cells } = demo();
    const files = sessionFolderFiles(exportCells(store.records, cells, r => store.holdersOf(r)));
    expect([...files.keys()].filter(name => name.endsWith('.holders.json'))).toEqual([]);
  });
});
