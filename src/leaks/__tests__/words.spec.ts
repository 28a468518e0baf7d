// The panel's words for the holders and fixes the kernel's answer brings: each code one sentence for
// the translator, with the same names the CLI gives (src/engine/findings.ts).
import { nullTranslator } from '@jupyterlab/translation';
import { adviceText, findingText, holderText, IHolder, LeakAdvice, LeakFinding } from '../../engine';
import { adviceWords, findingWords, holderWords } from '../words';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

describe('words for holders nobody sees', () => {
  it.each<[IHolder, string]>([
    [
      { kind: 'hidden', path: 'score.__defaults__[0]', reference: { type: 'default-argument', name: 'score' } },
      'score.__defaults__[0] (a default argument)'
    ],
    [
      { kind: 'hidden', path: 'fn.args[0]', reference: { type: 'partial', name: 'fn' } },
      'fn.args[0] (a functools.partial argument)'
    ],
    [
      {
        kind: 'hidden',
        path: 'callbacks[0]: closure variable buf',
        reference: { type: 'closure', name: 'callbacks[0]', place: 'buf' }
      },
      'callbacks[0]: closure variable buf'
    ],
    [
      {
        kind: 'hidden',
        path: "thread 'Thread-1 (train)': train() local h",
        reference: { type: 'thread', name: 'Thread-1 (train)', place: 'train() local h' }
      },
      "thread 'Thread-1 (train)': train() local h"
    ],
    // what the kernel did not say (a file from before references were sent) is not read from the path's words
    [{ kind: 'hidden', path: 'fn.args[0]' }, 'fn.args[0] (a reference no variable shows)'],
    [
      { kind: 'unreachable', path: 'a (8192, 1024) float32 tensor' },
      "a (8192, 1024) float32 tensor the kernel's search did not reach (found through the garbage collector)"
    ],
    // a block whose holders the kernel did not all list (the demo's weights, saved by every graph of preds)
    [{ kind: 'graph', path: 'preds[0:3]', cut: 'cap' }, 'autograd graph of preds[0:3] and maybe more'],
    [{ kind: 'graph', path: 'preds[0:64]', cut: 'more' }, 'autograd graph of preds[0:64] and more'],
    [{ kind: 'parameter', path: 'model.2.weight', cut: 'more' }, 'model.2.weight and more']
  ])('names %j as the CLI does, its path as code', (holder, words) => {
    expect(holderWords(holder, trans).replace(/`/g, '')).toBe(words);
    expect(holderText(holder)).toBe(words);
    // the path is the one code span: the words around it (`autograd graph of`, `and more`) are text
    const spans = holderWords(holder, trans).split('`');
    const code = spans.filter((_, i) => i % 2);
    expect(code).toEqual(holder.kind === 'unreachable' || holder.kind === 'native' ? [] : [holder.path]);
  });

  it.each<[LeakAdvice, RegExp]>([
    [
      {
        code: 'release-hidden',
        ref: 'default-argument',
        owner: 'score',
        paths: ['score.__defaults__[0]'],
        places: ['score.__defaults__[0]']
      },
      /^`score` keeps every call's value in a default argument \(`score\.__defaults__\[0\]`\): default it to `None`/
    ],
    [
      {
        code: 'release-hidden',
        ref: 'closure',
        owner: 'callbacks[0]',
        paths: ['callbacks[0]: closure variable buf'],
        places: ['buf']
      },
      /^`callbacks\[0\]` keeps what its closure captured \(`buf`\)/
    ],
    [
      {
        code: 'release-hidden',
        ref: 'generator',
        owner: 'train_iter',
        paths: ['train_iter: generator frame local x'],
        places: ['x']
      },
      /exhaust it or `del train_iter`\.$/
    ],
    [
      {
        code: 'release-hidden',
        ref: 'lru-cache',
        owner: 'standardize',
        paths: ['standardize: lru_cache entry'],
        places: []
      },
      /call `standardize\.cache_clear\(\)`/
    ],
    [
      {
        code: 'release-hidden',
        ref: 'thread',
        owner: 'Thread-1 (train)',
        paths: ["thread 'Thread-1 (train)': train() local h", "thread 'Thread-1 (train)': step() local x"],
        places: ['train() local h', 'step() local x']
      },
      /^The thread 'Thread-1 \(train\)' keeps this while its function runs \(`train\(\) local h`, `step\(\) local x`\): it is freed when that function drops it \(`del` inside its loop\) or returns; what the thread was started with stays until it returns, and `join\(\)` only waits for that\.$/
    ],
    [{ code: 'drop-exception', names: ['err'] }, /^`del err`: a kept exception keeps its traceback/],
    [
      { code: 'clear-output-history', names: ['__', '_2'], deletable: ['_2'], displays: 2 },
      /^The output history still holds it \(`__`, `_2`\): `del _2` and display 2 more results, or run `%reset -f out`\.$/
    ],
    [
      { code: 'clear-output-history', names: ['_'], deletable: [], displays: 3 },
      /: display 3 more results, or run `%reset -f out`\.$/
    ],
    [
      { code: 'clear-output-history', names: ['_7'], deletable: ['_7'], displays: 0 },
      /\(`_7`\): `del _7`, or run `%reset -f out`\.$/
    ],
    // a name the kernel did not say how to drop (a file from before references were sent)
    [
      { code: 'clear-output-history', names: ['_7'], deletable: [], displays: 0 },
      /^The output history still holds it \(`_7`\): run `%reset -f out`\.$/
    ],
    [
      { code: 'silence-output', executionCount: 2, also: [], deletable: [], displays: 0 },
      /^End the line with `;` or `del Out\[2\]`\.$/
    ],
    [
      {
        code: 'silence-output',
        executionCount: 2,
        also: ['Out[3]', '_', '_3'],
        deletable: ['Out[2]', 'Out[3]', '_3'],
        displays: 3
      },
      /^End the line with `;` so that its result is not cached; to free it now, `del Out\[2\], Out\[3\], _3` and display 3 more results, or run `%reset -f out` \(it is held by `Out\[3\]`, `_`, `_3` as well as `Out\[2\]`\)\.$/
    ],
    [
      { code: 'silence-output', executionCount: 4, also: ['_4'], deletable: ['Out[4]', '_4'], displays: 0 },
      /to free it now, `del Out\[4\], _4`, or run `%reset -f out`/
    ],
    [
      { code: 'clear-holder', holders: ['recent[8:16]', 'model.cache[4:8]'] },
      /^Clear or `del` what keeps it \(`recent\[8:16\]`, `model\.cache\[4:8\]`\) once its values are used/
    ],
    [
      { code: 'find-referrers', tensors: ['a (8192, 1024) float32 tensor'] },
      /^Find what refers to a \(8192, 1024\) float32 tensor, which the kernel could not name: `gc\.get_referrers\(t\)`/
    ]
  ])('words the fix %j as a sentence saying what the CLI says', (advice, words) => {
    const panel = adviceWords(advice, trans);
    expect(panel).toMatch(words);
    // The same sentence as the CLI's, capitalised and ended.
    expect(panel.toLowerCase()).toBe(`${adviceText(advice)}.`.toLowerCase());
  });

  it('says a traceback role may be a kept exception’s, not only the last traceback', () => {
    // exception_kept: the role pass calls `err.__traceback__`'s locals `traceback` too.
    const role = { code: 'leak-role' as const, role: 'traceback', bytes: 128 * 2 ** 20 };
    expect(findingText(role, String)).toBe(
      '128 MiB of it is kept by the locals of a traceback (the last one, or one an exception you kept holds)'
    );
    expect(findingWords(role, String, trans)).toBe(`${findingText(role, String)}.`);
  });

  it('accounts for all of a confirmed leak: what only the graph holds, what names hold too, what was unseen', () => {
    // gpu_memory_demo's Cell [3]: the badge said +321 MiB, the finder 288 MiB, and the kernel's line only 256 MiB.
    const finding = {
      code: 'kernel-holders-leak' as const,
      bytes: 256 * 2 ** 20,
      holders: [{ kind: 'graph' as const, path: 'preds[0:8]' }],
      confirmed: true,
      named: { bytes: 32 * 2 ** 20, holders: [{ kind: 'variable' as const, path: 'preds[0:8]' }] }
    };
    expect(findingWords(finding, String, trans)).toBe(
      'Confirmed by the kernel: 256 MiB held only by autograd graph of `preds[0:8]`; 32.0 MiB held by `preds[0:8]`.'
    );
    expect(findingWords({ ...finding, confirmed: false, named: undefined, unseen: 2 ** 20 }, String, trans)).toBe(
      'The kernel found 256 MiB held only by autograd graph of `preds[0:8]`; 1.00 MiB it did not see.'
    );
  });

  it('says the holders of a replayed session are what the kernel named when it was recorded, not now', () => {
    // The replayed demo after a `del preds` the recording never saw: the kernel was not asked again.
    const finding = {
      code: 'kernel-holders-leak' as const,
      bytes: 256 * 2 ** 20,
      holders: [{ kind: 'graph' as const, path: 'preds[0:8]' }],
      confirmed: true,
      named: { bytes: 32 * 2 ** 20, holders: [{ kind: 'variable' as const, path: 'preds[0:8]' }] }
    };
    const recorded = (f: LeakFinding) => findingWords(f, String, trans, { holdersRecorded: true });
    expect(recorded(finding)).toBe(
      'Confirmed by the kernel when the session was recorded: 256 MiB held only by autograd graph of `preds[0:8]`; 32.0 MiB held by `preds[0:8]`.'
    );
    expect(recorded({ ...finding, confirmed: false })).toBe(
      'When the session was recorded, the kernel found 256 MiB held only by autograd graph of `preds[0:8]`; 32.0 MiB held by `preds[0:8]`.'
    );
    const clear = { code: 'kernel-holders-clear' as const, holders: finding.named.holders, orphans: 0 };
    expect(recorded(clear)).toBe(
      'When the session was recorded, the kernel found every live block held by `preds[0:8]`.'
    );
    expect(recorded({ ...clear, holders: [] })).toBe(
      'When the session was recorded, the kernel found every live block held by nothing it could name.'
    );
    expect(recorded({ ...clear, orphans: 2 })).toMatch(
      /^When the session was recorded, the kernel found its live blocks held by `preds\[0:8\]`; 2 found only through the garbage collector/
    );
    // A live session keeps its words.
    expect(findingWords(finding, String, trans)).toMatch(/^Confirmed by the kernel: /);
    expect(findingWords(clear, String, trans)).toBe('The kernel found every live block held by `preds[0:8]`.');
  });

  it('says how orphans were found, not that C++ holds them', () => {
    const words = findingWords(
      { code: 'kernel-holders-clear', holders: [{ kind: 'native', path: '' }], orphans: 1 },
      String,
      trans
    );
    expect(words).toMatch(
      /1 found only through the garbage collector: held from where the kernel's search does not go/
    );
    expect(words).not.toMatch(/C\+\+/);
  });
});
