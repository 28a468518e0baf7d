/**
 * @jest-environment node
 */
// The README's `cuda-memdiff` examples are a promise: each one whose files are in the repository is run
// as written, and prints what the README shows (a line `...` stands for the rows it leaves out).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');

interface IExample {
  args: string[];
  shown: string[];
}

/** The `$ npx cuda-memdiff ...` lines of the README's console blocks, each with the lines shown under it. */
function examples(readme: string): IExample[] {
  const found: IExample[] = [];
  for (const block of readme.matchAll(/```console\n([\s\S]*?)```/g)) {
    let current: IExample | null = null;
    for (const line of block[1].split('\n')) {
      if (line.startsWith('$ ')) {
        const words = line.slice(2).split(/\s+/);
        current = words[0] === 'npx' && words[1] === 'cuda-memdiff' ? { args: words.slice(2), shown: [] } : null;
        if (current) {
          found.push(current);
        }
      } else if (current) {
        current.shown.push(line);
      }
    }
  }
  for (const e of found) {
    while (e.shown.length && !e.shown[e.shown.length - 1]) {
      e.shown.pop();
    }
  }
  return found;
}

/** Whether `printed` has the `shown` lines in order, `...` standing for any lines (at least one). */
function shows(printed: string[], shown: string[]): boolean {
  let at = 0;
  for (let k = 0; k < shown.length; k++) {
    if (shown[k].trim() === '...') {
      const next = shown[k + 1];
      if (next === undefined) {
        return at < printed.length;
      }
      const found = printed.indexOf(next, at + 1);
      if (found < 0) {
        return false;
      }
      at = found;
      continue;
    }
    if (printed[at] !== shown[k]) {
      return false;
    }
    at += 1;
  }
  return at === printed.length;
}

const all = examples(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf-8'));
// Examples whose operands are all in the repository run; the others name the user's own files.
const runnable = all.filter(
  e => e.shown.length && e.args.slice(1).every(a => a.startsWith('--') || fs.existsSync(path.join(ROOT, a)))
);

describe("the README's cuda-memdiff examples", () => {
  it('include the summary, diff, session and leaks examples, with their output', () => {
    expect(runnable.map(e => e.args[0])).toEqual(['summary', 'diff', 'session', 'leaks']);
  });

  it.each(runnable.map(e => [e.args.join(' '), e] as const))('%s prints what the README shows', (_, e) => {
    const r = spawnSync(process.execPath, [BIN, ...e.args], { cwd: ROOT, encoding: 'utf-8' });
    expect(r.status).toBe(0);
    const printed = r.stdout.replace(/\n$/, '').split('\n');
    if (!shows(printed, e.shown)) {
      // the whole output, for the README
      expect(printed.join('\n')).toBe(e.shown.join('\n'));
    }
  });

  it("reads '...' as the rows an example leaves out, and nothing else", () => {
    expect(shows(['a', 'b', 'c', 'd'], ['a', '   ...', 'd'])).toBe(true);
    expect(shows(['a', 'b', 'c', 'd'], ['a', '...'])).toBe(true);
    expect(shows(['a', 'd'], ['a', '...', 'd'])).toBe(false);
    expect(shows(['a', 'b', 'c'], ['a', 'c'])).toBe(false);
    expect(shows(['a', 'b'], ['a'])).toBe(false);
  });
});
