// The helper's real messages (a real IPython shell replaying every H200
// recording) decoded by the engine give the allocator's own numbers.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { gzipSync } from 'fflate';
import { decodeSnapshotBytes, FrameTable, IWireSnapshot, pickle, PyDict, SnapshotError, WireDecoder } from '..';
import { helperMessages, LIVE, manifestOf, recordedSnapshot, recordingNames, RECORDINGS } from './data';

describe.each(recordingNames())('wire messages of %s', name => {
  const messages = helperMessages(path.join(RECORDINGS, name));
  const manifest = manifestOf(name);

  it('decode to the allocated and reserved bytes of every cell', () => {
    const decoder = new WireDecoder(new FrameTable());
    const cells = messages.filter(m => m.type === 'snapshot' && m.reason === 'cell') as IWireSnapshot[];
    expect(cells).toHaveLength(manifest.cells.length);
    for (const m of messages.filter(m => m.type === 'snapshot')) {
      const snapshot = decoder.decode(m);
      if (m.reason !== 'cell') {
        continue;
      }
      const cell = manifest.cells[cells.indexOf(m)];
      expect(snapshot.totals.reduce((n, t) => n + t.allocatedBytes, 0)).toBe(cell.after!.allocated);
      expect(snapshot.totals.reduce((n, t) => n + t.reservedBytes, 0)).toBe(cell.after!.reserved);
      expect(m.cell_id).toBe(`cell-${cells.indexOf(m)}`);
    }
  });

  it('keep the blocks and stacks of the raw snapshot', () => {
    const frames = new FrameTable();
    const decoder = new WireDecoder(frames);
    const snapshots = messages.filter(m => m.type === 'snapshot').map(m => decoder.decode(m));
    const last = snapshots[snapshots.length - 1];
    const raw = recordedSnapshot(name, manifest.cells[manifest.cells.length - 1].snapshot_file, frames);
    const live = (s: typeof raw) =>
      s.blocks.filter(b => b.state !== 'inactive').map(b => [b.device, b.address, b.size, b.stack]);
    expect(live(last)).toEqual(live(raw));
  });
});

describe('WireDecoder', () => {
  const [, first, second, third] = helperMessages(path.join(RECORDINGS, 'eval_without_no_grad--python'));

  it("reads each segment's expandable flag, and none from an older helper", () => {
    const marked = { ...first, segments: { ...first.segments, expandable: first.segments.address.map(() => 1) } };
    expect(new WireDecoder(new FrameTable()).decode(marked).segments.every(g => g.isExpandable)).toBe(true);
    const older = { ...first, segments: { ...first.segments, expandable: undefined } };
    expect(new WireDecoder(new FrameTable()).decode(older).segments.some(g => g.isExpandable)).toBe(false);
  });

  /** The helper's messages replaying eval_without_no_grad with cell01's snapshot changed by `damage`. */
  function replayedWith(damage: (segments: PyDict[]) => void): IWireSnapshot[] {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-wire-'));
    try {
      fs.cpSync(path.join(RECORDINGS, 'eval_without_no_grad--python'), folder, { recursive: true });
      const file = path.join(folder, 'cell01.pickle.gz');
      const raw = decodeSnapshotBytes(new Uint8Array(fs.readFileSync(file))).value as PyDict;
      damage(raw.segments as PyDict[]);
      fs.writeFileSync(file, gzipSync(pickle(raw)));
      return helperMessages(folder).filter(m => m.type === 'snapshot');
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  }

  // Found by bench/fuzz_files.py: the helper's reader passed these on, and the panel showed the segment's free
  // memory as -1 B, or counted a segment listed twice twice. The decoder now checks the layout as the file's
  // reader does, and names the recording.
  it.each([
    [
      'a block that runs past its segment',
      (segments: PyDict[]) => {
        const segment = segments.find(g => (g.blocks as PyDict[]).length > 0)!;
        const blocks = segment.blocks as PyDict[];
        const last = blocks[blocks.length - 1];
        last.size = (segment.address as number) + (segment.total_size as number) - (last.address as number) + 1;
        last.state = 'active_allocated';
      },
      /the block at 0x[0-9a-f]+ lies outside its segment 0x[0-9a-f]+$/
    ],
    [
      'a segment listed twice',
      (segments: PyDict[]) => void segments.push({ ...segments[0] }),
      /two segments on device 0 overlap at 0x[0-9a-f]+ \(one listed twice\?\)$/
    ]
  ])('refuses a replayed recording with %s, as the file reader does', (name, damage, why) => {
    const decoder = new WireDecoder(new FrameTable());
    const messages = replayedWith(damage);
    expect(() => messages.forEach(m => decoder.decode(m))).toThrow(
      new RegExp(`^the replayed recording tmp\\w+: not a consistent snapshot: ${why.source}`)
    );
  });

  it('refuses changes against a snapshot it never received', () => {
    const decoder = new WireDecoder(new FrameTable());
    expect(first.type).toBe('snapshot');
    expect(second.prev).toBe(first.seq);
    expect(() => decoder.decode(second)).toThrow(/out of step/);
  });

  it('refuses a message after a lost one; a new decoder follows from a whole one', () => {
    const decoder = new WireDecoder(new FrameTable());
    decoder.decode(first);
    expect(() => decoder.decode(third)).toThrow(SnapshotError); // `second` was lost
    const again = new WireDecoder(decoder.frames);
    expect(first.prev).toBeNull();
    expect(again.decode(first).blocks.length).toBe(first.blocks.address.length);
    expect(again.lastSeq).toBe(first.seq);
  });

  it('shares the blocks a cell did not touch between snapshots', () => {
    // Two runs of a cell that keeps its segments: every block the second run did not send is the same object.
    const messages = helperMessages(path.join(RECORDINGS, 'clean_training--python')).filter(m => m.type === 'snapshot');
    const decoder = new WireDecoder(new FrameTable());
    const snapshots = messages.map(m => decoder.decode(m));
    let compared = 0;
    for (let i = 1; i < messages.length; i++) {
      if (messages[i].segments.address.join() !== messages[i - 1].segments.address.join()) {
        continue;
      }
      const sent = new Set(messages[i].blocks.address);
      for (const b of snapshots[i].blocks.filter(x => !sent.has(x.address))) {
        expect(snapshots[i - 1].blocks).toContain(b);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(0);
  });
});

describe('live messages recorded on an H200', () => {
  const file = path.join(LIVE, 'h200_live_cells.jsonl');
  const messages = fs
    .readFileSync(file, 'utf-8')
    .trim()
    .split('\n')
    .map(line => JSON.parse(line));

  it('decode to what torch.cuda.memory_allocated() measured after each cell', () => {
    const decoder = new WireDecoder(new FrameTable());
    const cells = messages.filter(m => m.type === 'snapshot');
    expect(cells.length).toBeGreaterThanOrEqual(6);
    for (const m of cells) {
      const snapshot = decoder.decode(m);
      if (m.reason === 'cell') {
        expect(snapshot.totals.reduce((n, t) => n + t.allocatedBytes, 0)).toBe(m.measured_allocated);
      }
    }
    expect(cells.filter(m => m.reason === 'oom').map(m => m.cell_id)).toEqual(['live-3']);
  });
});
