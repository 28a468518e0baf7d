/**
 * @jest-environment node
 */
// Snapshot shapes of other torch versions, built as those versions write them.
import * as path from 'path';
import { FrameTable, normalizeSnapshot, NotebookError, PyValue, readSnapshot } from '..';
import { FIXTURES, readBytes } from './data';

describe('readSnapshot of a notebook', () => {
  it('refuses it as a notebook, which callers can tell from other JSON', () => {
    const notebook = readBytes(path.join(FIXTURES, '..', 'notebooks', 'out_cache.ipynb'));
    expect(() => readSnapshot(notebook)).toThrow(NotebookError);
    expect(() => readSnapshot(new TextEncoder().encode('{"cells": []}'))).not.toThrow(NotebookError);
  });
});

describe('normalizeSnapshot across torch versions', () => {
  it('computes block addresses of 2.0-era blocks from the segment and earlier sizes', () => {
    const s = readSnapshot(readBytes(path.join(FIXTURES, 'torch_2_0.proto2.pickle')));
    expect(s.blocks.map(b => b.address)).toEqual([2 ** 30, 2 ** 30 + 2 ** 20, 2 ** 30 + 2 ** 20 + 2 ** 19, 2 ** 31]);
    // frames and requested size come from the block's history
    expect(s.blocks[0].requestedSize).toBe(1000000);
    const stack = s.frames.stack(s.blocks[1].stack).map(id => s.frames.frame(id));
    expect(stack[2]).toEqual({ name: '<module>', filename: '/tmp/ipykernel_42/1313211645.py', line: 2 });
    expect(s.totals.map(t => [t.device, t.allocatedBytes, t.reservedBytes, t.largestFreeBytes])).toEqual([
      [0, 1536 * 1024, 2 * 2 ** 20, 512 * 1024],
      [1, 0, 2 * 2 ** 20, 2 * 2 ** 20]
    ]);
    expect(s.traces).toEqual([]);
  });

  it('reads oom entries with device_free and no addr, and entries without frames', () => {
    const s = readSnapshot(readBytes(path.join(FIXTURES, 'torch_2_11.proto5.pickle')));
    const [segAlloc, alloc, oom] = s.traces;
    expect(segAlloc.stack).toBe(0);
    expect(alloc.userMetadata).toBe('cell-a');
    expect(oom).toMatchObject({ action: 'oom', address: null, deviceFree: 12345, size: 2 ** 40 });
    expect(s.segments[0].pool).toBe('0,0');
    // active_pending_free is active but no longer allocated
    expect(s.totals[0]).toMatchObject({
      allocatedBytes: 2 ** 20,
      activeBytes: 2 ** 21,
      activeBlocks: 2,
      allocatedBlocks: 1
    });
  });

  it('accepts the bare segment list torch.cuda.memory_snapshot() returns', () => {
    const s = normalizeSnapshot([
      { device: 0, address: 4096, total_size: 2048, blocks: [{ size: 1024, state: 'active_allocated' }] }
    ]);
    expect(s.blocks[0]).toMatchObject({ address: 4096, size: 1024, requestedSize: 1024 });
    expect(s.totals[0]).toMatchObject({ allocatedBytes: 1024, inactiveBytes: 1024, largestFreeBytes: 1024 });
  });

  it('shares interned frames and stacks across snapshots', () => {
    const frames = new FrameTable();
    const a = readSnapshot(readBytes(path.join(FIXTURES, 'torch_2_11.proto4.pickle')), frames);
    const before = frames.stackCount;
    const b = readSnapshot(readBytes(path.join(FIXTURES, 'torch_2_11.proto2.pickle')), frames);
    expect(frames.stackCount).toBe(before);
    expect(b.blocks[0].stack).toBe(a.blocks[0].stack);
  });

  it('names the field at fault', () => {
    expect(() => normalizeSnapshot({ segments: [{ device: 0, address: 'x', total_size: 1 }] })).toThrow(
      'not a snapshot: segment 0 address is not an integer'
    );
    expect(() =>
      normalizeSnapshot({ segments: [{ address: 0, total_size: 1, blocks: [{ size: 1, state: 'weird' }] }] })
    ).toThrow("segment 0 block 0 has unknown state 'weird'");
    // Read as allocated (a missing state) or as an unknown action (a numeric one), these changed figures silently.
    const block = (fields: PyValue) => normalizeSnapshot([{ address: 0, total_size: 1024, blocks: [fields] }]);
    expect(() => block({ size: 512 })).toThrow('not a snapshot: segment 0 block 0 state is missing');
    expect(() => block({ size: 512, state: 1 })).toThrow('not a snapshot: segment 0 block 0 state is not a string');
    const entry = (fields: PyValue) => normalizeSnapshot({ segments: [], device_traces: [[fields]] });
    expect(() => entry({ addr: 0, size: 512, action: 3 })).toThrow(
      'not a snapshot: device 0 trace entry 0 action is not a string'
    );
    expect(() => entry({ addr: 0, size: 512 })).toThrow('not a snapshot: device 0 trace entry 0 action is missing');
  });

  it('reads no history where there is none, and refuses traces that are not one list per device', () => {
    const segments: PyValue[] = [];
    expect(normalizeSnapshot({ segments, device_traces: null }).traces).toEqual([]);
    expect(normalizeSnapshot({ segments, device_traces: [null, []] }).traces).toEqual([]);
    expect(() => normalizeSnapshot({ segments, device_traces: 'abc' })).toThrow(
      'not a snapshot: device_traces is not a list (one list of trace entries per device)'
    );
    expect(() => normalizeSnapshot({ segments, device_traces: [[], 7] })).toThrow(
      "not a snapshot: device 1's trace entries are not a list"
    );
  });

  it('refuses a trace entry of a block with no address or a size that is no integer: a replay would skip it', () => {
    const segments: PyValue[] = [];
    const traces = (entry: PyValue) => normalizeSnapshot({ segments, device_traces: [[entry]] }).traces;
    expect(traces({ action: 'alloc', addr: 4096, size: 512 })).toEqual([
      expect.objectContaining({ action: 'alloc', address: 4096, size: 512 })
    ]);
    // an oom entry says the free memory instead; its address is none
    expect(traces({ action: 'oom', size: 512, device_free: 1024 })).toEqual([
      expect.objectContaining({ action: 'oom', address: null, deviceFree: 1024 })
    ]);
    const noAddress: PyValue[] = [
      { action: 'free_completed', size: 512 },
      { action: 'free_completed', addr: null, size: 512 }
    ];
    for (const entry of noAddress) {
      expect(() => traces(entry)).toThrow('not a snapshot: device 0 trace entry 0 (free_completed) has no addr');
    }
    expect(() => traces({ action: 'alloc', addr: 4096, size: true })).toThrow(
      'not a snapshot: device 0 trace entry 0 size is not an integer'
    );
    expect(() => traces({ action: 'alloc', addr: false, size: 512 })).toThrow(
      'not a snapshot: device 0 trace entry 0 addr is not an integer'
    );
  });

  it('refuses a segment listed twice and a block outside its segment: counted, they make up memory', () => {
    const segment = {
      device: 0,
      address: 4096,
      total_size: 2048,
      blocks: [{ address: 4096, size: 1024, state: 'active_allocated' }]
    };
    expect(() => normalizeSnapshot([segment, segment])).toThrow(
      'not a consistent snapshot: two segments on device 0 overlap at 0x1000 (one listed twice?)'
    );
    expect(() => normalizeSnapshot([segment, { ...segment, device: 1 }])).not.toThrow();
    const outside = { ...segment, blocks: [...segment.blocks, { address: 5120, size: 2048, state: 'inactive' }] };
    expect(() => normalizeSnapshot([outside])).toThrow(
      'not a consistent snapshot: segment 0 block 1 lies outside its segment'
    );
  });

  it('refuses a pool id that is not a tuple of integers, and drops user_metadata that is not a string', () => {
    // Nested 200,000 deep: joined or printed with String(), these overflowed the stack.
    let deep: PyValue = [0];
    for (let k = 0; k < 200_000; k++) {
      deep = [deep];
    }
    const pool = (id: PyValue) =>
      normalizeSnapshot([{ device: 0, address: 0, total_size: 512, segment_pool_id: id, blocks: [] }]).segments[0].pool;
    expect(pool([1, 7])).toBe('1,7');
    expect(pool(null)).toBe('');
    for (const bad of [deep, { toString: 'x', valueOf: 'y' }, [{ toString: 1 }], 'a', [0.5, 1]] as PyValue[]) {
      expect(() => pool(bad)).toThrow('not a snapshot: segment 0 segment_pool_id is not a tuple of integers');
    }
    const meta = (m: PyValue) =>
      normalizeSnapshot({
        segments: [],
        device_traces: [[{ action: 'oom', device_free: 0, size: 0, user_metadata: m }]]
      }).traces[0].userMetadata;
    expect(meta('cell-a')).toBe('cell-a');
    expect(meta(deep)).toBe('');
    expect(meta({ toString: 1 } as PyValue)).toBe('');
  });

  it('quotes an unknown state cut to 80 characters, so the error stays one short line', () => {
    const block = { address: 0, size: 512, state: 'z'.repeat(5_000_000) };
    expect(() => normalizeSnapshot([{ device: 0, address: 0, total_size: 1024, blocks: [block] }])).toThrow(
      `not a snapshot: segment 0 block 0 has unknown state '${'z'.repeat(80)}…(5,000,000 characters)'`
    );
  });

  it('refuses blocks of one segment that overlap or are listed twice: counted, free space goes negative', () => {
    const block = (address: number, size: number) => ({ address, size, state: 'active_allocated' });
    const segment = (...blocks: PyValue[]) => ({ device: 0, address: 4096, total_size: 4096, blocks }) as PyValue;
    // Listed out of order, as nothing promises they are sorted.
    expect(() => normalizeSnapshot([segment(block(6144, 1024), block(4096, 1024), block(5120, 1536))])).toThrow(
      'not a consistent snapshot: segment 0x1000 blocks at 0x1400 and 0x1800 overlap'
    );
    expect(() => normalizeSnapshot([segment(block(4096, 1024), block(4096, 1024))])).toThrow(
      'not a consistent snapshot: segment 0x1000 lists two blocks at 0x1000 (one listed twice?)'
    );
    const tiled = normalizeSnapshot([segment(block(4096, 1024), block(5120, 1024), block(7168, 1024))]);
    expect(tiled.totals[0].inactiveBytes).toBe(1024);
  });
});
