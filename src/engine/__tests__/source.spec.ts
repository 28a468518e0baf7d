// What the leak finder reads from a cell's source, line by line.
import { containersOf, displayedLines, hookTargets, gradDisabledAt, recurrentNames, runsBackward, setsGradMode, storedNames } from '..';

describe('gradDisabledAt', () => {
  const src = [
    'preds = []', //                                  1
    'with torch.no_grad():', //                       2
    '    for b in batches:', //                       3
    '        clean.append(model(b))', //              4
    'for b in batches:', //                           5
    '    preds.append(model(b))', //                  6
    '@torch.inference_mode()', //                     7
    'def evaluate(x):', //                            8
    '    return model(x)', //                         9
    'with torch.set_grad_enabled(False), other():', // 10
    '    y = model(x)', //                            11
    'with torch.set_grad_enabled(True):', //          12
    '    z = model(x)' //                             13
  ].join('\n');

  it.each([
    [1, false],
    [4, true],
    [6, false],
    [9, true],
    [11, true],
    [13, false]
  ])('line %i runs with grad off: %s', (line, off) => {
    expect(gradDisabledAt(src, line)).toBe(off);
  });
});

describe('displayedLines', () => {
  it.each([
    ['x * 2', { first: 1, last: 1 }],
    ['y = x * 2\nmodel(y)', { first: 2, last: 2 }],
    ['torch.cat([\n    a,\n    b,\n])', { first: 1, last: 4 }],
    ['x * 2;', null],
    ['y = x * 2', null],
    ['y += 1', null],
    ['del x', null],
    ['for b in batches:\n    model(b)', null],
    ['x: int = 3', null],
    ['x == y', { first: 1, last: 1 }],
    ['f(a=1)', { first: 1, last: 1 }],
    ['x * 2  # comment\n\n', { first: 1, last: 1 }]
  ])('%j', (source, lines) => {
    expect(displayedLines(source)).toEqual(lines);
  });
});

describe('storedNames and recurrentNames', () => {
  it.each([
    ['preds.append(model(b))', ['preds'], []],
    ['out, h = rnn(x, h)', ['out', 'h'], ['h']],
    ['(out, h) = rnn(x, h)', ['out', 'h'], ['h']],
    ['cache["k"] = model(x)', ['cache'], []],
    ['total += loss', ['total'], []],
    ['loss = model(data).pow(2).mean()', ['loss'], []],
    ['model(x)', [], []],
    ['if a == b:', [], []]
  ])('%j', (line, stored, recurrent) => {
    expect(storedNames(line, 1)).toEqual(stored);
    expect(recurrentNames(line, 1)).toEqual(recurrent);
  });

  it('finds the lists a name is appended to', () => {
    expect(containersOf('for _ in r:\n    loss = f()\n    losses.append(loss)\n    log.append(loss.item())', 'loss')).toEqual(['losses']);
  });
});

describe('session-wide switches', () => {
  it('sees backward passes and global grad mode', () => {
    expect(runsBackward('loss.backward()')).toBe(true);
    expect(runsBackward('torch.autograd.grad(y, x)')).toBe(true);
    expect(runsBackward('backward = 1')).toBe(false);
    expect(setsGradMode('torch.set_grad_enabled(False)')).toBe(true);
    expect(setsGradMode('x = 1\ntorch.set_grad_enabled(True)')).toBe(false);
    expect(setsGradMode('with torch.set_grad_enabled(False):\n    y = f(x)')).toBeNull();
  });
});

describe('hookTargets', () => {
  it('finds the lists a hook appends to, inline or by name', () => {
    expect(hookTargets('hook = model[1].register_forward_hook(lambda m, i, o: acts.append(o))')).toEqual(['acts']);
    const named = 'def keep(m, i, o):\n    store.append(o.detach())\n\nx = 1\nh = layer.register_forward_hook(keep)';
    expect(hookTargets(named)).toEqual(['store']);
    expect(hookTargets('acts.append(1)')).toEqual([]);
  });
});
