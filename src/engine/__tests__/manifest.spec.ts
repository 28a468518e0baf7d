// The manifest's rule (manifest_fields.json) as the engine reads it. The same
// table is the kernel helper's; tests/test_manifest_rule.py holds both readers
// to the same words over hostile manifests made from a recording.
import { insideFolder, quotedValue, readManifest } from '../manifest';

/** The first cell of a manifest of one cell, as read. */
function cellRead(cell: Record<string, unknown>): Record<string, unknown> {
  return (readManifest(JSON.stringify({ cells: [cell] })) as { cells: Record<string, unknown>[] }).cells[0];
}

describe('the manifest rule', () => {
  it('fills in what a cell leaves out and reads null as absent where null is no value', () => {
    const cell = cellRead({ snapshot_file: 'cell00.pickle.gz', error: null, before: null, label: '', history: null });
    expect(cell).toEqual({
      snapshot_file: 'cell00.pickle.gz',
      index: 0,
      execution_count: null,
      source: '',
      error: null
    });
  });

  it("joins nbformat's lines and keeps fields it has no rule for", () => {
    const cell = cellRead({ snapshot_file: 'a', source: ['x = 1\n', 'y'], segments: 3, cell_id: 'c' });
    expect([cell.source, cell.segments, cell.cell_id]).toEqual(['x = 1\ny', 3, 'c']);
  });

  it('names the place and the value found', () => {
    expect(() => cellRead({ snapshot_file: 'a', after: { per_device: [{ allocated: -1 }] } })).toThrow(
      'manifest.json cells[0] after per_device[0] allocated must be a whole number of bytes, not -1'
    );
    expect(() => cellRead({ snapshot_file: 'a', history: { since_us: null, until_us: 2 } })).toThrow(
      'manifest.json cells[0] history has no complete'
    );
    expect(() => readManifest('{"cells": [')).toThrow(/^manifest\.json is not valid JSON \(/);
  });

  it("reads a cell's roles by role, and its roles file as a name inside the folder", () => {
    const roles = { bytes: { parameter: 4096, user: 2.0 }, partial: false, elapsed_ms: 0.8 };
    expect(cellRead({ snapshot_file: 'a', roles, roles_file: 'cell00.roles.json' }).roles).toEqual(roles);
    expect(() => cellRead({ snapshot_file: 'a', roles: { bytes: { weights: 1, 7: 2 } } })).toThrow(
      // Integer keys come first in JavaScript's objects: manifest.py takes keys in the same order.
      'manifest.json cells[0] roles bytes must name only roles, not "7"'
    );
    expect(() => cellRead({ snapshot_file: 'a', roles: { bytes: {}, partial: 'no' } })).toThrow(
      'manifest.json cells[0] roles partial must be true or false, not "no"'
    );
    expect(() => cellRead({ snapshot_file: 'a', roles_file: '../x' })).toThrow(
      'manifest.json cells[0] roles_file must be a name inside the folder, not "../x"'
    );
  });

  it('refuses a per_device chain deeper than the stack in one line', () => {
    const n = 100_000;
    const after = '{"per_device": ['.repeat(n) + '{}' + ']}'.repeat(n);
    expect(() => readManifest(`{"cells": [{"snapshot_file": "a", "after": ${after}}]}`)).toThrow(
      'manifest.json is nested too deep to be a manifest'
    );
  });

  it('quotes values in words Python gives too', () => {
    expect([1.5, 2 ** 70, 1e-7, -3, true, null, [1], {}].map(quotedValue)).toEqual([
      '1.5',
      'a number beyond 2^53',
      'a fraction near 0',
      '-3',
      'true',
      'null',
      'a list',
      'an object'
    ]);
    expect(quotedValue('a"\\\u0007\u{1f600}é')).toBe('"a\\"\\\\??é"');
    expect(quotedValue('x'.repeat(41))).toBe(`"${'x'.repeat(40)}"…`);
  });

  it('takes only names inside the folder', () => {
    expect(['a.pickle', 'sub/a.pickle', 'a..b'].map(insideFolder)).toEqual([true, true, true]);
    expect(
      ['', '../a', 'a/../../b', '/etc/passwd', '\\\\host\\x', 'C:\\x', 'c:x', 5, 'a\0.pickle'].map(insideFolder)
    ).toEqual(Array(9).fill(false));
  });
});
