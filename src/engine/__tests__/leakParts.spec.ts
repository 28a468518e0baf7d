/**
 * @jest-environment node
 */
// A leak split by what frees it, on the demo recorded on an H200 with the kernel's holders and roles: the
// finder's headline total must not stand over a fix that frees only part of it, unsaid.
import * as fs from 'fs';
import * as path from 'path';
import {
  adviceText,
  bytesFreedByFixes,
  diffSnapshots,
  findLeaks,
  LeakAdvice,
  loadSession,
  sessionExecutions,
  sessionFolderFiles,
  sessionRoles
} from '..';
import { fixesThatFree, leakParts } from '../leaks/parts';
import { LIVE, readBytes, sessionOf } from './data';

function demoReport(name = 'gpu_memory_demo--holders') {
  const demo = sessionOf(name, LIVE);
  const roles = sessionRoles(demo.manifest, f => readBytes(path.join(LIVE, name, f)));
  return {
    demo,
    report: findLeaks(demo.snapshots, sessionExecutions(demo.manifest), {
      holders: demo.holders[demo.holders.length - 1]!,
      holdersAfter: demo.holders,
      roles: roles.map(r => r?.blocks ?? null)
    })
  };
}

/**
 * Ground truth from the recording's files, not the finder: the blocks the cell made that are still alive
 * after it, by the role its roles file gives them, library workspace (never a leak) left out.
 */
function bornByRole(name: string, execution: number): Map<string, number> {
  const folder = path.join(LIVE, name);
  const demo = sessionOf(name, LIVE);
  const file = JSON.parse(fs.readFileSync(path.join(folder, demo.manifest.cells[execution].roles_file!), 'utf-8'));
  const roleAt = new Map<number, string>(file.address.map((a: number, i: number) => [a, file.role[i]]));
  const born = diffSnapshots(demo.snapshots[execution - 1], demo.snapshots[execution]).born;
  const bytes = new Map<string, number>();
  for (const b of born) {
    const role = roleAt.get(b.address)!;
    if (role !== 'workspace') {
      bytes.set(role, (bytes.get(role) ?? 0) + b.size);
    }
  }
  return bytes;
}

describe('a leak split into parts by what frees them (gpu_memory_demo)', () => {
  const { demo, report } = demoReport();
  const top = report.executions[report.topLeak!];
  const expected = JSON.parse(
    fs.readFileSync(path.join(LIVE, 'gpu_memory_demo--holders', 'manifest.json'), 'utf-8')
  ).expected;

  it('gives each part its bytes and role, adding up to the leak', () => {
    expect(demo.manifest.cells[top.execution].index).toBe(expected.top_leak_cell);
    // What autograd saved, and the outputs `preds` keeps, as the recording's roles file says them.
    const truth = bornByRole('gpu_memory_demo--holders', top.execution);
    expect(top.parts.map(p => [p.role, p.bytes])).toEqual([...truth].sort((a, b) => b[1] - a[1]));
    expect(top.parts.map(p => p.role)).toEqual(['activation', 'user']);
    expect(top.parts.reduce((n, p) => n + p.bytes, 0)).toBe(top.leakedBytes);
  });

  it('says no_grad frees only the saved tensors, and `del preds` all of it', () => {
    const [saved, kept] = top.parts;
    const noGrad = top.fixes.findIndex(a => a.code === 'no-grad');
    const release = top.fixes.findIndex(a => a.code === 'release-kept');
    expect(top.fixes[release]).toEqual({ code: 'release-kept', names: [expected.holder] });
    expect(saved.fixes).toEqual(expect.arrayContaining([noGrad, release]));
    expect(kept.fixes).toEqual([release]);
    const freed = bytesFreedByFixes(top)!;
    expect(freed[noGrad]).toBe(saved.bytes);
    expect(freed[noGrad]).toBeLessThan(top.leakedBytes);
    expect(freed[release]).toBe(top.leakedBytes);
    expect(adviceText(top.fixes[release])).toMatch(/^`del preds` once you are done with the tensors it keeps/);
  });

  it('is the same read from the panel\u2019s export of the session, which carries each block\u2019s role', () => {
    const roles = sessionRoles(demo.manifest, f => readBytes(path.join(LIVE, 'gpu_memory_demo--holders', f)));
    const files = sessionFolderFiles(
      demo.manifest.cells.map((c, k) => ({
        index: c.index,
        executionCount: c.execution_count,
        source: c.source ?? '',
        cellId: null,
        error: null,
        snapshot: demo.snapshots[k],
        oomSnapshots: [],
        devices: [],
        roles: roles[k],
        blockRoles: roles[k]?.blocks ?? null,
        holders: demo.holders[k] ? { holders: demo.holders[k]!, partial: false } : null
      }))
    );
    const exported = loadSession(new TextDecoder().decode(files.get('manifest.json')), f => files.get(f)!);
    const again = findLeaks(exported.snapshots, sessionExecutions(exported.manifest), {
      holders: exported.holders[exported.holders.length - 1]!,
      holdersAfter: exported.holders,
      roles: sessionRoles(exported.manifest, f => files.get(f)!).map(r => r?.blocks ?? null)
    });
    const v = again.executions[again.topLeak!];
    expect([v.execution, v.fixes, v.parts]).toEqual([top.execution, top.fixes, top.parts]);
    expect(bytesFreedByFixes(v)).toEqual(bytesFreedByFixes(top));
  });

  it('needs no "frees" where every fix frees all of a leak (a kept exception frees its graph too)', () => {
    const { report: kept } = demoReport('exception_kept--holders');
    const v = kept.executions[kept.topLeak!];
    expect(v.parts.map(p => p.role).sort()).toEqual(['activation', 'traceback']);
    v.parts.forEach(p => expect(p.fixes).toEqual(v.fixes.map((_, i) => i)));
    expect(bytesFreedByFixes(v)).toBeNull();
  });
});

describe('what a fix is known to free, where roles are partly known', () => {
  const MiB = 2 ** 20;
  const noGrad: LeakAdvice = { code: 'no-grad' };
  const release: LeakAdvice = { code: 'release-kept', names: ['preds'] };
  const stacks: LeakAdvice = { code: 'record-stacks' };

  it('leaves out a fix to the forward pass where every leaked byte is known to be something else', () => {
    const kept = new Map<string | null, number>([['user', 32 * MiB]]);
    // `del preds` then stands alone: not "the other fixes leave them on the GPU", as no other fix is shown
    expect(fixesThatFree(kept, [noGrad, release, stacks])).toEqual([
      { code: 'clear-holder', holders: ['preds'] },
      stacks
    ]);
    expect(fixesThatFree(kept, [{ code: 'drop-exception', names: ['err'] }, release])).toEqual([
      { code: 'drop-exception', names: ['err'] },
      release
    ]);
    // with a byte of no known role, the forward pass may have saved it: the fix stays
    const partly = new Map<string | null, number>([
      ['user', 32 * MiB],
      [null, MiB]
    ]);
    expect(fixesThatFree(partly, [noGrad, release])).toEqual([noGrad, release]);
  });

  it('gives no figures where some of the leak has no known role', () => {
    const fixes = [noGrad, release];
    const known = leakParts(
      new Map<string | null, number>([
        ['activation', 256 * MiB],
        ['user', 32 * MiB]
      ]),
      fixes
    );
    expect(bytesFreedByFixes({ fixes, parts: known, leakedBytes: 288 * MiB })).toEqual([256 * MiB, 288 * MiB]);
    const partly = leakParts(
      new Map<string | null, number>([
        ['activation', 256 * MiB],
        [null, 32 * MiB]
      ]),
      fixes
    );
    // only `del` is known to free the bytes of no known role; no_grad may or may not
    expect(partly.map(p => p.fixes)).toEqual([[0, 1], [1]]);
    expect(bytesFreedByFixes({ fixes, parts: partly, leakedBytes: 288 * MiB })).toBeNull();
  });
});
