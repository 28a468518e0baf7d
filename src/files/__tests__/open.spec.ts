// Files dropped on the panel, page side: through the engine (in-process here,
// the same handler the worker runs) into a real panel model, as the files
// plugin wires them; a broken file is named in one line and nothing shown is
// lost; an OOM dump opens on its post-mortem, as it does from the file browser.
import { File as NodeFile } from 'buffer';
import * as fs from 'fs';
import * as path from 'path';
import { sleep } from '@jupyterlab/testing';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { formatBytes, totalBytes } from '../../engine';
import { MemdiffPanel } from '../../panel';
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
    addFile: (name, snapshot, p, oom) => void model.addFile(name, snapshot, p ?? null, oom ?? null),
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

  it('opens a dropped OOM dump on its post-mortem, above its diff, as an opened one', async () => {
    const view = new MemdiffPanel();
    Widget.attach(view, document.body);
    const worker = new EngineWorker();
    const oomDump = path.resolve(REC, '../oom--python/oom00.pickle.gz');
    await openDroppedFiles([fileOf(fs.readFileSync(oomDump), 'oom00.pickle.gz')], panelOver(view.model), worker);
    const [file] = view.model.files;
    expect(file.oom).toMatchObject({ device: 0, requestBytes: 60 * 2 ** 30, atError: true });
    expect(view.model.openingSection(file)).toBe('fileOom');

    // What the panel shows, in the words of the file's own view: React renders after the widget's update request.
    const section = () => view.node.querySelector('[data-cuda-memdiff-section="fileOom"]');
    for (let i = 0; i < 100 && !section(); i++) {
      await sleep(20);
    }
    expect(section()?.querySelector('h3')?.textContent).toBe('Out of memory in file oom00.pickle.gz');
    expect(section()?.querySelector('[role="alert"]')?.textContent).toBe(
      'It asked for 60.0 GiB on cuda:0; the device had 39.3 GiB free.'
    );
    expect(section()?.querySelectorAll('[data-cuda-memdiff-holders="site"] tbody tr')).toHaveLength(1);
    const diff = view.node.querySelector('[data-cuda-memdiff-section="diff"]')!;
    expect(section()!.compareDocumentPosition(diff) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();

    // Another file without an error shows no post-mortem: it belongs to the file the diff shows.
    await openDroppedFiles([dropped('cell01.pickle.gz')], panelOver(view.model), worker);
    expect(view.model.openingSection(view.model.files[1])).toBe('diff');
    for (let i = 0; i < 100 && section(); i++) {
      await sleep(20);
    }
    expect(section()).toBeNull();
    view.dispose();
    worker.dispose();
  });
});
