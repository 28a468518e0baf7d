/**
 * @jest-environment node
 */
// Frames and stacks shared by content while unpickling: torch writes a new dict
// per frame and a new list per stack, which made a 190 MB snapshot's decoded graph 720 MB.
import * as path from 'path';
import { decodeSnapshotBytes, PyDict, PyValue, readSnapshot, unpickle } from '..';
import { readBytes, RECORDINGS } from './data';
import { PickleWriter } from './hostile';

/** Every frame dict under the blocks and trace entries of a raw snapshot. */
function frameDicts(raw: PyValue): PyDict[] {
  const snapshot = raw as PyDict;
  const found: PyDict[] = [];
  for (const seg of snapshot.segments as PyDict[]) {
    for (const block of seg.blocks as PyDict[]) {
      found.push(...((block.frames ?? []) as PyDict[]));
    }
  }
  for (const entries of (snapshot.device_traces ?? []) as PyDict[][]) {
    for (const entry of entries) {
      found.push(...((entry.frames ?? []) as PyDict[]));
    }
  }
  return found;
}

/** A frame dict as torch writes it, memoized when empty as Python's pickler does. */
function frame(w: PickleWriter, name: string, line: number, extra: [string, (x: PickleWriter) => void][] = []) {
  w.raw(0x7d); // EMPTY_DICT
  w.memoize();
  w.raw(0x28); // MARK
  w.str('name').str(name).str('filename').str('/work/train.py').str('line').int(line);
  for (const [key, write] of extra) {
    w.str(key);
    write(w);
  }
  w.raw(0x75); // SETITEMS
}

/** The frames list of every block of a raw snapshot. */
function blockStacks(raw: PyValue): PyValue[][] {
  return ((raw as PyDict).segments as PyDict[]).flatMap(s => (s.blocks as PyDict[]).map(b => b.frames as PyValue[]));
}

describe('frames and stacks shared while unpickling', () => {
  it("makes a real recording's frame dicts one object per distinct frame, and its stacks one list each", () => {
    const raw = decodeSnapshotBytes(readBytes(path.join(RECORDINGS, 'many_blocks--python', 'cell03.pickle.gz'))).value;
    const dicts = frameDicts(raw);
    const distinct = new Set(dicts.map(f => `${f.filename}\0${f.name}\0${f.line}`));
    expect(dicts.length).toBeGreaterThan(300_000);
    expect(new Set(dicts).size).toBe(distinct.size);
    const stacks = blockStacks(raw);
    const distinctStacks = new Set(
      stacks.map(s => (s as PyDict[]).map(f => `${f.filename}:${f.name}:${f.line}`).join(' < '))
    );
    expect(stacks.length).toBeGreaterThan(40_000);
    expect(new Set(stacks).size).toBe(distinctStacks.size);
  });

  it('reads the same model as before: every block keeps its stack', () => {
    const bytes = readBytes(path.join(RECORDINGS, 'many_blocks--python', 'cell03.pickle.gz'));
    const snapshot = readSnapshot(bytes);
    const raw = decodeSnapshotBytes(bytes).value as PyDict;
    const rawStacks = (raw.segments as PyDict[])
      .flatMap(s => s.blocks as PyDict[])
      .sort((a, b) => (a.address as number) - (b.address as number))
      .map(b => (b.frames as PyDict[]).map(f => `${f.name}@${f.filename}:${f.line}`).join(' < '));
    const stacks = snapshot.blocks.map(b =>
      snapshot.frames
        .stack(b.stack)
        .map(id => snapshot.frames.frame(id))
        .map(f => `${f.name}@${f.filename}:${f.line}`)
        .join(' < ')
    );
    expect(stacks).toEqual(rawStacks);
  });

  it('shares only exact frames: another line, or a fourth key, stays its own dict', () => {
    const list = unpickle(
      PickleWriter.pickle(w => {
        w.raw(0x5d, 0x28); // EMPTY_LIST, MARK
        frame(w, 'forward', 3);
        frame(w, 'forward', 3);
        frame(w, 'forward', 4);
        frame(w, 'forward', 3, [['column', x => x.int(7)]]);
        w.raw(0x65); // APPENDS
      })
    ) as PyDict[];
    expect(list[1]).toBe(list[0]);
    expect(list[2]).not.toBe(list[0]);
    expect(list[2].line).toBe(4);
    expect(list[3]).toEqual({ name: 'forward', filename: '/work/train.py', line: 3, column: 7 });
  });

  it('gives a memo reference to a shared frame the same frame, however the pickle memoized it', () => {
    const w = new PickleWriter().raw(0x80, 4, 0x5d, 0x28); // PROTO 4, EMPTY_LIST, MARK
    frame(w, 'forward', 3);
    // memo index 300 in use, then the second dict memoized at 2: further back than the lookback
    w.int(9).raw(0x72, 44, 1, 0, 0, 0x30); // LONG_BINPUT 300, POP
    w.raw(0x7d, 0x71, 2, 0x28); // EMPTY_DICT, BINPUT 2, MARK
    w.str('name').str('forward').str('filename').str('/work/train.py').str('line').int(3);
    w.raw(0x75); // SETITEMS
    w.get(0).get(2);
    const list = unpickle(w.raw(0x65, 0x2e).bytes()) as PyDict[];
    expect(list.length).toBe(4);
    expect(list[1]).toBe(list[0]);
    for (const f of list) {
      expect(f).toEqual({ name: 'forward', filename: '/work/train.py', line: 3 });
    }
  });

  it('refuses a pickle that changes a shared frame or stack after building it', () => {
    const changed = (change: (w: PickleWriter) => void) =>
      PickleWriter.pickle(w => {
        w.raw(0x5d, 0x28); // EMPTY_LIST, MARK
        frame(w, 'forward', 3);
        frame(w, 'forward', 3);
        w.raw(0x65); // APPENDS: a list of shared frames, itself shared
        change(w);
      });
    const setLine = changed(w => w.get(0).str('line').int(99).raw(0x73, 0x30)); // BINGET 0, SETITEM, POP
    const appendFrame = changed(w => w.raw(0x32).int(1).raw(0x61, 0x30)); // DUP, APPEND, POP
    for (const bytes of [setLine, appendFrame]) {
      expect(() => unpickle(bytes)).toThrow('malformed pickle: it changes a frame or a stack after building it');
    }
  });
});
