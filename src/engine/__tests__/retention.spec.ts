// Retention per execution on real H200 sessions: who allocated what is still alive.
import * as fs from 'fs';
import * as path from 'path';
import { aliveBytesAt, loadSession, retentionByExecution } from '..';
import { readBytes, RECORDINGS } from './data';

function sessionOf(name: string) {
  return loadSession(fs.readFileSync(path.join(RECORDINGS, name, 'manifest.json'), 'utf-8'), f =>
    readBytes(path.join(RECORDINGS, name, f))
  );
}

describe('retentionByExecution', () => {
  it('accounts for every allocated byte of the last snapshot', () => {
    for (const name of [
      'clean_training--python',
      'eval_without_no_grad--python',
      'multi_gpu_split--python',
      'rnn_hidden_no_detach--python'
    ]) {
      const session = sessionOf(name);
      const retention = retentionByExecution(session.snapshots);
      const last = session.snapshots[session.snapshots.length - 1];
      const alive = retention.reduce((n, r) => n + r.aliveBytes, 0);
      expect(alive).toBe(last.totals.reduce((n, t) => n + t.allocatedBytes, 0));
      for (const r of retention) {
        expect(r.aliveBytes + r.freedLaterBytes).toBe(r.leftBytes);
        expect(r.freedLaterBytes).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it('sees a re-run free the graphs of the run before it (eval_without_no_grad)', () => {
    const retention = retentionByExecution(sessionOf('eval_without_no_grad--python').snapshots);
    // cell 2 built preds with graphs; cell 4 (same source) rebinds preds, freeing them.
    // The allocation history tells the rebuilt blocks from cell 2's, though many
    // reuse the same addresses. What cell 2 keeps is the 32 + 1 MiB of cuBLAS
    // workspaces its first matmul allocated, which live as long as the process.
    const workspace = 33 * 2 ** 20;
    expect(retention[2].leftBytes).toBe(504406016 - 167813120);
    expect(retention[2].aliveBytes).toBe(workspace);
    expect(retention[2].alive.map(b => b.size).sort((a, b) => a - b)).toEqual([2 ** 20, 32 * 2 ** 20]);
    expect(retention[4].aliveBytes).toBe(retention[2].leftBytes - workspace);
    // what cell 2 left when it ended, and which execution freed it
    expect([...retention[2].freedBy]).toEqual([[4, retention[2].leftBytes - workspace]]);
    expect(aliveBytesAt(retention[2], 3)).toBe(retention[2].leftBytes);
    expect(aliveBytesAt(retention[2], 4)).toBe(workspace);
    // the model's weights from cell 0 are still there
    expect(retention[0].aliveBytes).toBe(retention[0].leftBytes);
  });

  it('shows memory that grows with each run of the same source (rnn_hidden_no_detach)', () => {
    const retention = retentionByExecution(sessionOf('rnn_hidden_no_detach--python').snapshots);
    expect(retention[1].aliveBytes).toBeGreaterThan(256 * 2 ** 20);
    expect(retention[2].aliveBytes).toBeGreaterThan(256 * 2 ** 20);
  });
});
