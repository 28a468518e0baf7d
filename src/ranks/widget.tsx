/**
 * The main-area widget of a multi-rank session: reads the folder of the
 * opened ranks.json through the contents API, hands the files to the engine
 * worker, and shows the RanksView, or one line saying why it cannot.
 */
import * as React from 'react';
import { ReactWidget } from '@jupyterlab/apputils';
import { Contents } from '@jupyterlab/services';
import { TranslationBundle } from '@jupyterlab/translation';
import { unreadableReason } from '../components/unreadable';
import { IEngineWorker } from '../tokens';
import { IRankFile, IRanksSummary } from '../worker/ranks';
import { CompareRanks, RanksView } from './view';

/** Bytes of a base64 file model. */
function decodeBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/\s+/g, ''));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  return bytes;
}

/** Every file the engine needs from a multi-rank folder: the index and each rank folder's files. */
async function readRankFiles(contents: Contents.IManager, dir: string): Promise<IRankFile[]> {
  const join = (...parts: string[]) => parts.filter(Boolean).join('/');
  const listing = await contents.get(dir, { content: true });
  const entries = (listing.content as Contents.IModel[]) ?? [];
  const files: IRankFile[] = [];
  for (const entry of entries) {
    if (entry.type === 'file' && entry.name === 'ranks.json') {
      const model = await contents.get(entry.path, { format: 'base64', type: 'file', content: true });
      files.push({ path: entry.name, bytes: decodeBase64(model.content as string) });
    }
    if (entry.type === 'directory' && /^rank\d+$/.test(entry.name)) {
      const folder = await contents.get(entry.path, { content: true });
      for (const file of (folder.content as Contents.IModel[]) ?? []) {
        if (file.type === 'file') {
          const model = await contents.get(file.path, { format: 'base64', type: 'file', content: true });
          files.push({ path: join(entry.name, file.name), bytes: decodeBase64(model.content as string) });
        }
      }
    }
  }
  return files;
}

export class RanksWidget extends ReactWidget {
  constructor(
    private readonly _path: string,
    private readonly _contents: Contents.IManager,
    private readonly _engine: IEngineWorker,
    private readonly _trans: TranslationBundle
  ) {
    super();
    this.addClass('jp-CudaMemdiffRanksWidget');
    void this._load();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._summary) {
      void this._engine.call('closeRanks', this._summary.id);
    }
    super.dispose();
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    if (this._error) {
      return (
        <p role="alert" className="jp-CudaMemdiffFile-error">
          {trans.__('Not a readable multi-rank session: %1', this._error)}
        </p>
      );
    }
    if (!this._summary) {
      return <p role="status">{trans.__('Reading the ranks…')}</p>;
    }
    return <RanksView summary={this._summary} trans={trans} compare={this._compare} />;
  }

  private async _load(): Promise<void> {
    const dir = this._path.split('/').slice(0, -1).join('/');
    try {
      const files = await readRankFiles(this._contents, dir);
      const buffers = files.map(f => f.bytes.buffer as ArrayBuffer);
      this._summary = await this._engine.call('loadRanks', files, buffers);
    } catch (reason) {
      this._error = unreadableReason(reason);
    }
    if (!this.isDisposed) {
      this.update();
    }
  }

  /** One function for the view's life, so its effects run only when the choice changes. */
  private readonly _compare: CompareRanks = (a, b, point) =>
    this._engine.call('compareRanks', { id: this._summary!.id, a, b, point });
  private _summary: IRanksSummary | null = null;
  private _error: string | null = null;
}
