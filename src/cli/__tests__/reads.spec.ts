/**
 * @jest-environment node
 */
// What `diff` reads from disk, counted in process: each file once.
import * as path from 'path';
import { run } from '../main';

// The module object the CLI's `import * as fs` reads through, so a spy on it sees the CLI's reads.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs: typeof import('fs') = require('fs');

const DIR = path.resolve(__dirname, '../../../test-data/roles/training_roles--python');

describe('cuda-memdiff diff --by role', () => {
  afterEach(() => jest.restoreAllMocks());

  it("reads the session folder's manifest once, for the cells' names and both files' roles", () => {
    const read = jest.spyOn(fs, 'readFileSync');
    const text = run(['diff', path.join(DIR, 'cell03.pickle.gz'), path.join(DIR, 'cell04.pickle.gz'), '--by', 'role']);
    // The names and the roles both came through: sites by cell, blocks by role.
    expect(text).toMatch(/^\+8\.01 MiB\s+8\.01 MiB\s+0 B\s+6\s+ Cell \[5\], line 2$/m);
    const manifests = read.mock.calls.filter(([file]) => String(file).endsWith('manifest.json'));
    expect(manifests.length).toBe(1);
  });
});
