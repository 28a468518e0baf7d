// Leaks the kernel's holders decide, on real H200 sessions with the answers the kernel's walk gives
// (walk.py's paths) put in place of what the recording's older walk said: references no variable
// shows (`hidden`), kept exceptions, the output history after `del Out[n]`, tensors only the garbage
// collector reaches, guesses the answer contradicts, and memory a later cell freed.
import {
  adviceText,
  findingText,
  findLeaks,
  holderKey,
  holderText,
  IBlockHolders,
  IHolder,
  IHolderReference,
  ILeakExecution,
  LIBRARY_WORKSPACE_BYTES,
  retentionByExecution,
  sessionExecutions
} from '..';
import { LIVE, RECORDINGS, sessionOf as recordedSession } from './data';
import { outputCacheAdvice } from '../leaks/holderAdvice';

// The output history's references as the kernel sends them (test_holders.py pins what it sends).
const OUT = (n: number): IHolderReference => ({ type: 'output', name: `Out[${n}]`, count: n });
const NAMED = (n: number): IHolderReference => ({ type: 'output-name', name: `_${n}`, count: n });
const RECENT = (name: string, displays: number): IHolderReference => ({ type: 'output-name', name, displays });
const output = (path: string, reference: IHolderReference): IHolder => ({ kind: 'output-cache', path, reference });

function sessionOf(name: string, root = LIVE) {
  return recordedSession(name, root);
}

/** An answer with every holder `rename` maps replaced (a path, or a whole holder), the others as recorded. */
function renamed(answer: IBlockHolders, rename: (h: IHolder) => IHolder): IBlockHolders {
  return new Map([...answer].map(([k, list]) => [k, list.map(rename)]));
}

// out_cache: cell 0 makes x (64 MiB) and keeps it in `x`; cell 1 shows `x * 2` (Out[2]); cell 2 runs `del x`.
const outCache = sessionOf('out_cache--holders');
const outExecutions = sessionExecutions(outCache.manifest);
// traceback_pin: cell 1 runs step(), which allocates buf (512 MiB) and raises.
const tracebackPin = sessionOf('traceback_pin--holders');

describe('hidden holders make a leak on their own', () => {
  // Cell 0 alone, its x held as the kernel names each hidden reference (test_holders.py pins what it sends).
  const asHidden = (path: string, reference?: IHolderReference) =>
    findLeaks(outCache.snapshots.slice(0, 1), outExecutions.slice(0, 1), {
      holders: renamed(outCache.holders[0]!, h =>
        h.path === 'x' ? { kind: 'hidden', path, ...(reference ? { reference } : {}) } : h
      )
    }).executions[0];

  it('keeps memory a variable holds retained', () => {
    expect(
      findLeaks(outCache.snapshots.slice(0, 1), outExecutions.slice(0, 1), { holders: outCache.holders[0]! })
    ).toMatchObject({ topLeak: null, executions: [{ verdict: 'retained' }] });
  });

  it.each([
    [
      'score.__defaults__[0]',
      { type: 'default-argument', name: 'score' },
      'default-argument',
      'score',
      /^`score` keeps every call's value in a default argument .*default it to `None`/,
      'score.__defaults__[0] (a default argument)',
      ['score.__defaults__[0]']
    ],
    [
      "f.__kwdefaults__['k'][3]",
      { type: 'default-argument', name: 'f' },
      'default-argument',
      'f',
      /default it to `None`/,
      "f.__kwdefaults__['k'][3] (a default argument)",
      ["f.__kwdefaults__['k'][3]"]
    ],
    [
      'callbacks[0]: closure variable buf',
      { type: 'closure', name: 'callbacks[0]', place: 'buf' },
      'closure',
      'callbacks[0]',
      /^`callbacks\[0\]` keeps what its closure captured \(`buf`\): /,
      'callbacks[0]: closure variable buf',
      ['buf']
    ],
    [
      'train_iter: generator frame local batch',
      { type: 'generator', name: 'train_iter', place: 'batch' },
      'generator',
      'train_iter',
      /keeps its frame's locals \(`batch`\): exhaust it or `del train_iter`$/,
      'train_iter: generator frame local batch',
      ['batch']
    ],
    [
      'standardize: lru_cache entry',
      { type: 'lru-cache', name: 'standardize' },
      'lru-cache',
      'standardize',
      /^`standardize`'s lru_cache keeps its results: call `standardize\.cache_clear\(\)`/,
      'standardize: lru_cache entry',
      []
    ],
    [
      "fn.keywords['ref']",
      { type: 'partial', name: 'fn' },
      'partial',
      'fn',
      /functools\.partial `fn` keeps its arguments.*`del fn`/,
      "fn.keywords['ref'] (a functools.partial argument)",
      ["fn.keywords['ref']"]
    ],
    [
      "thread 'Thread-1 (train)': train() local h",
      { type: 'thread', name: 'Thread-1 (train)', place: 'train() local h' },
      'thread',
      'Thread-1 (train)',
      /^the thread 'Thread-1 \(train\)' keeps this while its function runs \(`train\(\) local h`\): it is freed when that function drops it \(`del` inside its loop\) or returns; what the thread was started with stays until it returns, and `join\(\)` only waits for that$/,
      "thread 'Thread-1 (train)': train() local h",
      ['train() local h']
    ],
    [
      'something.else',
      undefined,
      null,
      'something.else',
      /^drop the references the kernel names \(`something\.else`\)$/,
      'something.else (a reference no variable shows)',
      ['something.else']
    ]
  ] as const)(
    '%s: a leak of one run, with the fix for what keeps it',
    (p, reference, ref, owner, advice, held, places) => {
      const v = asHidden(p, reference);
      expect([v.verdict, v.confidence, v.causes, v.leakedBytes]).toEqual(['leak', 'high', ['hidden'], 64 * 2 ** 20]);
      expect(v.fixes).toEqual([{ code: 'release-hidden', ref, owner, paths: [p], places }]);
      expect(adviceText(v.fixes[0])).toMatch(advice);
      expect(v.holders.map(holderText)).toEqual([held]);
    }
  );
});

describe('a traceback kept through an exception the user kept', () => {
  // The cell caught its error (`except Exception as e: err = e`): nothing raised, no guess from the source.
  const caught: ILeakExecution[] = sessionExecutions(tracebackPin.manifest).map(e => ({ ...e, error: null }));
  const err: IHolderReference = { type: 'exception', name: 'err' };
  const viaErr = renamed(tracebackPin.holders[1]!, h =>
    h.kind === 'traceback'
      ? { ...h, path: h.path.replace('sys.last_traceback', 'err.__traceback__'), reference: err }
      : h
  );

  it('is a leak whose fix is to drop that exception, not to clear sys.last_traceback', () => {
    const v = findLeaks(tracebackPin.snapshots.slice(0, 2), caught.slice(0, 2), { holders: viaErr }).executions[1];
    expect([v.verdict, v.causes]).toEqual(['leak', ['traceback']]);
    expect(v.holders).toEqual([{ kind: 'traceback', path: 'err.__traceback__: step() local buf', reference: err }]);
    expect(v.fixes).toEqual([{ code: 'drop-exception', names: ['err'] }]);
    expect(adviceText(v.fixes[0])).toMatch(/^`del err`: a kept exception keeps its traceback/);
  });

  it('adds `del err` to the rule’s advice when the cell raised too, and keeps only that advice for sys.last_traceback', () => {
    const raised = sessionExecutions(tracebackPin.manifest).slice(0, 2);
    const both = findLeaks(tracebackPin.snapshots.slice(0, 2), raised, { holders: viaErr }).executions[1];
    expect(both.fixes.map(a => a.code)).toEqual(['clear-traceback', 'drop-exception']);
    const last = findLeaks(tracebackPin.snapshots.slice(0, 2), raised, { holders: tracebackPin.holders[1]! });
    expect(last.executions[1].fixes).toEqual([{ code: 'clear-traceback' }]);
  });
});

describe('a kept exception whose frames hold a forward pass made outside no_grad', () => {
  // exception_kept, recorded live: train_step's x and h (with its graph) stay in err.__traceback__.
  const kept = sessionOf('exception_kept--holders');
  const v = findLeaks(kept.snapshots, sessionExecutions(kept.manifest), { holders: kept.holders[1]! }).executions[1];

  it('leads with the reference that keeps it all, and drops the no_grad guess', () => {
    // The graph is reached only through the exception's frames: a step that raised before its backward pass.
    expect([v.verdict, v.causes, v.leakedBytes]).toEqual(['leak', ['traceback'], 256 * 2 ** 20]);
    expect(v.findings[0].code).toBe('kernel-holders-leak');
    expect(v.findings.map(x => x.code)).not.toContain('graph');
    expect(v.fixes.map(a => a.code)).toEqual(['drop-exception']);
  });
});

describe('a recording made before the kernel sent references', () => {
  // Its holders are named by path alone: nothing is read from the words of a path, the general fixes stand.
  const bare = (answer: IBlockHolders) => renamed(answer, ({ reference, ...h }) => h);

  it('gets the general fix for a traceback it cannot tell whose, not `sys.last_traceback`', () => {
    const kept = sessionOf('exception_kept--holders');
    const v = findLeaks(kept.snapshots, sessionExecutions(kept.manifest), { holders: bare(kept.holders[1]!) })
      .executions[1];
    expect(v.causes).toContain('traceback');
    expect(v.fixes.map(a => a.code)).not.toContain('clear-traceback');
    expect(v.fixes.map(a => a.code)).toContain('drop-references');
  });

  it('keeps the output-cache rule’s own fix', () => {
    const v = findLeaks(outCache.snapshots, outExecutions, { holders: bare(outCache.holders[2]!) }).executions[1];
    expect(v.fixes).toEqual([{ code: 'silence-output', executionCount: 2, also: [], deletable: [], displays: 0 }]);
  });
});

describe('kept exceptions in a list', () => {
  it('are dropped by names Python reads: runs of indices, never `errs[…] (2 items)`', () => {
    // exception_kept with its two frames' locals kept by two exceptions of a list, `errs[0]` and `errs[5]`.
    const kept = sessionOf('exception_kept--holders');
    const inList = renamed(kept.holders[1]!, h =>
      h.kind === 'traceback' && h.reference?.type === 'exception'
        ? { ...h, reference: { type: 'exception', name: h.path.endsWith('local h') ? 'errs[0]' : 'errs[5]' } }
        : h
    );
    const v = findLeaks(kept.snapshots, sessionExecutions(kept.manifest), { holders: inList }).executions[1];
    expect(v.fixes).toEqual([{ code: 'drop-exception', names: ['errs[0]', 'errs[5]'] }]);
  });
});

describe('causes in the order a person should read them', () => {
  it('the last traceback before a graph, when rules found both', () => {
    // exception_kept as if the cell had not caught its error and a closure had kept h too: the rules find
    // the graph (recorded first) and the last traceback, and the graph guess stands (h is not kept only
    // through the traceback).
    const kept = sessionOf('exception_kept--holders');
    const raised = sessionExecutions(kept.manifest).map((e, k) =>
      k === 1 ? { ...e, error: 'ValueError: too big' } : e
    );
    const uncaught = renamed(kept.holders[1]!, h =>
      h.path.endsWith('local h') && h.kind === 'traceback'
        ? {
            kind: 'hidden',
            path: 'on_step: closure variable h',
            reference: { type: 'closure', name: 'on_step', place: 'h' }
          }
        : h.reference?.type === 'exception'
          ? {
              ...h,
              path: h.path.replace('err.__traceback__', 'sys.last_traceback'),
              reference: { type: 'last-traceback' }
            }
          : h
    );
    const v = findLeaks(kept.snapshots, raised, { holders: uncaught }).executions[1];
    expect(v.causes).toEqual(expect.arrayContaining(['graph', 'traceback']));
    const codes = v.findings.map(x => x.code);
    expect(codes.indexOf('traceback')).toBeLessThan(codes.indexOf('graph'));
    expect(v.fixes[0].code).toBe('clear-traceback');
  });

  it('never leads with memory only the garbage collector reached', () => {
    // exception_kept with every holder unknown to the kernel's search: the graph rule's finding leads.
    const kept = sessionOf('exception_kept--holders');
    const orphans = renamed(kept.holders[1]!, h =>
      h.kind === 'native' || h.kind === 'parameter' ? h : { kind: 'unreachable', path: 'a (8192, 4096) float32 tensor' }
    );
    const v = findLeaks(kept.snapshots, sessionExecutions(kept.manifest), { holders: orphans }).executions[1];
    expect(v.causes).toEqual(['graph', 'unreachable']);
    expect(v.findings[0].code).toBe('graph');
    expect(v.fixes[0].code).toBe('no-grad');
  });
});

describe('the output history after `del Out[n]`', () => {
  // Cell 1's product, asked after cell 2 with `Out[2]` deleted: only `__` and `_2` still hold it.
  const history = renamed(outCache.holders[2]!, h =>
    h.kind !== 'output-cache'
      ? h
      : h.path === 'Out[2]'
        ? { ...h, path: '_2', reference: { type: 'output-name', name: '_2', count: 2 } }
        : { ...h, path: '__', reference: { type: 'output-name', name: '__', displays: 2 } }
  );

  it('names what still holds it instead of `del Out[2]`', () => {
    const v = findLeaks(outCache.snapshots, outExecutions, { holders: history }).executions[1];
    expect(v.verdict).toBe('leak');
    expect(v.fixes).toEqual([{ code: 'clear-output-history', names: ['__', '_2'], deletable: ['_2'], displays: 2 }]);
    expect(adviceText(v.fixes[0])).toBe(
      'the output history still holds it (`__`, `_2`): `del _2` and display 2 more results, or run `%reset -f out`'
    );
    expect(findingText(v.findings[0], String)).toMatch(/kept by the output cache `__`, `_2`$/);
  });

  it('says `del Out[2]` while Out[2] holds it, with the other names `del Out[2]` would leave', () => {
    // As the kernel answered: `Out[2]` and `_`, which the next three displayed results replace.
    const v = findLeaks(outCache.snapshots, outExecutions, { holders: outCache.holders[2]! }).executions[1];
    expect(v.fixes).toEqual([
      { code: 'silence-output', executionCount: 2, also: ['_'], deletable: ['Out[2]'], displays: 3 }
    ]);
    expect(v.fixes.map(adviceText)).toEqual([
      'end the line with `;` so that its result is not cached; to free it now, `del Out[2]` and display 3 more results, or run `%reset -f out` (it is held by `_` as well as `Out[2]`)'
    ]);
    const onlyOut: IBlockHolders = new Map(
      [...outCache.holders[2]!].map(([k, list]) => [k, list.filter(h => h.path !== '_')])
    );
    const alone = findLeaks(outCache.snapshots, outExecutions, { holders: onlyOut }).executions[1];
    expect(alone.fixes.map(adviceText)).toEqual(['end the line with `;` or `del Out[2]`']);
  });

  it('names each entry when later cells showed the same tensor (`Out` is a dict: no `Out[2:4]`)', () => {
    // Cell 0's x, shown by two later cells and then deleted: only the output history holds it, and no rule
    // guessed the output cache for cell 0 (its last line assigns).
    const shown = [
      output('Out[2]', OUT(2)),
      output('__', RECENT('__', 2)),
      output('Out[3]', OUT(3)),
      output('_3', NAMED(3)),
      output('_2', NAMED(2)),
      output('_', RECENT('_', 3))
    ];
    const all = new Map(
      [...outCache.holders[0]!].map(([k, list]) => [k, list.some(h => h.path === 'x') ? shown : list])
    );
    const twice = findLeaks(outCache.snapshots.slice(0, 1), outExecutions.slice(0, 1), { holders: all }).executions[0];
    expect(twice.verdict).toBe('leak');
    expect(twice.fixes).toEqual([
      {
        code: 'silence-output',
        executionCount: 2,
        also: ['Out[3]', '__', '_3', '_2', '_'],
        deletable: ['Out[2]', 'Out[3]', '_3', '_2'],
        displays: 3
      }
    ]);
    expect(findingText(twice.findings[0], String)).toMatch(/held only by Out\[2\], Out\[3\], __, _3, _2, _$/);
  });
});

describe('tensors only the garbage collector reaches', () => {
  it('are worded as where the search did not go, and their fix finds the referrer, claiming no names', () => {
    // eval_without_no_grad's graphs (cell 4's re-run leaking again) as the orphan search reports them.
    const s = sessionOf('eval_without_no_grad--python', RECORDINGS);
    const last = s.snapshots[s.snapshots.length - 1];
    const holders = new Map(
      last.blocks.map(b => [
        holderKey(b.device, b.address),
        [{ kind: 'unreachable' as const, path: 'a (512, 8192) float32 tensor' }]
      ])
    );
    const v = findLeaks(s.snapshots, sessionExecutions(s.manifest), { holders }).executions[4];
    expect(v.verdict).toBe('leak');
    const fixes = v.fixes.map(adviceText).join('\n');
    expect(fixes).toMatch(
      /find what refers to a \(512, 8192\) float32 tensor, which the kernel could not name: `gc\.get_referrers\(t\)`/
    );
    expect(fixes).not.toMatch(/references the kernel names/);
    expect(v.holders.map(holderText)).toEqual([
      "a (512, 8192) float32 tensor the kernel's search did not reach (found through the garbage collector)"
    ]);
  });

  it('clear a guess the answer contradicts, and the clearing says how they were found, not "from C++"', () => {
    // out_cache's product as an orphan: the kernel walks Out and found it elsewhere, so the output-cache guess goes.
    const orphan = renamed(outCache.holders[2]!, h =>
      h.kind === 'output-cache' ? { kind: 'unreachable', path: 'a (4096, 4096) float32 tensor' } : h
    );
    const v = findLeaks(outCache.snapshots, outExecutions, { holders: orphan }).executions[1];
    expect(v.verdict).toBe('retained');
    const text = findingText(v.findings[0], String);
    expect(text).toMatch(/1 found only through the garbage collector: held from where the kernel's search does not go/);
    expect(text).not.toMatch(/C\+\+/);
  });
});

describe('a guessed cause the kernel’s answer contradicts', () => {
  it('goes, even beside growth: an output-cache guess for a last line whose value is not what it keeps', () => {
    // multi_gpu_split's re-run cells 2 and 3 with `cache.append(dec(h))` as the last line, as in
    // `model.register_buffer(...)` last: the line returns None, the output cache keeps nothing.
    const s = sessionOf('multi_gpu_split--python', RECORDINGS);
    const source = "for _ in range(4): pass\nh = enc(x).to('cuda:1')\ncache.append(dec(h))";
    const executions = sessionExecutions(s.manifest).map((e, k) => (k === 2 || k === 3 ? { ...e, source } : e));
    const last = s.snapshots[s.snapshots.length - 1];
    const holders = new Map<string, IHolder[]>(
      last.blocks.map((b, i) => [
        holderKey(b.device, b.address),
        [
          LIBRARY_WORKSPACE_BYTES.includes(b.size)
            ? { kind: 'native', path: '' }
            : { kind: 'variable', path: `cache[${i}]` }
        ]
      ])
    );
    const guessed = findLeaks(s.snapshots, executions).executions[3];
    expect(guessed.causes).toEqual(['growth', 'graph', 'output-cache']);
    const v = findLeaks(s.snapshots, executions, { holders }).executions[3];
    expect([v.verdict, v.causes]).toEqual(['leak', ['growth', 'graph']]);
    expect(v.findings.map(f => f.code)).not.toContain('output-cache');
    expect(v.fixes.map(a => a.code)).toEqual(['no-grad']);
    expect(v.holders.every(h => h.kind === 'variable' && h.path.startsWith('cache['))).toBe(true);
  });

  it('stays while the kernel saw only part of its memory', () => {
    const partly = new Map([...outCache.holders[2]!].filter(([, list]) => list.every(h => h.kind !== 'output-cache')));
    const v = findLeaks(outCache.snapshots, outExecutions, { holders: partly }).executions[1];
    expect([v.verdict, v.causes]).toEqual(['leak', ['output-cache']]);
  });
});

describe('held by: the leaked blocks’ holders', () => {
  it('leaves out the gradients and workspaces of other blocks the cell keeps (losses_without_item)', () => {
    const s = sessionOf('losses_without_item--holders');
    const answer = s.holders[s.holders.length - 1]!;
    const report = findLeaks(s.snapshots, sessionExecutions(s.manifest), { holders: answer });
    const top = report.executions[report.topLeak!];
    expect([...answer.values()].flat().some(h => h.kind === 'gradient')).toBe(true);
    expect(top.holders.map(h => h.kind)).not.toContain('gradient');
    expect(top.holders.map(holderText)).toEqual(['losses[10:20]', 'loss']);
  });
});

describe('memory a later cell freed, named by the answer right after its cell', () => {
  // out_cache's x (cell 0), freed by cell 2's `del x`, as if an exception the user kept had held it.
  const executions = outExecutions;
  const kept = renamed(outCache.holders[0]!, h =>
    h.path === 'x' ? { kind: 'traceback', path: 'err.__traceback__: step() local x' } : h
  );
  const holdersAfter = [kept, outCache.holders[1], outCache.holders[2]];

  it('is a leak fixed by the cell that freed it', () => {
    const report = findLeaks(outCache.snapshots, executions, { holders: outCache.holders[2]!, holdersAfter });
    const v = report.executions[0];
    expect([v.verdict, v.fixedBy, v.causes, v.leakedBytes]).toEqual(['fixed', 2, ['traceback'], 64 * 2 ** 20]);
    expect(v.holders).toEqual([{ kind: 'traceback', path: 'err.__traceback__: step() local x' }]);
    expect(findingText(v.findings[v.findings.length - 1], k => `cell ${k}`)).toBe(
      'fixed: the 64.0 MiB it leaked was freed by cell 2'
    );
    expect(report.topLeak).toBe(1);
  });

  it('stays ok when the answer after its cell named a variable', () => {
    const plain = findLeaks(outCache.snapshots, executions, {
      holders: outCache.holders[2]!,
      holdersAfter: outCache.holders
    });
    expect(plain.executions[0].verdict).toBe('ok');
    expect(retentionByExecution(outCache.snapshots)[0].freedBy.get(2)).toBe(64 * 2 ** 20);
  });
});

describe('the fix for a result the output history holds, from the names the kernel gave', () => {
  it.each<[IHolder[], Record<string, unknown>]>([
    // a displayed dict or ModelOutput: the path goes on into the result, the name is the reference's
    [[output("Out[2]['logits']", OUT(2))], { code: 'silence-output', executionCount: 2, also: [], deletable: [] }],
    [
      [output("Out[2]['logits']", OUT(2)), output("_['logits']", RECENT('_', 3)), output("_2['logits']", NAMED(2))],
      { code: 'silence-output', executionCount: 2, also: ['_', '_2'], deletable: ['Out[2]', '_2'], displays: 3 }
    ],
    // the same tensor shown by two cells: both entries go
    [
      [output('Out[2]', OUT(2)), output('Out[3]', OUT(3)), output('_3', NAMED(3)), output('__', RECENT('__', 2))],
      { executionCount: 2, also: ['Out[3]', '_3', '__'], deletable: ['Out[2]', 'Out[3]', '_3'], displays: 2 }
    ],
    [
      [output('___', RECENT('___', 1)), output('_5[0]', NAMED(5))],
      { code: 'clear-output-history', names: ['___', '_5'], deletable: ['_5'], displays: 1 }
    ],
    // a holder from a file made before references were sent: a name to clear, nothing guessed from its words
    [
      [{ kind: 'output-cache', path: '_7' }],
      { code: 'clear-output-history', names: ['_7'], deletable: [], displays: 0 }
    ]
  ])('%j', (holders, fix) => {
    expect(outputCacheAdvice(holders)).toMatchObject(fix);
    const text = adviceText(outputCacheAdvice(holders));
    expect(text).not.toMatch(/: ,|\[\]/);
  });
});

describe("a confirmed leak's words account for all of its memory", () => {
  it('says what holds the part of the leak the kernel found held by names as well (gpu_memory_demo)', () => {
    // [3] leaks 288 MiB of graph: 256 MiB of activations only the graph holds, and the 8 outputs (4 MiB each)
    // that `preds` itself holds. Was "256 MiB held only by autograd graph of preds[0:8]": 32 MiB unsaid.
    const demo = sessionOf('gpu_memory_demo--holders');
    const report = findLeaks(demo.snapshots, sessionExecutions(demo.manifest), {
      holders: demo.holders[demo.holders.length - 1]!,
      holdersAfter: demo.holders
    });
    const v = report.executions[2];
    const kernel = v.findings.find(f => f.code === 'kernel-holders-leak');
    expect(kernel).toEqual({
      code: 'kernel-holders-leak',
      bytes: 256 * 2 ** 20,
      holders: [{ kind: 'graph', path: 'preds[0:8]' }],
      confirmed: true,
      named: { bytes: 32 * 2 ** 20, holders: [{ kind: 'variable', path: 'preds[0:8]' }] }
    });
    expect(v.leakedBytes).toBe(288 * 2 ** 20);
    expect(findingText(kernel!, String)).toBe(
      'confirmed by the kernel: 256 MiB held only by autograd graph of preds[0:8]; 32.0 MiB held by preds[0:8]'
    );
  });

  it('says how much of the leak the kernel did not see', () => {
    // The same answer with the outputs' blocks left out, as from a walk cut short.
    const demo = sessionOf('gpu_memory_demo--holders');
    const answer = demo.holders[demo.holders.length - 1]!;
    const cut = new Map(
      [...answer].filter(([, list]) => !list.every(h => h.kind === 'variable' && /^preds\[/.test(h.path)))
    );
    const v = findLeaks(demo.snapshots, sessionExecutions(demo.manifest), { holders: cut }).executions[2];
    const kernel = v.findings.find(f => f.code === 'kernel-holders-leak');
    expect(kernel).toMatchObject({ bytes: 256 * 2 ** 20, unseen: 32 * 2 ** 20 });
    expect(kernel).not.toHaveProperty('named');
  });
});
