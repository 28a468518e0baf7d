/**
 * Multi-rank sessions read by the engine: real H200 recordings stand in for
 * two ranks (each cell a capture point after an optimizer step), so the
 * figures are real allocator states; only the rank layout is made here.
 */
import * as fs from 'fs';
import * as path from 'path';
import {
  compareRanks,
  decodeLimits,
  formatRankRanges,
  loadRankedSession,
  MAX_WORLD_SIZE,
  rankCount,
  rankFolders,
  rankGrowth,
  rankPoints,
  ranksVerdict,
  SnapshotError,
  totalBytes
} from '..';
import { manifestOf, RECORDINGS } from './data';

const BY_FOLDER: Record<string, string> = {
  rank0: 'clean_training--python', // flat after its first cell
  rank1: 'rnn_hidden_no_detach--python', // +300 MiB per cell until the fix
  rank3: 'clean_training--python'
};

/** A rank folder: the recording's files, its cells labelled as optimizer steps. */
function readFile(folder: string, name: string): Uint8Array {
  const recording = BY_FOLDER[folder];
  if (name === 'manifest.json') {
    const manifest = manifestOf(recording);
    manifest.cells = manifest.cells.map((c, k) => ({ ...c, label: `step ${k + 1}`, step: k + 1 }));
    return new TextEncoder().encode(JSON.stringify({ ...manifest, world_size: 4 }));
  }
  return new Uint8Array(fs.readFileSync(path.join(RECORDINGS, recording, name)));
}

describe('multi-rank sessions', () => {
  it('finds rank folders in rank order and names the ranks it lacks', () => {
    expect(rankFolders(['rank10', 'notes', 'rank2', 'rankx'])).toEqual([
      { rank: 2, folder: 'rank2' },
      { rank: 10, folder: 'rank10' }
    ]);
    const ranked = loadRankedSession(['rank3', 'rank0', 'rank1'], readFile);
    expect(ranked.ranks.map(r => r.rank)).toEqual([0, 1, 3]);
    expect(ranked.worldSize).toBe(4);
    expect(ranked.missing).toEqual([{ first: 2, last: 2 }]);
  });

  it('gives the ranks a big world lacks as runs, and words them so', () => {
    const index = JSON.stringify({ world_size: 1_000_000 });
    const ranked = loadRankedSession(['rank0', 'rank1', 'rank3'], readFile, index);
    expect(ranked.worldSize).toBe(1_000_000);
    expect(ranked.missing).toEqual([
      { first: 2, last: 2 },
      { first: 4, last: 999_999 }
    ]);
    expect(formatRankRanges(ranked.missing)).toBe('2, 4-999,999');
    expect(rankCount(ranked.missing)).toBe(999_997);
  });

  it.each([
    ['a ranks.json world size', ['rank0'], { world_size: 1e9 }, /^ranks\.json: world_size 1,000,000,000 is more ranks/],
    ['a rank folder name', ['rank0', 'rank30000000'], null, /^rank30000000: a rank number past the 1,048,576/],
    [
      'a rank number past 2^53',
      ['rank0', 'rank99999999999999999999'],
      null,
      /^rank99999999999999999999: a rank number past/
    ]
  ])('refuses %s no job has, before reading a snapshot', (_, folders, index, message) => {
    // Before: an array of world-size entries (1e9 crashed V8; 1e20 was "Invalid array length").
    const read = jest.fn(readFile);
    expect(() => loadRankedSession(folders, read, index && JSON.stringify(index))).toThrow(message);
    expect(read).not.toHaveBeenCalled();
  });

  it("refuses a rank's manifest that claims such a world size, naming it", () => {
    const huge = (folder: string, name: string) =>
      name === 'manifest.json'
        ? new TextEncoder().encode(JSON.stringify({ ...manifestOf(BY_FOLDER[folder]), world_size: 5_000_000 }))
        : readFile(folder, name);
    expect(() => loadRankedSession(['rank0'], huge)).toThrow(
      'rank0/manifest.json: world_size 5,000,000 is more ranks than any job runs (at most 1,048,576)'
    );
    expect(MAX_WORLD_SIZE).toBe(1_048_576);
  });

  it('decodes every rank under the limits it is given', () => {
    // Before: the limits were not passed on, so raising one did not help a rank (nor lowering one bind).
    const limits = decodeLimits({ maxEntries: 1 });
    expect(() => loadRankedSession(['rank0'], readFile, null, limits)).toThrow(/^rank0: .*--max-entries 1;/);
  });

  it('refuses a folder with no ranks, and says which rank folder is broken', () => {
    expect(() => loadRankedSession(['data'], readFile)).toThrow(SnapshotError);
    expect(() =>
      loadRankedSession(['rank0', 'rank7'], (folder, name) =>
        folder === 'rank7'
          ? (() => {
              throw new Error('ENOENT');
            })()
          : readFile(folder, name)
      )
    ).toThrow('rank7: no manifest.json');
    // a manifest there that cannot be read says why, as the reader words it (before: "no manifest.json")
    const unreadable = (folder: string, name: string) => {
      if (folder === 'rank3' && name === 'manifest.json') {
        throw new SnapshotError('runs/rank3/manifest.json: is a folder, not a file');
      }
      return readFile(folder, name);
    };
    expect(() => loadRankedSession(['rank0', 'rank3'], unreadable)).toThrow(
      /^runs\/rank3\/manifest\.json: is a folder, not a file$/
    );
  });

  it('refuses a rank folder whose manifest names another rank: a copy compares a rank with itself', () => {
    // Before: `cp -r rank0 rank3` read as "Rank 0 and rank 3 hold the same bytes at every site".
    const copied = (folder: string, name: string) => {
      const bytes = readFile(folder, name);
      if (name !== 'manifest.json') {
        return bytes;
      }
      const manifest = JSON.parse(new TextDecoder().decode(bytes));
      return new TextEncoder().encode(JSON.stringify({ ...manifest, rank: 0 }));
    };
    expect(() => loadRankedSession(['rank0', 'rank3'], copied)).toThrow(
      "rank3/manifest.json says rank 0: each rank's folder holds that rank's own capture (a copy of rank0?)"
    );
    // the rank each says of itself, where it is its folder's, is taken as it was
    const own = (folder: string, name: string) => {
      const bytes = readFile(folder, name);
      if (name !== 'manifest.json') {
        return bytes;
      }
      const manifest = JSON.parse(new TextDecoder().decode(bytes));
      return new TextEncoder().encode(JSON.stringify({ ...manifest, rank: Number(folder.slice(4)) }));
    };
    expect(loadRankedSession(['rank0', 'rank3'], own).ranks.map(r => r.rank)).toEqual([0, 3]);
  });

  it('shares one frame table, so a site is the same id on every rank', () => {
    const ranked = loadRankedSession(['rank0', 'rank3'], readFile);
    const [a, b] = ranked.ranks;
    expect(a.session.frames).toBe(b.session.frames);
    // The same recording on two ranks: nothing differs at any site.
    expect(compareRanks(ranked, 0, 3, 2)).toEqual([]);
  });

  it('measures each rank from step to step: the growing rank, its site, and the flat one', () => {
    const ranked = loadRankedSession(['rank0', 'rank1'], readFile);
    const [flat, growing] = ranked.ranks.map(r => rankGrowth(r));
    const points = rankPoints(ranked.ranks[1]);
    expect(points.map(p => p.allocatedBytes)).toEqual(
      ranked.ranks[1].session.snapshots.map(s => totalBytes(s, 'allocatedBytes'))
    );
    expect(growing.grows).toBe(true);
    expect(growing.steps).toBe(3);
    expect(growing.bytesPerStep).toBe((points[3].allocatedBytes - points[0].allocatedBytes) / 3);
    const site = ranked.frames.frame(growing.sites[0].frameId);
    expect(site.line).toBe(3);
    expect(growing.sites[0].bytesPerStep).toBeGreaterThan(150 * 2 ** 20);
    expect(flat.grows).toBe(false);
    expect(flat.sites).toEqual([]);
  });

  it('says a rank with fewer than two step points is unmeasured, not flat', () => {
    // Before: rank 3 cut to its first point counted as flat ("Every rank is flat from step to step").
    const cut = (folder: string, name: string) => {
      const bytes = readFile(folder, name);
      if (folder !== 'rank3' || name !== 'manifest.json') {
        return bytes;
      }
      const manifest = JSON.parse(new TextDecoder().decode(bytes));
      return new TextEncoder().encode(JSON.stringify({ ...manifest, cells: manifest.cells.slice(0, 1) }));
    };
    const verdictOf = (folders: string[]) =>
      ranksVerdict(loadRankedSession(folders, cut).ranks.map(r => rankGrowth(r)));
    expect(verdictOf(['rank0', 'rank3'])).toEqual({ code: 'all-flat', unmeasured: [3] });
    expect(verdictOf(['rank0', 'rank1', 'rank3'])).toEqual({
      code: 'rank-grows',
      growing: [1],
      flat: [0],
      unmeasured: [3]
    });
    expect(verdictOf(['rank1', 'rank3'])).toEqual({ code: 'all-grow', growing: [1], unmeasured: [3] });
    expect(verdictOf(['rank3'])).toEqual({ code: 'too-few-steps' });
    expect(verdictOf(['rank0', 'rank1'])).toEqual({ code: 'rank-grows', growing: [1], flat: [0], unmeasured: [] });
  });

  it('compares two ranks at a point by site, largest difference first', () => {
    const ranked = loadRankedSession(['rank0', 'rank1'], readFile);
    const sites = compareRanks(ranked, 0, 1, 2);
    const delta = sites.reduce((n, s) => n + s.bBytes - s.aBytes, 0);
    const [a, b] = ranked.ranks.map(r => totalBytes(r.session.snapshots[2], 'allocatedBytes'));
    expect(delta).toBe(b - a);
    expect(Math.abs(sites[0].bBytes - sites[0].aBytes)).toBeGreaterThanOrEqual(
      Math.abs(sites[1].bBytes - sites[1].aBytes)
    );
    expect(() => compareRanks(ranked, 0, 5, 0)).toThrow('no rank 5');
    // points count from 0, their labels from 1: the range says both
    const last = ranked.ranks[0].session.snapshots.length - 1;
    const labels = rankPoints(ranked.ranks[0]).map(p => p.label);
    expect(() => compareRanks(ranked, 0, 1, 9)).toThrow(
      `rank 0 has no capture point 9: its points are 0 (${labels[0]}) to ${last} (${labels[last]})`
    );
  });
});

describe('a DDP job recorded on an H200 (test-data/ranks/ddp_one_gpu)', () => {
  const DDP = path.resolve(RECORDINGS, '../ranks/ddp_one_gpu');
  const ranked = loadRankedSession(
    fs.readdirSync(DDP),
    (folder, name) => new Uint8Array(fs.readFileSync(path.join(DDP, folder, name))),
    fs.readFileSync(path.join(DDP, 'ranks.json'), 'utf-8')
  );

  it("gives each rank's figures as that rank's own torch.cuda.memory_allocated()", () => {
    for (const rank of ranked.ranks) {
      const own = JSON.parse(fs.readFileSync(path.join(DDP, `rank${rank.rank}.allocated.json`), 'utf-8'));
      expect(rankPoints(rank).map(p => p.allocatedBytes)).toEqual(own);
      expect(rankPoints(rank).map(p => p.memoryAllocated)).toEqual(own);
    }
  });

  it('names the rank that keeps 64 MiB a step and the line that allocates it', () => {
    const [flat, growing] = ranked.ranks.map(r => rankGrowth(r));
    expect(flat.grows).toBe(false);
    expect(growing.grows).toBe(true);
    expect(growing.bytesPerStep).toBeCloseTo(64 * 2 ** 20, -5);
    const site = ranked.frames.frame(growing.sites[0].frameId);
    expect([path.basename(site.filename), site.line, site.name]).toEqual(['ranks_cuda_job.py', 40, '_train']);
    expect(growing.sites[0].totalBytes).toBe(4 * 64 * 2 ** 20);
  });
});
