// One name per allocator figure: the wire's `peak_allocated` is what a session
// folder writes, and a manifest written before (`max_allocated`) still reads.
import * as fs from 'fs';
import * as path from 'path';
import { loadSession, readSnapshot, reportCells, sessionFolderFiles } from '..';
import { manifestOf, readBytes, RECORDINGS } from './data';

const NAME = 'eval_without_no_grad--python';

describe('allocator figures in a session folder', () => {
  it("are written under the wire's names and read back as the cell's peak", () => {
    const m = manifestOf(NAME);
    const snapshots = m.cells.map(c => readSnapshot(readBytes(path.join(RECORDINGS, NAME, c.snapshot_file))));
    const peaks = m.cells.map((c, k) => snapshots[k].totals[0].allocatedBytes + (k + 1) * 2 ** 20);
    const files = sessionFolderFiles(
      m.cells.map((c, k) => ({
        index: c.index,
        executionCount: c.execution_count,
        source: c.source,
        cellId: `cell-${k}`,
        error: null,
        snapshot: snapshots[k],
        oomSnapshots: [],
        devices: [
          {
            device: 0,
            allocated: snapshots[k].totals[0].allocatedBytes,
            reserved: snapshots[k].totals[0].reservedBytes,
            peak_allocated: peaks[k],
            peak_reserved: snapshots[k].totals[0].reservedBytes,
            device_free: null,
            device_total: null
          }
        ]
      })),
      {}
    );
    const text = new TextDecoder().decode(files.get('manifest.json'));
    expect(text).toContain('"peak_allocated"');
    expect(text).not.toContain('max_allocated');
    const again = loadSession(text, f => files.get(f)!);
    expect(reportCells(again).map(r => r.peakBytes)).toEqual(peaks);
  });

  it('keep reading the older name in manifests already written', () => {
    const text = fs.readFileSync(path.join(RECORDINGS, NAME, 'manifest.json'), 'utf-8');
    expect(text).toContain('max_allocated');
    const session = loadSession(text, f => readBytes(path.join(RECORDINGS, NAME, f)));
    expect(reportCells(session).map(r => r.peakBytes)).toEqual(manifestOf(NAME).cells.map(c => c.after!.max_allocated));
  });
});
