// The ranks view's verdict in words, from the H200 DDP job (test-data/ranks/ddp_one_gpu).
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import { IRankFile, loadRanks } from '../../worker/ranks';
import { missingText, verdictText } from '../words';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const DDP = path.resolve(__dirname, '../../../test-data/ranks/ddp_one_gpu');

/** The job's files as the view reads them; `points` cuts a rank to its first points. */
function files(points: Record<string, number> = {}): IRankFile[] {
  return [
    'ranks.json',
    ...['rank0', 'rank1'].flatMap(r => fs.readdirSync(path.join(DDP, r)).map(f => `${r}/${f}`))
  ].map(p => {
    const bytes = new Uint8Array(fs.readFileSync(path.join(DDP, p)));
    const [rank, name] = p.split('/');
    if (name !== 'manifest.json' || points[rank] === undefined) {
      return { path: p, bytes };
    }
    const manifest = JSON.parse(new TextDecoder().decode(bytes));
    const cut = { ...manifest, cells: manifest.cells.slice(0, points[rank]) };
    return { path: p, bytes: new TextEncoder().encode(JSON.stringify(cut)) };
  });
}

describe('verdictText', () => {
  it('names the growing rank and the flat one', () => {
    expect(verdictText(loadRanks(files()), trans)).toBe(
      'Rank 1 grows 64.0 MiB per step, from ranks_cuda_job.py:40 _train. Rank 0 is flat.'
    );
  });

  it('says a rank with one capture point has too few steps to tell, not that every rank is flat', () => {
    // Before: "Every rank is flat from step to step."
    expect(verdictText(loadRanks(files({ rank1: 1 })), trans)).toBe(
      'Rank 0 is flat from step to step. Rank 1 has fewer than two optimizer-step capture points: too few steps to tell.'
    );
  });
});

describe('missingText', () => {
  /** The job's files with ranks.json claiming `worldSize`. */
  const claiming = (worldSize: number) =>
    files().map(f =>
      f.path === 'ranks.json'
        ? {
            path: f.path,
            bytes: new TextEncoder().encode(
              JSON.stringify({ ...JSON.parse(new TextDecoder().decode(f.bytes)), world_size: worldSize })
            )
          }
        : f
    );

  it('names the ranks a big world lacks as one run, and says nothing when none is missing', () => {
    // Before: the worker sent every missing rank, and the view joined them all.
    expect(missingText(loadRanks(claiming(1_000_000)), trans)).toBe(
      'No folder for ranks 2-999,999: their captures did not reach this folder.'
    );
    expect(missingText(loadRanks(claiming(3)), trans)).toBe(
      'No folder for rank 2: its capture did not reach this folder.'
    );
    expect(missingText(loadRanks(files()), trans)).toBeNull();
  });

  it('gets the same bound on the world size as the CLI', () => {
    expect(() => loadRanks(claiming(1e9))).toThrow(
      'ranks.json: world_size 1,000,000,000 is more ranks than any job runs'
    );
  });
});
