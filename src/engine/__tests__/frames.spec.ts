/**
 * @jest-environment node
 */
import { allocationSite, FrameTable, visibleStack } from '..';
import { recordedSnapshot } from './data';

describe('frame filter', () => {
  const t = new FrameTable();
  const ids = [
    t.internFrame('??', '??', 0),
    t.internFrame('at::empty', '', 0),
    t.internFrame('forward', '/v/lib/python3.12/site-packages/torch/nn/modules/linear.py', 125),
    t.internFrame('step', '/home/me/train.py', 10),
    t.internFrame('<module>', '/tmp/ipykernel_1/42.py', 3),
    t.internFrame('run_code', '/v/lib/python3.12/site-packages/IPython/core/interactiveshell.py', 3823),
    t.internFrame('_run_once', '/usr/lib/python3.12/asyncio/base_events.py', 1987),
    t.internFrame('main', '/opt/harness/runner.py', 69)
  ];
  const stack = t.internStack(ids);

  it('keeps user code and cells, collapses C++ and drops what ran the cell', () => {
    expect(
      visibleStack(t, stack).map(e => (e.kind === 'native' ? `cpp x${e.count}` : t.frame(e.frameId).name))
    ).toEqual(['cpp x2', 'step', '<module>']);
    expect(allocationSite(t, stack)).toBe(ids[3]);
  });

  it('shows every frame on request', () => {
    expect(visibleStack(t, stack, { allFrames: true })).toHaveLength(ids.length);
    expect(allocationSite(t, stack, { allFrames: true })).toBe(ids[2]);
  });

  it('falls back to the innermost Python frame, and to none without frames', () => {
    const torchOnly = t.internStack([ids[0], ids[2]]);
    expect(allocationSite(t, torchOnly)).toBe(ids[2]);
    expect(allocationSite(t, 0)).toBe(-1);
  });

  it('hides the plumbing around a real recorded allocation', () => {
    const s = recordedSnapshot('eval_without_no_grad--python', 'cell02.pickle.gz');
    const block = s.blocks.find(b => b.state === 'active_allocated' && s.frames.stack(b.stack).length > 10)!;
    const names = visibleStack(s.frames, block.stack).map(e =>
      e.kind === 'frame' ? s.frames.frame(e.frameId).filename : 'cpp'
    );
    expect(names.every(f => !/site-packages|notebook_runner/.test(f))).toBe(true);
    expect(names[names.length - 1]).toMatch(/ipykernel_447/);
  });
});
