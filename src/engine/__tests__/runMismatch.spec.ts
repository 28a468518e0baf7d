/**
 * @jest-environment node
 */
// runMismatch on the real H200 snapshots of test-data: no two snapshots of one
// run are called apart, and snapshots of two runs that both hold memory are.
import * as fs from 'fs';
import * as path from 'path';
import { normalizeSnapshot, PyValue, readSnapshot, runMismatch, Snapshot } from '..';
import { readBytes, TEST_DATA } from './data';

/** A recorded run: its snapshot files, as their folder's manifest groups them (a restart starts another run). */
interface IRun {
  readonly name: string;
  readonly snapshots: readonly Snapshot[];
}

/** Every session folder of test-data (a multi-rank folder's ranks each one), with its manifest. */
function sessionFolders(dir = TEST_DATA): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      const sub = path.join(dir, entry.name);
      found.push(...(fs.existsSync(path.join(sub, 'manifest.json')) ? [sub] : sessionFolders(sub)));
    }
  }
  return found.sort();
}

/** A folder's runs: one per kernel session its manifest names (most folders have one), OOM snapshots included. */
function runsOf(folder: string): IRun[] {
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf-8'));
  const byKernel = new Map<string, Snapshot[]>();
  for (const cell of manifest.cells) {
    const files = [
      cell.snapshot_file,
      ...(cell.oom_snapshots ?? []).map((o: { file?: string } | string) => (typeof o === 'string' ? o : o.file))
    ].filter((f: string | undefined) => f && fs.existsSync(path.join(folder, f)));
    const run = byKernel.get(cell.kernel_session ?? '') ?? [];
    run.push(...files.map((f: string) => readSnapshot(readBytes(path.join(folder, f)))));
    byKernel.set(cell.kernel_session ?? '', run);
  }
  const name = path.relative(TEST_DATA, folder);
  return [...byKernel.entries()].map(([kernel, snapshots]) => ({
    name: kernel ? `${name} ${kernel}` : name,
    snapshots
  }));
}

const folders = sessionFolders();
const runs = folders.flatMap(runsOf);
// Exports are copies of recorded cells: a run there is one of the recordings' again.
const recorded = runs.filter(r => !r.name.startsWith('exports'));
const holdsMemory = (s: Snapshot) => s.segments.length > 0;

describe('runMismatch on the recorded sessions', () => {
  it('reads every session folder of test-data', () => {
    expect(folders.length).toBeGreaterThan(30);
    expect(runs.filter(r => r.name.startsWith('exports')).length).toBeGreaterThanOrEqual(4);
  });

  it.each(runs.map(r => [r.name, r]))('%s: no pair of its snapshots, either way round, is called apart', (_, run) => {
    const { snapshots } = run as IRun;
    const called: string[] = [];
    snapshots.forEach((a, i) =>
      snapshots.forEach((b, j) => {
        if (i !== j && runMismatch(a, b)) {
          called.push(`${i} -> ${j}`);
        }
      })
    );
    expect(called).toEqual([]);
  });

  it('calls apart each run against every other run, wherever both hold memory', () => {
    const missed: string[] = [];
    for (const a of recorded) {
      for (const b of recorded) {
        const before = a.snapshots.filter(holdsMemory).pop();
        const after = b.snapshots.filter(holdsMemory).pop();
        if (a !== b && before && after && !runMismatch(before, after)) {
          missed.push(`${a.name} -> ${b.name}`);
        }
      }
    }
    expect(missed).toEqual([]);
  });

  it('says what disagrees: segments, device count, overlapping histories', () => {
    const last = (name: string) =>
      recorded
        .find(r => r.name === name)!
        .snapshots.filter(holdsMemory)
        .pop()!;
    const oom = last('recordings/oom--python');
    const demo = last('recordings/gpu_memory_demo--python');
    const twoGpus = last('recordings/multi_gpu_split--python');
    expect(runMismatch(oom, demo)).toEqual({
      evidence: [{ code: 'segments-apart', beforeSegments: oom.segments.length, afterSegments: demo.segments.length }]
    });
    expect(runMismatch(demo, twoGpus)?.evidence.map(e => e.code)).toEqual(['device-count', 'segments-apart']);
    expect(runMismatch(demo, twoGpus)?.evidence[0]).toEqual({ code: 'device-count', before: 1, after: 2 });
    // Two ranks of one job ran side by side on one GPU: their histories overlap and share nothing.
    const rank0 = last('ranks/ddp_one_gpu/rank0');
    const rank1 = last('ranks/ddp_one_gpu/rank1');
    expect(runMismatch(rank0, rank1)?.evidence.map(e => e.code)).toContain('history-apart');
  });
});

describe('runMismatch', () => {
  const segment = (address: number, size: number, state = 'active_allocated'): PyValue => ({
    device: 0,
    address,
    total_size: size,
    blocks: [{ address, size, state }]
  });
  const snap = (segments: PyValue[], traces: PyValue[] | null = [[]]) =>
    normalizeSnapshot(traces ? { segments, device_traces: traces } : { segments });
  const entry = (time_us: number, addr: number): PyValue => ({ action: 'alloc', addr, size: 512, time_us });

  it('says nothing of an empty device, or of two snapshots sharing a segment', () => {
    expect(runMismatch(snap([]), snap([segment(0x1000, 4096)]))).toBeNull();
    expect(runMismatch(snap([segment(0x1000, 4096)]), snap([segment(0x1000, 4096, 'inactive')]))).toBeNull();
  });

  it('takes a segment at the same address but of another size for another process', () => {
    // Two processes on one GPU reserve at the same addresses: only the sizes tell them apart.
    expect(runMismatch(snap([segment(0x1000, 4096)]), snap([segment(0x1000, 8192)]))?.evidence).toEqual([
      { code: 'segments-apart', beforeSegments: 1, afterSegments: 1 }
    ]);
  });

  it('takes one history entry in common for one run, whatever else differs', () => {
    const a = snap([segment(0x1000, 4096)], [[entry(100, 0x1000)]]);
    const b = snap([segment(0x9000, 4096)], [[entry(100, 0x1000), entry(5000, 0x9000)]]);
    expect(runMismatch(a, b)).toBeNull();
  });

  it('calls apart histories that overlap in time and share nothing, but not ones a wrapped ring left apart', () => {
    const a = snap([segment(0x1000, 4096)], [[entry(100, 0x1000), entry(9000, 0x1000)]]);
    const concurrent = snap([segment(0x9000, 4096)], [[entry(50, 0x9000), entry(8000, 0x9000)]]);
    const later = snap([segment(0x9000, 4096)], [[entry(20000, 0x9000)]]);
    expect(runMismatch(a, concurrent)?.evidence.map(e => e.code)).toEqual(['history-apart', 'segments-apart']);
    expect(runMismatch(a, later)?.evidence.map(e => e.code)).toEqual(['segments-apart']);
  });

  it('counts devices only where both files list them (torch 2.0 writes no history)', () => {
    const one = snap([segment(0x1000, 4096)], [[]]);
    const two = snap([segment(0x9000, 4096)], [[], []]);
    const unsaid = snap([segment(0x9000, 4096)], null);
    expect(runMismatch(one, two)?.evidence[0]).toEqual({ code: 'device-count', before: 1, after: 2 });
    expect(runMismatch(one, unsaid)?.evidence.map(e => e.code)).toEqual(['segments-apart']);
  });
});
