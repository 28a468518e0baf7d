// The kernel's holders as the engine reads them: references validated as the protocol gives them, and
// holder lists folded for people without losing what each reference says.
import {
  deletableName,
  foldNames,
  holderAnswerJson,
  holderText,
  IHolder,
  parseHolderAnswer,
  summarizeHolderList
} from '..';
import { holderAdvice } from '../leaks/holderAdvice';

const answer = (reference: unknown) => ({
  blocks: [{ device: 0, address: 4096, holders: [{ kind: 'hidden', path: 'f.__defaults__[0]', reference }] }],
  partial: false,
  elapsed_ms: 1
});

describe('a holder reference from the kernel', () => {
  it('is read with the fields the protocol gives', () => {
    const read = parseHolderAnswer(answer({ type: 'default-argument', name: 'f' }));
    expect(read.holders.get('0:4096')).toEqual([
      { kind: 'hidden', path: 'f.__defaults__[0]', reference: { type: 'default-argument', name: 'f' } }
    ]);
  });

  it.each([
    ['null', null],
    ['an unknown type', { type: 'a guess', name: 'f' }],
    ['no name', { type: 'closure', place: 'x' }],
    ['a name that is no text', { type: 'closure', name: 3 }],
    ['displays past what IPython keeps', { type: 'output-name', name: '_', displays: 99 }],
    ['a negative count', { type: 'output', name: 'Out[2]', count: -2 }],
    ['a place that is no text', { type: 'generator', name: 'g', place: ['x'] }]
  ])('is refused with %s', (_, reference) => {
    expect(() => parseHolderAnswer(answer(reference))).toThrow(/holders\[0\] has a reference that is not one/);
  });
});

describe('the locals of a function running in another thread', () => {
  const local = (place: string) => ({
    kind: 'hidden',
    path: `thread 'Thread-1 (train)': ${place}`,
    reference: { type: 'thread', name: 'Thread-1 (train)', place }
  });

  it('are read as the kernel sends them, and freed by one fix naming the thread and each local', () => {
    const holders = [local('train() local h'), local('step() local x')];
    const read = parseHolderAnswer({ blocks: [{ device: 0, address: 4096, holders }], partial: false, elapsed_ms: 1 });
    expect(read.holders.get('0:4096')).toEqual(holders);
    expect(holderAdvice(new Set(['hidden']), read.holders.get('0:4096')!)).toEqual([
      {
        code: 'release-hidden',
        ref: 'thread',
        owner: 'Thread-1 (train)',
        paths: holders.map(h => h.path),
        places: ['train() local h', 'step() local x']
      }
    ]);
  });
});

describe('an address in a holders answer past 2^53 - 1', () => {
  it('is refused, not rounded onto another block', () => {
    // JSON.parse reads 9007199254740993 as 9007199254740992: the holders of one block would be another's.
    const rounded = { blocks: [{ device: 0, address: JSON.parse('9007199254740993'), holders: [] }] };
    expect(() => parseHolderAnswer(rounded)).toThrow(
      'holders: blocks[0] address is out of range: past 2^53 - 1, where numbers stop being exact'
    );
  });
});

describe("an answer written back as the kernel sends it (the export's cellNN.holders.json)", () => {
  it('reads back as the answer it was', () => {
    const read = parseHolderAnswer({
      blocks: [
        { device: 0, address: 4096, holders: [{ kind: 'hook', path: 'acts[0]', via: 'forward hook on model.1' }] },
        {
          device: 1,
          address: 2 ** 47,
          holders: [{ kind: 'output-cache', path: 'Out[2]', reference: { type: 'output', name: 'Out[2]', count: 2 } }]
        }
      ],
      partial: true,
      elapsed_ms: 3
    });
    const again = parseHolderAnswer(JSON.parse(JSON.stringify(holderAnswerJson(read.holders, read.partial))));
    expect([...again.holders]).toEqual([...read.holders]);
    expect(again.partial).toBe(true);
  });
});

describe('a block whose holders the kernel did not all list', () => {
  const graph = (k: number) => ({ kind: 'graph', path: `preds[${k}]` });
  const row = (holders: object[], more?: boolean) => ({
    blocks: [{ device: 0, address: 4096, holders, ...(more === undefined ? {} : { more }) }],
    partial: false,
    elapsed_ms: 1
  });
  const weight = [{ kind: 'parameter', path: 'model.2.weight' }, graph(0), graph(1), graph(2)];

  it('says so: "and more" where the kernel said it, "and maybe more" where an older one stopped at 4', () => {
    // Before: the demo's weights read "autograd graph of preds[0:3]" beside blocks held by preds[0:8].
    const older = summarizeHolderList(parseHolderAnswer(row(weight)).holders.get('0:4096')!);
    expect(older.map(holderText)).toEqual(['model.2.weight', 'autograd graph of preds[0:3] and maybe more']);
    const cut = summarizeHolderList(parseHolderAnswer(row(weight, true)).holders.get('0:4096')!);
    expect(cut.map(holderText)).toEqual(['model.2.weight', 'autograd graph of preds[0:3] and more']);
    // a list the kernel says is whole, or one shorter than an older kernel's limit, is said as it is
    expect(summarizeHolderList(parseHolderAnswer(row(weight, false)).holders.get('0:4096')!).map(holderText)).toEqual([
      'model.2.weight',
      'autograd graph of preds[0:3]'
    ]);
    const short = parseHolderAnswer(row(weight.slice(0, 3))).holders.get('0:4096')!;
    expect(summarizeHolderList(short).map(holderText)).toEqual(['model.2.weight', 'autograd graph of preds[0:2]']);
  });

  it('is written back as it was read', () => {
    for (const more of [undefined, true, false]) {
      const read = parseHolderAnswer(row(weight, more));
      const again = parseHolderAnswer(JSON.parse(JSON.stringify(holderAnswerJson(read.holders, read.partial))));
      expect([...again.holders]).toEqual([...read.holders]);
    }
  });

  it('refuses a `more` that is not true or false', () => {
    expect(() => parseHolderAnswer(row(weight, 'yes' as unknown as boolean))).toThrow(/blocks\[0\] more/);
  });
});

describe('holders folded for people', () => {
  const hidden = (path: string, type: string, name: string, place?: string): IHolder =>
    ({ kind: 'hidden', path, reference: { type, name, ...(place ? { place } : {}) } }) as IHolder;

  it('keeps each reference where owners differ, and folds the owner with the path where only it differs', () => {
    const list = summarizeHolderList([
      hidden('score.__defaults__[0]', 'default-argument', 'score'),
      hidden("opts.__kwdefaults__['keep']", 'default-argument', 'opts'),
      ...[0, 1, 2].map(k => hidden(`cbs[${k}]: closure variable buf`, 'closure', `cbs[${k}]`, 'buf'))
    ]);
    expect(list.map(holderText)).toEqual([
      'score.__defaults__[0] (a default argument)',
      "opts.__kwdefaults__['keep'] (a default argument)",
      'cbs[0:3]: closure variable buf'
    ]);
    expect(list[2].reference).toEqual({ type: 'closure', name: 'cbs[0:3]', place: 'buf' });
  });

  it('never folds the output history, even a graph reached through it', () => {
    const list = summarizeHolderList(
      [2, 3].map(n => ({
        kind: 'graph' as const,
        path: `Out[${n}]`,
        reference: { type: 'output' as const, name: `Out[${n}]`, count: n }
      }))
    );
    expect(list.map(h => h.path)).toEqual(['Out[2]', 'Out[3]']);
  });

  it('folds names to type into runs Python reads, and names to read into one', () => {
    const names = ['errs[0]', 'errs[1]', 'errs[5]', 'err'];
    expect(foldNames(names, n => n, true).map(g => [g.label, g.items])).toEqual([
      ['errs[0:2]', ['errs[0]', 'errs[1]']],
      ['errs[5]', ['errs[5]']],
      ['err', ['err']]
    ]);
    expect(foldNames(names, n => n).map(g => g.label)).toEqual(['errs[\u2026] (3 items)', 'err']);
  });
});

describe('the fix for a container a hook appends to', () => {
  const hooked = (path: string, name?: string): IHolder => ({
    kind: 'hook',
    path,
    via: 'forward hook on lin',
    ...(name ? { reference: { type: 'hook' as const, name } } : {})
  });

  it('names the container as the kernel does, where it lies', () => {
    const held = [hooked("state['acts'][0]", "state['acts']"), hooked("state['acts'][1]", "state['acts']")];
    expect(holderAdvice(new Set(['hook']), held)).toEqual([{ code: 'remove-hook', lists: ["state['acts']"] }]);
  });

  it('names the items when a file from before references says no container', () => {
    const held = [hooked("state['acts'][0]"), hooked("state['acts'][1]")];
    expect(holderAdvice(new Set(['hook']), held)).toEqual([{ code: 'remove-hook', lists: ["state['acts'][0:2]"] }]);
  });
});

describe('the fix for owners of hidden references', () => {
  const closure = (owner: number, place: string): IHolder => ({
    kind: 'hidden',
    path: `cbs[${owner}]: closure variable ${place}`,
    reference: { type: 'closure', name: `cbs[${owner}]`, place }
  });
  const fixes = (held: IHolder[]) => holderAdvice(new Set(['hidden']), held);

  it('is one fix for owners that keep the same places', () => {
    expect(fixes([closure(0, 'buf'), closure(1, 'buf')])).toEqual([
      {
        code: 'release-hidden',
        ref: 'closure',
        owner: 'cbs[0:2]',
        paths: ['cbs[0:2]: closure variable buf'],
        places: ['buf']
      }
    ]);
  });

  it('keeps owners apart whose places differ, even by as many items', () => {
    const held = [closure(0, 'a[0]'), closure(0, 'a[2]'), closure(1, 'a[1]'), closure(1, 'a[3]')];
    expect(fixes(held).map(f => (f.code === 'release-hidden' ? [f.owner, f.places] : f.code))).toEqual([
      ['cbs[0]', ['a[0]', 'a[2]']],
      ['cbs[1]', ['a[1]', 'a[3]']]
    ]);
  });
});

describe('the name to `del` for a holder', () => {
  // Paths as kernel-helpers/cuda_memdiff_kernel/walk.py makes them.
  it('is the Python for a variable and its attributes, up to an index', () => {
    const cases: [string, string | null][] = [
      ['preds[3]', 'preds'],
      ['model.cache[4:8]', 'model.cache'],
      ['model.layers.0.cache[3]', 'model.layers[0].cache'],
      ['données[0]', 'données'],
      ['मॉडल[0]', 'मॉडल'],
      ['[0]', null],
      ['', null]
    ];
    expect(cases.map(([path]) => [path, deletableName({ kind: 'variable', path })])).toEqual(cases);
  });

  it('is the module that holds a parameter or buffer, or the attribute registered on the variable itself', () => {
    const cases: [string, string][] = [
      ['model.head2.weight', 'model.head2'],
      ['model.3.weight', 'model[3]'],
      ['model.weight_at_run2', 'model.weight_at_run2'],
      ['heads[1].0.weight', 'heads'],
      ['opt.param_groups (512, 512)', 'opt']
    ];
    expect(cases.map(([path]) => [path, deletableName({ kind: 'parameter', path })])).toEqual(cases);
  });
});
