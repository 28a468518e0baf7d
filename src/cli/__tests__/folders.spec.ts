/**
 * @jest-environment node
 */
// A refusal about a folder names it once, whatever the folder is called: a
// folder whose name begins another name (`rank` of `ranks.json`, `/a/run1`
// of `/a/run10`) is no folder the message already named.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { namesPlace } from '../files';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const RANKS = path.join(ROOT, 'test-data', 'ranks', 'ddp_one_gpu');

/** The bin run from `cwd`, as a user in that folder runs it; its first line on stderr. */
function refusal(cwd: string, ...args: string[]): string {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf-8', cwd });
  expect(r.status).toBe(2);
  return r.stderr.split('\n')[0];
}

describe('a refusal about a multi-rank folder', () => {
  // A multi-rank folder called `rank`, given by its relative name: every engine message about it starts `rank`.
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-folders-'));
  const dir = path.join(cwd, 'rank');
  for (const r of ['rank0', 'rank1']) {
    fs.cpSync(path.join(RANKS, r), path.join(dir, r), { recursive: true });
  }
  afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

  it('names the folder of a capture point it does not have', () => {
    expect(refusal(cwd, 'diff', 'rank', '--ranks', '0,1', '--point', '9')).toMatch(
      /^cuda-memdiff: rank: rank 0 has no capture point 9: /
    );
  });

  it('names the folder of a broken ranks.json, as a path', () => {
    fs.writeFileSync(path.join(dir, 'ranks.json'), '{');
    try {
      expect(refusal(cwd, 'session', 'rank')).toMatch(
        new RegExp(`^cuda-memdiff: rank\\${path.sep}ranks\\.json is not valid JSON`)
      );
    } finally {
      fs.rmSync(path.join(dir, 'ranks.json'));
    }
  });
});

describe('namesPlace', () => {
  it('takes a message for one about a place only where the place is followed by a separator or ":"', () => {
    expect(namesPlace('/a/run1/rank0/manifest.json: no such file', '/a/run1')).toBe(true);
    expect(namesPlace('/a/run1: no rank 5', '/a/run1/')).toBe(true);
    expect(namesPlace('/a/run10/rank0/manifest.json: no such file', '/a/run1')).toBe(false);
    expect(namesPlace('rank 0 has no capture point 9', 'rank')).toBe(false);
    // A folder given as ./rank: the paths the CLI builds under it are normalized.
    expect(namesPlace('rank/rank0/manifest.json: no such file', './rank')).toBe(true);
  });
});
