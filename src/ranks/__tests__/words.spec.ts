// The ranks view's verdict in words, from the H200 DDP job (test-data/ranks/ddp_one_gpu).
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import { IRankFile, loadRanks } from '../../worker/ranks';
import { verdictText } from '../words';

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
