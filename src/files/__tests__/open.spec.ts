// Files dropped on the panel, page side: through the engine (in-process here,
// the same handler the worker runs) into a real panel model, as the files
// plugin wires them; a broken file is named in one line and nothing shown is lost.
import { File as NodeFile } from 'buffer';
import * as fs from 'fs';
import * as path from 'path';
import { Signal } from '@lumino/signaling';
import { formatBytes, totalBytes } from '../../engine';
import { DiffPanelModel } from '../../panel/model';
import type { IDiffPanel } from '../../tokens';
import { EngineWorker } from '../../worker/client';
import { openDroppedFiles } from '../open';

const REC = path.resolve(__dirname, '../../../test-data/recordings/eval_without_no_grad--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));
/** A File as the drop event carries it (Node's, which jsdom lacks: it has no arrayBuffer()). */
const fileOf = (bytes: Uint8Array | string, name: string) => new NodeFile([bytes], name) as unknown as File;
const dropped = (name: string) => fileOf(fs.readFileSync(path.join(REC, name)), name);

/** The panel as the files plugin sees it, over a real model. */
function panelOver(model: DiffPanelModel): IDiffPanel & { reveals: number } {
  return {
    reveals: 0,
    addFile: (name, snapshot, p) => void model.addFile(name, snapshot, p ?? null),
    fileUnreadable: (name, reason) => model.fileUnreadable(name, reason),
    reveal() {
      this.reveals++;
    },
    shownSnapshot: () => null,
    cellNames: () => model.cellNames(),
    filesDropped: new Signal<unknown, readonly File[]>({})
  };
}

describe('openDroppedFiles', () => {
  it('shows each dropped file as the recording holds it, and names a broken one without losing the rest', async () => {
    const model = new DiffPanelModel();
    const panel = panelOver(model);
    const worker = new EngineWorker();
    await openDroppedFiles(
      [dropped('cell01.pickle.gz'), fileOf('not a pickle', 'notes.pickle'), dropped('cell02.pickle.gz')],
      panel,
      worker
    );
    expect(model.files.map(f => [f.name, f.path])).toEqual([
      ['cell01.pickle.gz', null],
      ['cell02.pickle.gz', null]
    ]);
    expect(model.files.map(f => totalBytes(f.snapshot, 'allocatedBytes'))).toEqual([
      manifest.cells[1].after.allocated,
      manifest.cells[2].after.allocated
    ]);
    // The last good file is shown; the message about the broken one was cleared by it.
    expect(model.diff!.netBytes).toBe(manifest.cells[2].after.allocated);
    expect(model.fileError).toBeNull();
    expect(panel.reveals).toBe(2);

    await openDroppedFiles([fileOf(new Uint8Array([0x80, 0x02, 0x7d]), 'cut.pickle')], panel, worker);
    expect(model.fileError).toMatch(/^cut\.pickle: [^\n]+$/);
    expect(model.files).toHaveLength(2);
    expect(formatBytes(model.diff!.netBytes)).toBe(formatBytes(manifest.cells[2].after.allocated));
    worker.dispose();
  });
});
