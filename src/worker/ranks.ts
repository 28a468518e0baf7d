/**
 * The engine worker's operations on multi-rank sessions: load the ranks' files
 * once (they stay in the worker), then answer with plain figures: points,
 * growth, the verdict and two-rank comparisons, with sites as text.
 */
import {
  compareRanks,
  IRankedSession,
  IRankRange,
  loadRankedSession,
  rankGrowth,
  rankPoints,
  RANKS_INDEX,
  RanksVerdict,
  ranksVerdict
} from '../engine';

/** A file of the multi-rank folder: its path inside the folder (`rank0/manifest.json`) and bytes. */
export interface IRankFile {
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** Where memory was allocated, as the views show it. */
export interface ISiteSummary {
  readonly filename: string;
  readonly line: number;
  readonly name: string;
}

export interface IRanksSummary {
  readonly id: number;
  readonly worldSize: number;
  readonly missing: readonly IRankRange[];
  readonly ranks: readonly {
    readonly rank: number;
    readonly host: string | null;
    readonly points: readonly {
      label: string;
      step: number | null;
      allocatedBytes: number;
      memoryAllocated: number | null;
    }[];
    readonly growth: {
      readonly steps: number;
      readonly bytesPerStep: number;
      readonly grows: boolean;
      readonly sites: readonly (ISiteSummary & { bytesPerStep: number })[];
    };
  }[];
  readonly verdict: RanksVerdict;
}

const loaded = new Map<number, IRankedSession>();
let lastId = 0;

function site(ranked: IRankedSession, frameId: number): ISiteSummary {
  if (frameId < 0) {
    return { filename: '', line: 0, name: '' };
  }
  const f = ranked.frames.frame(frameId);
  return { filename: f.filename, line: f.line, name: f.name };
}

/** Read a multi-rank folder's files; the session stays here under the returned id. */
export function loadRanks(files: readonly IRankFile[]): IRanksSummary {
  const byPath = new Map(files.map(f => [f.path, f.bytes]));
  const folders = [...new Set(files.map(f => f.path.split('/')[0]).filter(p => /^rank\d+$/.test(p)))];
  const index = byPath.get(RANKS_INDEX);
  const ranked = loadRankedSession(
    folders,
    (folder, name) => {
      const bytes = byPath.get(`${folder}/${name}`);
      if (!bytes) {
        throw new Error(`${folder}/${name} was not read`);
      }
      return bytes;
    },
    index ? new TextDecoder().decode(index) : null
  );
  const id = ++lastId;
  loaded.set(id, ranked);
  const growth = ranked.ranks.map(r => rankGrowth(r));
  return {
    id,
    worldSize: ranked.worldSize,
    missing: ranked.missing,
    ranks: ranked.ranks.map((r, i) => ({
      rank: r.rank,
      host: r.host,
      points: rankPoints(r).map(p => ({
        label: p.label,
        step: p.step,
        allocatedBytes: p.allocatedBytes,
        memoryAllocated: p.memoryAllocated
      })),
      growth: {
        steps: growth[i].steps,
        bytesPerStep: growth[i].bytesPerStep,
        grows: growth[i].grows,
        sites: growth[i].sites.map(s => ({ ...site(ranked, s.frameId), bytesPerStep: s.bytesPerStep }))
      }
    })),
    verdict: ranksVerdict(growth)
  };
}

/** Two ranks of a loaded session at one capture point, by site. */
export function compareLoadedRanks(payload: { id: number; a: number; b: number; point: number }) {
  const ranked = loaded.get(payload.id);
  if (!ranked) {
    throw new Error('that multi-rank session was closed');
  }
  return compareRanks(ranked, payload.a, payload.b, payload.point).map(s => ({
    ...site(ranked, s.frameId),
    aBytes: s.aBytes,
    bBytes: s.bBytes
  }));
}

/** Forget a loaded session. */
export function closeRanks(id: number): void {
  loaded.delete(id);
}
