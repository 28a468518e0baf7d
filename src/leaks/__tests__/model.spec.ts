// The leak finder's model over a session recorded on the H200, with the
// holders the kernel named there (test-data/live/): what the panel shows
// before and after the kernel answers, and when it cannot.
import * as fs from 'fs';
import * as path from 'path';
import { BlockQuery } from '../../capture/protocol';
import { SnapshotStore } from '../../capture/store';
import { IHolderAnswer, IRankLeaksRequest, parseHolderAnswer } from '../../engine';
import { DiffPanelModel, IFollowedNotebook } from '../../panel/model';
import { LeakFinderModel } from '../model';
import { EngineWorker } from '../../worker/client';
import { recordedStore } from './recorded';

const LIVE = path.resolve(__dirname, '../../../test-data/live/gpu_memory_demo--holders');
const manifest = JSON.parse(fs.readFileSync(path.join(LIVE, 'manifest.json'), 'utf-8'));
const read = (name: string) => fs.readFileSync(path.join(LIVE, name));
// What the kernel answered after the last cell, on the H200.
const recordedAnswer = () =>
  parseHolderAnswer(JSON.parse(read(manifest.cells[manifest.cells.length - 1].holders_file).toString()));

function notebook(requestHolders?: (blocks: readonly BlockQuery[]) => Promise<IHolderAnswer>): IFollowedNotebook {
  const { store } = recordedStore(LIVE);
  return {
    title: 'gpu_memory_demo.ipynb',
    store,
    cells: () => manifest.cells.map((c: { source: string }, i: number) => ({ id: `cell-${i}`, source: c.source })),
    requestHolders
  };
}

function finder(nb: IFollowedNotebook | null) {
  const panel = new DiffPanelModel();
  panel.setNotebook(nb);
  return { panel, leaks: new LeakFinderModel(panel) };
}

describe('LeakFinderModel', () => {
  it('ranks in the engine worker: the snapshots go once, the second ranking sends only the holders', async () => {
    const worker = new EngineWorker();
    const call = jest.spyOn(worker, 'call');
    const panel = new DiffPanelModel();
    panel.setNotebook(notebook(() => Promise.resolve(recordedAnswer())));
    const leaks = new LeakFinderModel(panel, worker);
    const final = (await leaks.run().refined)!;
    const sent = call.mock.calls.map(([op, payload]) => {
      const request = payload as unknown as IRankLeaksRequest;
      return [op, request.session !== undefined, request.holders !== undefined];
    });
    expect(sent).toEqual([
      ['rankLeaks', true, false],
      ['rankLeaks', false, true]
    ]);
    // the blocks travel as moved buffers, not as objects to clone
    expect(call.mock.calls[0][2]!.length).toBe(2 * manifest.cells.length);
    expect(final.top!.record.cellId).toBe('cell-2');
    expect(final.labels).toEqual(['Cell [1]', 'Cell [2]', 'Cell [3]', 'Cell [4]']);
  });

  it('ranks at once from the snapshots, then again with the kernel\u2019s holders', async () => {
    const asked: BlockQuery[][] = [];
    const { leaks } = finder(
      notebook(blocks => {
        asked.push([...blocks]);
        return Promise.resolve(recordedAnswer());
      })
    );
    const run = leaks.run();
    expect(leaks.running).toBe(true);
    expect(leaks.findings).toBeNull();
    const findings = (await run.findings)!;
    expect(leaks.running).toBe(true);
    expect(findings.holders).toBe('pending');
    expect(findings.top!.label).toBe('Cell [3]');
    expect(findings.top!.record.cellId).toBe('cell-2');
    const final = (await run.refined)!;
    expect(leaks.running).toBe(false);
    expect(final.holders).toBe('kernel');
    expect(final.top!.record.cellId).toBe('cell-2');
    expect(final.top!.verdict.confidence).toBe('high');
    expect(final.top!.verdict.holders).toContainEqual({ kind: 'graph', path: 'preds[0:8]' });
    // it asked about every allocated block of the latest snapshot, largest first
    // (the recorder asked the kernel the same question: its answer covers each block once)
    expect(asked[0].length).toBe(recordedAnswer().holders.size);
    expect(asked[0][0][2]).toBeGreaterThanOrEqual(asked[0][asked[0].length - 1][2]);
    expect(final.entries.map(e => e.verdict.verdict)).toEqual(['leak', 'retained', 'retained', 'retained']);
    // the weights, saved by every graph of preds: the recording's helper listed 4 holders a block at most, so the
    // three graphs it named are said to be maybe not all (before: "preds[0:3]" beside everyone else's preds[0:8])
    const weights = final.entries.find(e => e.record.cellId === 'cell-0')!.verdict;
    expect(weights.findings.find(f => f.code === 'kernel-holders-clear')).toMatchObject({
      holders: expect.arrayContaining([{ kind: 'graph', path: 'preds[0:3]', cut: 'cap' }])
    });
  });

  it('reads each run as it ran: the fix of the leaking cell changes nothing in what its earlier run left', async () => {
    const answer = () => Promise.resolve(recordedAnswer());
    const asRun = (await finder(notebook(answer)).leaks.run().refined)!;
    // The user fixes the leaking cell (the loop under no_grad, a word above it) before running the finder.
    const fixed = manifest.cells.map((c: { source: string }) => c.source);
    fixed[2] =
      '# evaluation only\npreds = []\nwith torch.no_grad():\n    for b in batches:\n        preds.append(model(b))';
    const edited = {
      ...notebook(answer),
      cells: () => fixed.map((source: string, i: number) => ({ id: `cell-${i}`, source }))
    };
    const after = (await finder(edited).leaks.run().refined)!;
    expect(after.top!.record.cellId).toBe('cell-2');
    expect(after.entries.map(e => e.verdict)).toEqual(asRun.entries.map(e => e.verdict));
  });

  it('says why holders are only guessed: a replayed session, or a kernel that does not answer', async () => {
    const replayed = finder(
      notebook(() => Promise.resolve({ ...recordedAnswer(), holders: new Map(), replay: 'gpu_memory_demo--python' }))
    );
    const a = (await replayed.leaks.run().refined)!;
    expect(a.holders).toBe('guessed');
    expect(a.holdersNote).toEqual({ kind: 'replay', session: 'gpu_memory_demo--python', recording: null });
    expect(a.top!.record.cellId).toBe('cell-2');

    const silent = finder(notebook(() => Promise.reject(new Error('the kernel did not answer within 30 s'))));
    const b = (await silent.leaks.run().refined)!;
    expect(b.holdersNote).toEqual({ kind: 'failed', reason: 'the kernel did not answer within 30 s' });
    expect(b.top!.record.cellId).toBe('cell-2');
  });

  it('names a replayed recording as its helper says it was made (its GPU), keeping the folder', async () => {
    const recording = { scenario: 'gpu_memory_demo', device: 'NVIDIA H200', device_count: 1 };
    const nb = notebook(() => Promise.resolve({ ...recordedAnswer(), replay: 'gpu_memory_demo--holders' }));
    (nb.store as SnapshotStore).setHelper({
      status: 'ready',
      message: '',
      replay: 'gpu_memory_demo--holders',
      recording
    });
    const found = (await finder(nb).leaks.run().refined)!;
    expect(found.holdersNote).toEqual({
      kind: 'recorded',
      session: 'gpu_memory_demo--holders',
      recording,
      partial: false
    });
  });

  it('explains an empty ranking and drops findings when the panel follows another notebook', async () => {
    expect(await finder(null).leaks.run().findings).toBeNull();
    const none = finder(null).leaks;
    none.run();
    expect(none.error).toBe('no-notebook');
    const empty = finder({ title: 'x', store: new SnapshotStore(), cells: () => [] }).leaks;
    empty.run();
    expect(empty.error).toBe('no-snapshots');
    // a CPU-only kernel has run cells, but has no GPU memory to rank: say that
    for (const [status, problem] of [
      ['no-cuda', 'no-cuda'],
      ['waiting-for-torch', 'no-torch'],
      ['capture-off', 'capture-off'],
      ['not-python', 'not-python']
    ] as const) {
      const store = new SnapshotStore();
      store.setHelper({ status, message: '', replay: null });
      const cpu = finder({ title: 'x', store, cells: () => [] }).leaks;
      cpu.run();
      expect(cpu.error).toBe(problem);
    }

    const { panel, leaks } = finder(notebook(() => Promise.resolve(recordedAnswer())));
    await leaks.run().refined;
    expect(leaks.findings).not.toBeNull();
    panel.setNotebook(notebook());
    expect(leaks.findings).toBeNull();
  });

  it('drops the findings when the kernel restarts or changes: the memory they are about is gone', async () => {
    const nb = notebook(() => Promise.resolve(recordedAnswer()));
    const { leaks } = finder(nb);
    await leaks.run().refined;
    expect(leaks.findings!.top).not.toBeNull();
    (nb.store as SnapshotStore).setHelper({ ...nb.store.helper }); // news of the same kernel keeps them
    expect(leaks.findings).not.toBeNull();
    (nb.store as SnapshotStore).newKernelSession();
    expect(leaks.findings).toBeNull();
    expect(leaks.running).toBe(false);
    // a ranking still running when the kernel restarts ends with nothing, not the old kernel's top cell
    const later = notebook(() => Promise.resolve(recordedAnswer()));
    const second = finder(later).leaks;
    const run = second.run();
    (later.store as SnapshotStore).newKernelSession();
    expect(await run.findings).toBeNull();
    expect(await run.refined).toBeNull();
    expect(second.findings).toBeNull();
  });

  it('names the runs it ranks as the chart names them once the session restarted: kernel 2\u2019s [3], not [3]', async () => {
    const { store, addCell } = recordedStore(LIVE);
    store.newKernelSession();
    manifest.cells.forEach((_: unknown, k: number) => addCell(k));
    const { leaks } = finder({ ...notebook(), store });
    const findings = await leaks.run().findings;
    expect(findings!.labels).toEqual([
      'Cell [1] in kernel 2',
      'Cell [2] in kernel 2',
      'Cell [3] in kernel 2',
      'Cell [4] in kernel 2'
    ]);
    expect(findings!.top!.label).toBe('Cell [3] in kernel 2');
  });

  it('keeps each run\u2019s answer for its latest cell: a leak only the holders showed, freed later, is fixed', async () => {
    // out_cache: cell 0 makes x (64 MiB), cell 2 runs `del x`. Asked right after cell 0, the kernel
    // says an exception the user kept holds it (as exception_fixed's `err` did on the H200).
    const folder = path.resolve(__dirname, '../../../test-data/live/out_cache--holders');
    const { manifest: recorded, store, addCell } = recordedStore(folder, 1);
    const answerAfter = (k: number) =>
      parseHolderAnswer(JSON.parse(fs.readFileSync(path.join(folder, recorded.cells[k].holders_file!)).toString()));
    const kept = answerAfter(0);
    const viaErr = new Map(
      [...kept.holders].map(([key, list]) => [
        key,
        list.map(h =>
          h.path === 'x'
            ? {
                kind: 'traceback' as const,
                path: 'err.__traceback__: step() local x',
                reference: { type: 'exception' as const, name: 'err' }
              }
            : h
        )
      ])
    );
    const answers = [{ ...kept, holders: viaErr }, answerAfter(2)];
    const { leaks } = finder({
      title: 'out_cache.ipynb',
      store,
      cells: () => recorded.cells.map((c, i) => ({ id: `cell-${i}`, source: c.source ?? '' })),
      requestHolders: () => Promise.resolve(answers.shift()!)
    });
    const first = (await leaks.run().refined)!;
    expect(first.top!.verdict).toMatchObject({ verdict: 'leak', causes: ['traceback'] });
    addCell(1);
    addCell(2);
    const later = (await leaks.run().refined)!;
    const cell0 = later.entries.find(e => e.record.cellId === 'cell-0')!.verdict;
    expect([cell0.verdict, cell0.fixedBy, cell0.holders]).toEqual([
      'fixed',
      2,
      [
        {
          kind: 'traceback',
          path: 'err.__traceback__: step() local x',
          reference: { type: 'exception', name: 'err' }
        }
      ]
    ]);
  });

  it('keeps only the latest run\u2019s answer', async () => {
    let release: (a: IHolderAnswer) => void = () => undefined;
    const slow = new Promise<IHolderAnswer>(resolve => (release = resolve));
    let calls = 0;
    const { leaks } = finder(notebook(() => (calls++ === 0 ? slow : Promise.resolve(recordedAnswer()))));
    const first = leaks.run();
    // ranked, and now waiting for the kernel
    await first.findings;
    const second = leaks.run();
    await second.refined;
    release({ ...recordedAnswer(), holders: new Map(), replay: 'stale' });
    await first.refined;
    expect(leaks.findings!.holders).toBe('kernel');
  });
});
