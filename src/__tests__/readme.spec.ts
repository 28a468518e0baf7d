/**
 * What the README tells a user to pick or type must exist: each command it
 * names (_Save CUDA Memory Snapshot as Pickle_) is a label the plugins give
 * the command palette, and each `cuda-memdiff` line it shows is one that runs
 * after setup, which puts no `cuda-memdiff` on PATH: `npx cuda-memdiff`.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf-8');

/** The labels of the commands the plugins add. */
function commandLabels(): Set<string> {
  const dir = path.join(ROOT, 'src', 'plugins');
  const labels = new Set<string>();
  for (const file of fs.readdirSync(dir).filter(f => f.endsWith('.ts'))) {
    for (const m of fs.readFileSync(path.join(dir, file), 'utf-8').matchAll(/label: trans\.__\('([^']+)'\)/g)) {
      labels.add(m[1]);
    }
  }
  return labels;
}

describe('the README', () => {
  it('names each command as the command palette does', () => {
    // An italic name that starts like a command's (a phrase may wrap across lines).
    const named = [...README.replace(/\s+/g, ' ').matchAll(/\b_((?:Open|Save|Export|Find|Reveal) [A-Za-z ]+)_\b/g)].map(
      m => m[1]
    );
    const labels = commandLabels();
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter(name => !labels.has(name))).toEqual([]);
  });

  it('shows the command line as it runs after setup: npx cuda-memdiff', () => {
    const lines = [...README.matchAll(/```\w*\n([\s\S]*?)```/g)].flatMap(block => block[1].split('\n'));
    const typed = lines.filter(line => /^(\$ )?(npx )?cuda-memdiff /.test(line));
    expect(typed.length).toBeGreaterThan(3);
    expect(typed.filter(line => !/^(\$ )?npx cuda-memdiff /.test(line))).toEqual([]);
  });
});
