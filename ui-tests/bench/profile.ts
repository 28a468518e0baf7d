import * as fs from 'fs';

// Where a long main-thread task spends its time, from a Chromium trace
// (browser.startTracing with TRACE_CATEGORIES): the page's longest tasks
// (RunTask on the renderer's main thread) and, inside each, the functions
// with the most self time from the V8 sampling profiler's samples, which the
// trace carries in the same clock. Used by files.spec.ts when BENCH_PROFILE
// names a folder.

/** The trace categories this reads: tasks, and the CPU profile's samples. */
export const TRACE_CATEGORIES = [
  '-*',
  'toplevel',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8.execute',
  'disabled-by-default-v8.cpu_profiler',
  'blink.user_timing'
];

/** The mark (performance.mark) the bench sets when it opens the file: tasks before it are tracing's own start. */
export const OPEN_MARK = 'cuda-memdiff-bench-open';

interface ITraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  id?: string;
  args?: any;
}

interface ICallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface INode {
  frame: ICallFrame;
  parent: string | null;
}

/** Frames of this extension's own bundle. */
const OWN_URL = 'jupyterlab-cuda-memdiff';

function frameName(f: ICallFrame): string {
  return `${f.functionName || '(anonymous)'} (${(f.url ?? '').split('/').pop() || '-'}:${(f.lineNumber ?? -1) + 1})`;
}

/** A long task and its functions by self time. */
export interface ITaskProfile {
  readonly startMs: number;
  readonly durationMs: number;
  /** `[self ms, function (file:line)]`, most first. */
  readonly top: readonly [number, string][];
  /** `[ms, function]`: time in this extension's functions and what they call, most first. */
  readonly inclusive: readonly [number, string][];
  /** `[ms, trace event]` of the events inside the task (nested ones counted in their parents too), most first. */
  readonly events: readonly [number, string][];
}

/** The `tasks` longest main-thread tasks of a trace, each with its `functions` top self-time functions. */
export function longTaskProfiles(trace: Buffer, tasks = 3, functions = 15): ITaskProfile[] {
  const parsed = JSON.parse(trace.toString('utf-8'));
  const events: ITraceEvent[] = Array.isArray(parsed) ? parsed : parsed.traceEvents;
  const main = events.find(e => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  if (!main) {
    return [];
  }
  const onMain = (e: ITraceEvent) => e.pid === main.pid && e.tid === main.tid;
  // Samples: the main thread's Profile event starts a profile whose
  // ProfileChunks (emitted on a profiler thread) share its id.
  const clock = new Map<string, number>();
  for (const e of events) {
    if (onMain(e) && e.ph === 'P' && e.name === 'Profile') {
      clock.set(`${e.pid}:${e.id}`, e.args.data.startTime);
    }
  }
  // Node ids are per profile.
  const nodes = new Map<string, INode>();
  const samples: [number, string][] = [];
  for (const e of events) {
    const key = `${e.pid}:${e.id}`;
    if (e.ph !== 'P' || e.name !== 'ProfileChunk' || !clock.has(key)) {
      continue;
    }
    const data = e.args.data;
    for (const n of data.cpuProfile?.nodes ?? []) {
      nodes.set(`${key}:${n.id}`, { frame: n.callFrame, parent: n.parent === undefined ? null : `${key}:${n.parent}` });
    }
    let t = clock.get(key)!;
    const ids: number[] = data.cpuProfile?.samples ?? [];
    const deltas: number[] = data.timeDeltas ?? [];
    ids.forEach((id, i) => {
      t += deltas[i] ?? 0;
      samples.push([t, `${key}:${id}`]);
    });
    clock.set(key, t);
  }
  samples.sort((a, b) => a[0] - b[0]);
  // Starting the profiler costs a long task of its own; count from the bench's mark.
  const mark = events.find(e => e.name === OPEN_MARK)?.ts ?? -Infinity;
  const all = events.filter(e => onMain(e) && e.ph === 'X' && e.name === 'RunTask' && e.dur && e.ts >= mark);
  const first = Number.isFinite(mark) ? mark : all.length ? Math.min(...all.map(e => e.ts)) : 0;
  const runTasks = all.sort((a, b) => b.dur! - a.dur!).slice(0, tasks);
  return runTasks.map(task => {
    const self = new Map<string, number>();
    const inclusive = new Map<string, number>();
    const add = (m: Map<string, number>, k: string, ms: number) => m.set(k, (m.get(k) ?? 0) + ms);
    // Each sample stands for the time until the next one.
    for (let i = 0; i < samples.length - 1; i++) {
      const [t, id] = samples[i];
      if (t < task.ts || t >= task.ts + task.dur!) {
        continue;
      }
      const ms = (samples[i + 1][0] - t) / 1000;
      const leaf = nodes.get(id);
      if (!leaf) {
        add(self, '?', ms);
        continue;
      }
      // A built-in (layout, DOM) is named with the script function that called it.
      let name = frameName(leaf.frame);
      let caller = leaf;
      while (!caller.frame.url && caller.parent && nodes.has(caller.parent)) {
        caller = nodes.get(caller.parent)!;
      }
      if (caller !== leaf && caller.frame.url) {
        name += ` <- ${frameName(caller.frame)}`;
      }
      add(self, name, ms);
      const seen = new Set<string>();
      for (let n: INode | undefined = leaf; n; n = n.parent ? nodes.get(n.parent) : undefined) {
        const own = frameName(n.frame);
        if ((n.frame.url ?? '').includes(OWN_URL) && !seen.has(own)) {
          seen.add(own);
          add(inclusive, own, ms);
        }
      }
    }
    const sorted = (m: Map<string, number>, k: number) =>
      [...m]
        .map(([n, ms]): [number, string] => [ms, n])
        .sort((a, b) => b[0] - a[0])
        .slice(0, k);
    const inside = new Map<string, number>();
    for (const e of events) {
      if (onMain(e) && e.ph === 'X' && e !== task && e.dur && e.ts >= task.ts && e.ts < task.ts + task.dur!) {
        inside.set(e.name, (inside.get(e.name) ?? 0) + e.dur / 1000);
      }
    }
    return {
      events: sorted(inside, 8),
      startMs: (task.ts - first) / 1000,
      durationMs: task.dur! / 1000,
      top: sorted(self, functions),
      inclusive: sorted(inclusive, functions)
    };
  });
}

/** Save the trace (it opens in Chromium's DevTools) and print where its longest tasks go. */
export function reportTrace(trace: Buffer, file: string, label: string): void {
  fs.writeFileSync(file, trace);
  const lines = [`${label}: trace ${file}`];
  for (const t of longTaskProfiles(trace)) {
    lines.push(`  task of ${t.durationMs.toFixed(0)} ms (+${t.startMs.toFixed(0)} ms after the open), self time:`);
    for (const [ms, name] of t.top) {
      lines.push(`    ${ms.toFixed(1).padStart(7)} ms  ${name}`);
    }
    lines.push('    inclusive, in this extension:');
    for (const [ms, name] of t.inclusive) {
      lines.push(`    ${ms.toFixed(1).padStart(7)} ms  ${name}`);
    }
    lines.push(`    trace events: ${t.events.map(([ms, name]) => `${name} ${ms.toFixed(0)} ms`).join(', ')}`);
  }
  // eslint-disable-next-line no-console
  console.log(lines.join('\n'));
}
