/**
 * @jest-environment node
 */
import { diffSnapshots, FrameTable, groupBySite, normalizeSnapshot, PyValue, Snapshot } from '..';
import { recordedSnapshot } from './data';

const CELL = '/tmp/ipykernel_7/1111.py';
const TORCH = '/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py';

function frames(line: number, inner?: string): PyValue {
  const f: PyValue[] = [{ name: '<module>', filename: CELL, line }];
  if (inner) {
    f.unshift({ name: 'forward', filename: inner, line: 125 });
  }
  return f;
}

/** A one-segment snapshot from [address, size, line] triples, blocks allocated. */
function snap(table: FrameTable, blocks: [number, number, number][], device = 0): Snapshot {
  return normalizeSnapshot(
    {
      segments: [
        {
          device,
          address: 0,
          total_size: 1 << 20,
          blocks: blocks.map(([address, size, line]) => ({
            address,
            size,
            requested_size: size,
            state: 'active_allocated',
            frames: frames(line, line > 100 ? TORCH : undefined)
          }))
        }
      ],
      device_traces: [[]]
    },
    table
  );
}

describe('diffSnapshots', () => {
  it('tells born, freed and kept blocks apart by address, size and stack', () => {
    const t = new FrameTable();
    const before = snap(t, [
      [0, 512, 1],
      [512, 512, 2],
      [1024, 512, 3],
      [2048, 512, 4]
    ]);
    const after = snap(t, [
      [0, 512, 1],
      [512, 1024, 2],
      [1024 + 512, 512, 9],
      [2048, 512, 5]
    ]);
    const d = diffSnapshots(before, after);
    expect(d.keptCount).toBe(1);
    expect(d.freed.map(b => b.address)).toEqual([512, 1024, 2048]);
    expect(d.born.map(b => b.address)).toEqual([512, 1536, 2048]);
    expect(d.bornBytes).toBe(2048);
    expect(d.freedBytes).toBe(1536);
    expect(d.netBytes).toBe(512);
  });

  it('ignores free space and refuses snapshots with separate frame tables', () => {
    const t = new FrameTable();
    const a = snap(t, [[0, 512, 1]]);
    expect(() => diffSnapshots(a, snap(new FrameTable(), []))).toThrow(/share one FrameTable/);
    const empty = normalizeSnapshot(
      { segments: [{ address: 0, total_size: 1024, blocks: [{ address: 0, size: 1024, state: 'inactive' }] }] },
      t
    );
    expect(diffSnapshots(empty, a).born).toHaveLength(1);
    expect(diffSnapshots(a, empty).freed).toHaveLength(1);
  });

  it('keeps devices apart even at equal addresses', () => {
    const t = new FrameTable();
    const d0 = snap(t, [[0, 512, 1]], 0);
    const d1 = snap(t, [[0, 512, 1]], 1);
    const d = diffSnapshots(d0, d1);
    expect(d.devices).toEqual([
      { device: 0, bornBytes: 0, freedBytes: 512, netBytes: -512 },
      { device: 1, bornBytes: 512, freedBytes: 0, netBytes: 512 }
    ]);
  });
});

describe('groupBySite', () => {
  it('groups by the innermost user frame, hiding torch, largest change first', () => {
    const t = new FrameTable();
    const before = snap(t, []);
    const after = snap(t, [
      [0, 512, 1],
      [512, 512, 1],
      [1024, 4096, 101]
    ]);
    const groups = groupBySite(diffSnapshots(before, after));
    expect(groups.map(g => [t.frame(g.frameId).line, g.count, g.bornBytes])).toEqual([
      [101, 1, 4096],
      [1, 2, 1024]
    ]);
    expect(t.frame(groups[0].frameId).filename).toBe(CELL);
    const all = groupBySite(diffSnapshots(before, after), { allFrames: true });
    expect(all.map(g => t.frame(g.frameId).filename)).toContain(TORCH);
  });

  it('finds the cell that keeps autograd graphs in the real eval_without_no_grad session', () => {
    const t = new FrameTable();
    const before = recordedSnapshot('eval_without_no_grad--python', 'cell01.pickle.gz', t);
    const after = recordedSnapshot('eval_without_no_grad--python', 'cell02.pickle.gz', t);
    const [top] = groupBySite(diffSnapshots(before, after));
    const site = t.frame(top.frameId);
    expect(site.filename).toBe('/tmp/ipykernel_447/3447429980.py');
    expect(site.line).toBe(3); // preds.append(model(b))
    expect(top.netBytes).toBe(504406016 - 167813120);
  });
});
