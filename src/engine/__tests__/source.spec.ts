// What the leak finder reads from a cell's source, line by line.
import {
  callsMatmul,
  containersOf,
  displayedLines,
  hookTargets,
  gradDisabledAt,
  recurrentNames,
  registersHook,
  runsBackward,
  setsGradMode,
  storedNames
} from '..';

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
    expect(
      containersOf('for _ in r:\n    loss = f()\n    losses.append(loss)\n    log.append(loss.item())', 'loss')
    ).toEqual(['losses']);
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

// What regular expressions misread and the Python parser reads right.
describe('a real Python parser', () => {
  it('sees through strings that contain `#`, quotes or code', () => {
    // a line cut at `#` made this an assignment to `x` of nothing
    expect(storedNames("x = tag('#1') + model(y)", 1)).toEqual(['x']);
    expect(displayedLines("model(x, name='#1')")).toEqual({ first: 1, last: 1 });
    expect(displayedLines("f('a = 1')")).toEqual({ first: 1, last: 1 });
    expect(runsBackward("print('call loss.backward() later')")).toBe(false);
    expect(runsBackward('# loss.backward()\ny = f(x)')).toBe(false);
    expect(registersHook("log('m.register_forward_hook(f)')")).toBe(false);
    expect(setsGradMode('s = "torch.set_grad_enabled(False)"')).toBeNull();
    expect(containersOf("print('losses.append(loss)')", 'loss')).toEqual([]);
  });

  it('reads a call written over several lines as one statement, whichever line a frame names', () => {
    const src = ['out, h = rnn(', '    x,', '    h,', ')', 'cache.append(', '    model(b)', ')'].join('\n');
    expect(storedNames(src, 1)).toEqual(['out', 'h']);
    expect(storedNames(src, 3)).toEqual(['out', 'h']);
    expect(recurrentNames(src, 2)).toEqual(['h']);
    expect(storedNames(src, 6)).toEqual(['cache']);
    expect(containersOf('keep.append(\n    loss\n)', 'loss')).toEqual(['keep']);
    expect(displayedLines('y = 1\ntorch.cat(\n    [a, b]\n)  # shown')).toEqual({ first: 2, last: 4 });
  });

  it('reads decorators: a function evaluated under no_grad or inference_mode', () => {
    const src = [
      '@torch.no_grad()',
      'def ev(x):',
      '    return model(x)',
      '',
      '@functools.cache',
      'def train(x):',
      '    return model(x)'
    ].join('\n');
    expect(gradDisabledAt(src, 3)).toBe(true);
    expect(gradDisabledAt(src, 7)).toBe(false);
    const stacked = ['@torch.inference_mode()', '@other', 'def ev(x):', '    y = model(x)', '    return y'].join('\n');
    expect(gradDisabledAt(stacked, 4)).toBe(true);
  });

  it('reads walrus targets as stored names', () => {
    expect(storedNames('if (y := model(x)) is not None:\n    pass', 1)).toEqual(['y']);
    expect(storedNames('while (batch := next(it, None)) is not None:\n    keep.append(batch)', 1)).toEqual(['batch']);
    expect(displayedLines('(y := model(x))')).toEqual({ first: 1, last: 1 });
  });

  it('reads with blocks: the body only, nested and one-line bodies, several context managers', () => {
    const src = [
      'with torch.no_grad():', //                        1
      '    a = model(x)', //                              2
      '    with open(p) as f:', //                        3
      '        b = model(x)', //                          4
      'with torch.no_grad(): c = model(x)', //            5
      'with amp.autocast(), torch.no_grad():', //          6
      '    d = model(x)', //                              7
      "with ctx('torch.no_grad()'):", //                   8
      '    e = model(x)', //                              9
      'f = model(x)' //                                  10
    ].join('\n');
    expect([2, 4, 5, 7, 9, 10].map(line => gradDisabledAt(src, line))).toEqual([true, true, true, true, false, false]);
    expect(storedNames(src, 5)).toEqual(['c']);
  });

  it('reads IPython magics and shell lines as lines that store nothing', () => {
    const src = '%time y = model(x)\n!nvidia-smi\nz = model(y)';
    expect(storedNames(src, 3)).toEqual(['z']);
    expect(displayedLines('x = 1\n%timeit f(x)')).toBeNull();
  });

  it('tells a matmul line apart: what makes cuBLAS allocate its workspace', () => {
    expect(callsMatmul('y = x @ w', 1)).toBe(true);
    expect(callsMatmul('y = torch.matmul(x, w)', 1)).toBe(true);
    expect(callsMatmul('y = F.linear(x, w)', 1)).toBe(true);
    expect(callsMatmul('y = x * 2  # not x @ w', 1)).toBe(false);
    expect(callsMatmul("y = f('@')", 1)).toBe(false);
  });
});
