/**
 * @jest-environment node
 */
// The leak finder's reasons by role: each role of leaked memory adds its reason and the advice it calls for.
import { BlockRoles, findingText, adviceText } from '..';
import { Finding } from '../leaks/finding';
import { explainRoles } from '../leaks/roles';
import { Block } from '../model';

const MiB = 2 ** 20;

function block(address: number, size: number): Block {
  return { device: 0, address, size, requestedSize: size, state: 'active_allocated', stack: 0, segment: 0 } as Block;
}

function leakingFinding(blocks: Block[]): Finding {
  const retention = {
    execution: 2,
    left: blocks,
    leftBytes: 0,
    aliveBytes: 0,
    freedLaterBytes: 0,
    alive: blocks,
    freedBy: new Map(),
    freedAt: [],
    kernel: 0,
    lastOfKernel: 2,
    endedByRestart: false
  };
  const f = new Finding(retention, { cellId: 'c', executionCount: 7, source: null, error: null });
  f.causes.add('growth');
  blocks.forEach(b => f.evidence.push(b));
  return f;
}

describe('leak reasons by role', () => {
  const blocks = [
    block(0, 4 * MiB),
    block(4 * MiB, 2 * MiB),
    block(8 * MiB, MiB),
    block(9 * MiB, 3 * MiB),
    block(12 * MiB, MiB)
  ];
  const roles = new BlockRoles([
    [0, 0, 'gradient'],
    [0, 4 * MiB, 'optimizer_state'],
    [0, 8 * MiB, 'traceback'],
    [0, 9 * MiB, 'output_cache'],
    [0, 12 * MiB, 'unknown']
  ]);

  it('name each role of the leaked memory, largest first, leave unknown out, and advise per role', () => {
    const f = leakingFinding(blocks);
    explainRoles(f, () => roles);
    expect(f.findings).toEqual([
      { code: 'leak-role', role: 'gradient', bytes: 4 * MiB },
      { code: 'leak-role', role: 'output_cache', bytes: 3 * MiB },
      { code: 'leak-role', role: 'optimizer_state', bytes: 2 * MiB },
      { code: 'leak-role', role: 'traceback', bytes: MiB }
    ]);
    expect([...f.advice.values()]).toEqual([
      { code: 'zero-grad' },
      { code: 'silence-output', executionCount: 7, also: [], deletable: [], displays: 0 },
      { code: 'drop-optimizer' },
      { code: 'clear-traceback' }
    ]);
    expect(findingText(f.findings[0], String)).toBe('4.00 MiB of it is gradients (`.grad`) of parameters');
    expect(adviceText({ code: 'zero-grad' })).toContain('zero_grad(set_to_none=True)');
  });

  it('advise no_grad / detach for activations only where no rule said it already', () => {
    const f = leakingFinding([blocks[0]]);
    explainRoles(f, () => new BlockRoles([[0, 0, 'activation']]));
    expect([...f.advice.values()]).toEqual([{ code: 'no-grad-or-detach' }]);
    const g = leakingFinding([blocks[0]]);
    g.advice.set('{"code":"no-grad"}', { code: 'no-grad' });
    explainRoles(g, () => new BlockRoles([[0, 0, 'activation']]));
    expect([...g.advice.values()]).toEqual([{ code: 'no-grad' }]);
    expect(g.findings).toEqual([{ code: 'leak-role', role: 'activation', bytes: 4 * MiB }]);
  });

  it('offer `del` for the tensors the user keeps whichever role is larger, by names `del` can take', () => {
    // Outputs kept (user, 4 MiB) outweigh what their graph saved (activation, 2 MiB): the fix for the
    // activations comes first in the loop by size, yet no_grad frees none of the kept outputs.
    const f = leakingFinding([blocks[0], blocks[1]]);
    // Holders as walk.py names them: a parameter's blocks have its role, never the user's.
    f.holders.push(
      { kind: 'variable', path: 'preds[3]' },
      { kind: 'variable', path: 'model.layers.0.cache[1]' },
      { kind: 'parameter', path: 'heads[1].0.weight' }
    );
    explainRoles(
      f,
      () =>
        new BlockRoles([
          [0, 0, 'user'],
          [0, 4 * MiB, 'activation']
        ])
    );
    expect(f.findings.map(x => x.code === 'leak-role' && x.role)).toEqual(['user', 'activation']);
    expect([...f.advice.values()]).toEqual([
      { code: 'no-grad-or-detach' },
      { code: 'release-kept', names: ['preds', 'model.layers[0].cache'] }
    ]);
  });

  it('leave the kept tensors to the finder’s own fix where no other fix was given', () => {
    const f = leakingFinding([blocks[0]]);
    explainRoles(f, () => new BlockRoles([[0, 0, 'user']]));
    expect([...f.advice.values()]).toEqual([]);
  });

  it('add nothing to an execution that does not leak, or without roles', () => {
    const f = leakingFinding(blocks);
    f.causes.clear();
    explainRoles(f, () => roles);
    expect(f.findings).toEqual([]);
    const g = leakingFinding(blocks);
    explainRoles(g, () => null);
    expect(g.findings).toEqual([]);
  });
});
