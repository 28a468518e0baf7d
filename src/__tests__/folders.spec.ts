/**
 * The folders under src/ form layers: a folder may import another only when
 * that one does not import it back, directly or through others. Reads every
 * import of the production sources (tests left out: a spec may reach across)
 * and fails naming each cycle and the imports that make it.
 */
import * as fs from 'fs';
import * as path from 'path';

const SRC = path.resolve(__dirname, '..');

/** Every .ts/.tsx file under `dir`, tests and generated declarations left out. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== '__tests__' && entry.name !== 'node_modules') {
        out.push(...sources(full));
      }
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      out.push(full);
    }
  }
  return out;
}

/** The relative module specifiers a file imports or re-exports (type-only imports too). */
export function relativeImports(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g
  ];
  for (const pattern of patterns) {
    for (const m of text.matchAll(pattern)) {
      if (m[1].startsWith('.')) {
        found.push(m[1]);
      }
    }
  }
  return found;
}

/** The folder a path under src/ belongs to: its first segment, or the file itself at the top. */
function folderOf(file: string): string {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length ? first : first.replace(/\.tsx?$/, '.ts');
}

/** Folder -> folder -> one import that makes the edge (for the message). */
export type FolderGraph = Map<string, Map<string, string>>;

export function folderGraph(files: string[]): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const file of files) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const spec of relativeImports(fs.readFileSync(file, 'utf-8'))) {
      const target = path.resolve(path.dirname(file), spec);
      if (path.relative(SRC, target).startsWith('..')) {
        continue; // outside src/ (package.json, say): no folder of ours
      }
      const to = folderOf(
        fs.existsSync(target) && fs.statSync(target).isDirectory() ? path.join(target, 'index.ts') : target + '.ts'
      );
      if (to !== from && !edges.has(to)) {
        edges.set(to, `${path.relative(SRC, file)} imports '${spec}'`);
      }
    }
  }
  return graph;
}

/** Each cycle between folders, as the folders in order and the imports that close it (Tarjan's components). */
export function folderCycles(graph: FolderGraph): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) {
        components.push(component.sort());
      }
    }
  };
  for (const v of [...graph.keys()].sort()) {
    if (!index.has(v)) {
      visit(v);
    }
  }
  // Each folder's shortest way back to itself inside its component, so every cycle a folder is on gets named.
  const cycles = new Map<string, string>();
  for (const component of components) {
    for (const start of component) {
      const cycle = shortestCycle(graph, component, start);
      const rotated = Private.rotate(cycle.slice(0, -1));
      const key = rotated.join(' -> ');
      if (!cycles.has(key)) {
        const closed = [...rotated, rotated[0]];
        const why = closed.slice(1).map((to, i) => graph.get(closed[i])!.get(to)!);
        cycles.set(key, `${closed.join(' -> ')} (${why.join('; ')})`);
      }
    }
  }
  return [...cycles.values()].sort();
}

/** The shortest cycle from `start` back to it through the folders of its component (breadth first). */
function shortestCycle(graph: FolderGraph, component: string[], start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  let last: string | null = null;
  while (queue.length && last === null) {
    const v = queue.shift()!;
    for (const w of graph.get(v)?.keys() ?? []) {
      if (w === start) {
        last = v;
        break;
      }
      if (component.includes(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  const cycle = [start];
  for (let v = last!; v !== start; v = previous.get(v)!) {
    cycle.splice(1, 0, v);
  }
  cycle.push(start);
  return cycle;
}

namespace Private {
  /** A cycle's folders starting at the alphabetically first, so one cycle has one name. */
  export function rotate(folders: string[]): string[] {
    const first = folders.indexOf([...folders].sort()[0]);
    return [...folders.slice(first), ...folders.slice(0, first)];
  }
}

describe('folders under src/', () => {
  it('import each other in one direction only', () => {
    const cycles = folderCycles(folderGraph(sources(SRC)));
    if (cycles.length) {
      throw new Error(`folder import cycles in src/:\n  ${cycles.join('\n  ')}`);
    }
  });

  it('finds a cycle through a third folder and names its imports', () => {
    const graph: FolderGraph = new Map([
      ['a', new Map([['b', 'a/x.ts imports ../b']])],
      ['b', new Map([['c', 'b/y.ts imports ../c/z']])],
      ['c', new Map([['a', "c/z.ts imports '../a/x'"]])],
      ['d', new Map([['a', 'd/w.ts imports ../a']])]
    ]);
    expect(folderCycles(graph)).toEqual([
      "a -> b -> c -> a (a/x.ts imports ../b; b/y.ts imports ../c/z; c/z.ts imports '../a/x')"
    ]);
    graph.get('c')!.delete('a');
    expect(folderCycles(graph)).toEqual([]);
  });

  it('reads import, export-from, type-only and dynamic imports', () => {
    const text = [
      "import { a } from '../a';",
      "import type { B } from '../b/model';",
      "export { c } from './c';",
      "import '../style.css';",
      "const d = import('../d');",
      "import { e } from '@lumino/e';"
    ].join('\n');
    expect(relativeImports(text).sort()).toEqual(['../a', '../b/model', '../d', '../style.css', './c']);
  });
});
