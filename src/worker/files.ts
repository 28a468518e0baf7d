/**
 * The engine worker's operations on snapshot files: read a file from the
 * server and parse it once (the page never holds its bytes), or parse bytes
 * the page moved here (a dropped file), and keep the parse (by the id the
 * page gave it) until the page closes it; answer the
 * timeline's questions (what happened at a moment, what changed between two
 * moments) from the trace, which never leaves the worker.
 */
import {
  allocationSite,
  buildTimeline,
  fileOomReport,
  IOomFigures,
  diffSnapshots,
  eventEntry,
  Frame,
  FrameTable,
  groupBySite,
  ISnapshotTransfer,
  ITimeline,
  ITimelineSeries,
  readSnapshot,
  Snapshot,
  snapshotAt,
  timelineSeries,
  toTransfer,
  totalBytes,
  visibleStack
} from '../engine';
import { IFileRequest, IReadProgress, readFileBytes } from './fetch';
import { Transferring, transferring } from './wire';

/** Parsed files by the page's id; a closed file is dropped, so its memory can be freed. */
const opened = new Map<number, { snapshot: Snapshot; timeline: ITimeline | null }>();

/** Files being read, by the page's id: closing one stops its reading. */
const reading = new Map<number, AbortController>();

/** What the page gets back from opening a file. */
export interface IOpenedFile {
  /** Blocks, segments and totals (the trace stays here). */
  readonly snapshot: ISnapshotTransfer;
  readonly traceEntries: number;
  /** The timeline to draw; null when the file carries no allocation events. */
  readonly timeline: ITimelineSeries | null;
  /** The post-mortem of the trace's newest out-of-memory error; null without one. */
  readonly oom: IFileOom | null;
}

/** What a file says about its out-of-memory error, the holders as data for the page to name. */
export interface IFileOom extends IOomFigures {
  /** Whether the file holds the device as it was at the error (its trace has nothing after it there). */
  readonly atError: boolean;
  /** What filled the device, by allocation site, largest first: at most OOM_HOLDERS. */
  readonly holders: readonly { readonly site: Frame | null; readonly bytes: number; readonly blocks: number }[];
}

/** Holders of the device a file's post-mortem sends to the page. */
export const OOM_HOLDERS = 5;

/** The file's post-mortem (fileOomReport), its holders grouped by allocation site. */
function fileOom(snapshot: Snapshot): IFileOom | null {
  const oom = fileOomReport(snapshot);
  if (!oom) {
    return null;
  }
  const bySite = new Map<number, { bytes: number; blocks: number }>();
  for (const b of oom.held) {
    const site = allocationSite(snapshot.frames, b.stack);
    const held = bySite.get(site) ?? { bytes: 0, blocks: 0 };
    held.bytes += b.size;
    held.blocks += 1;
    bySite.set(site, held);
  }
  const holders = [...bySite.entries()]
    .sort((p, q) => q[1].bytes - p[1].bytes)
    .slice(0, OOM_HOLDERS)
    .map(([site, held]) => ({ site: site < 0 ? null : frameOf(snapshot.frames, site), ...held }));
  return {
    device: oom.device,
    requestBytes: oom.requestBytes,
    deviceFreeBytes: oom.deviceFreeBytes,
    segmentFreeBytes: oom.segmentFreeBytes,
    largestFreeBlockBytes: oom.largestFreeBlockBytes,
    fragmentationAdvice: oom.fragmentationAdvice,
    shortBytes: oom.shortBytes,
    heldBytes: oom.heldBytes,
    atError: oom.moment === 'error',
    holders
  };
}

/**
 * Parse snapshot bytes (pickle or JSON, plain or gzip) and keep the result
 * under `id`; the blocks' buffer moves to the page. With `keep` false (a file
 * dropped on the panel, which has no timeline to ask about) nothing is kept
 * and no timeline is built.
 */
export function openSnapshotFile(payload: {
  id: number;
  bytes: Uint8Array;
  width: number;
  keep?: boolean;
}): Transferring<IOpenedFile> {
  const snapshot = readSnapshot(payload.bytes);
  const keep = payload.keep ?? true;
  const timeline = keep ? buildTimeline(snapshot) : null;
  if (keep) {
    opened.set(payload.id, { snapshot, timeline });
  }
  const transfer = toTransfer(snapshot);
  return transferring(
    {
      snapshot: transfer,
      traceEntries: snapshot.traces.length,
      timeline: timeline ? timelineSeries(timeline, payload.width) : null,
      oom: fileOom(snapshot)
    },
    [transfer.blocks.buffer as ArrayBuffer]
  );
}

/** How far opening a file from the server has got: reading (bytes so far, total when known), then parsing. */
export type OpeningProgress = IReadProgress & { readonly phase: 'reading' | 'parsing' };

/**
 * Read the file `request` names from the server, reporting progress, then
 * open it as `openSnapshotFile` does (kept under `id`). Closing `id` while it
 * is read stops the reading.
 */
export async function fetchSnapshotFile(
  payload: { id: number; request: IFileRequest; width: number },
  progress: (value: OpeningProgress) => void = () => undefined
): Promise<Transferring<IOpenedFile>> {
  const abort = new AbortController();
  reading.set(payload.id, abort);
  let bytes: Uint8Array;
  try {
    bytes = await readFileBytes(payload.request, {
      signal: abort.signal,
      progress: p => progress({ ...p, phase: 'reading' })
    });
  } finally {
    reading.delete(payload.id);
  }
  progress({ read: bytes.length, total: bytes.length, phase: 'parsing' });
  return openSnapshotFile({ id: payload.id, bytes, width: payload.width, keep: true });
}

/** Forget a file, or stop reading it; true when it was open or being read. */
export function closeSnapshotFile(payload: { id: number }): boolean {
  const read = reading.get(payload.id);
  read?.abort();
  reading.delete(payload.id);
  return opened.delete(payload.id) || read !== undefined;
}

/**
 * A frame of a moment's stack, as data: the page names it (a notebook
 * cell's frame by its cell, as the panel does), the worker does not word it.
 * `native` counts C++ frames shown as one line.
 */
export type MomentFrame = Frame | { readonly native: number };

/** One moment of the timeline, as the hover shows it. */
export interface IMoment {
  readonly moment: number;
  readonly action: string;
  readonly size: number;
  /** Allocated bytes right after the event. */
  readonly allocatedBytes: number;
  /** The visible frames of the event's stack, innermost first. */
  readonly frames: readonly MomentFrame[];
}

/** The event at `moment` (an event index of the timeline). */
export function describeMoment(payload: { id: number; moment: number }): IMoment | null {
  const { snapshot, timeline } = file(payload.id);
  const entry = timeline && eventEntry(snapshot, timeline, payload.moment);
  if (!timeline || !entry) {
    return null;
  }
  const moment = Math.max(0, Math.min(payload.moment, timeline.events.length - 1));
  return {
    moment,
    action: entry.action,
    size: entry.size,
    allocatedBytes: timeline.bytes[moment],
    frames: stackLines(snapshot.frames, entry.stack)
  };
}

/** An allocation site of a diff between two moments. */
export interface IMomentSite {
  /** The site frame; null for blocks without a Python stack. */
  readonly site: Frame | null;
  readonly frames: readonly MomentFrame[];
  readonly count: number;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
}

/** What changed from one moment to another. */
export interface IMomentDiff {
  readonly from: number;
  readonly to: number;
  readonly fromBytes: number;
  readonly toBytes: number;
  readonly bornBytes: number;
  readonly freedBytes: number;
  readonly netBytes: number;
  /** Sites with the largest change first, at most MOMENT_SITES. */
  readonly sites: readonly IMomentSite[];
  readonly siteCount: number;
}

/** Sites a moment diff sends to the page. */
export const MOMENT_SITES = 20;

/** Diff the blocks alive after event `from` against those alive after event `to`. */
export function diffMoments(payload: { id: number; from: number; to: number }): IMomentDiff {
  const { snapshot, timeline } = file(payload.id);
  if (!timeline) {
    throw new Error('this file carries no allocation events');
  }
  const before = snapshotAt(snapshot, timeline, payload.from);
  const after = snapshotAt(snapshot, timeline, payload.to);
  const diff = diffSnapshots(before, after);
  const groups = groupBySite(diff);
  const table = snapshot.frames;
  return {
    from: payload.from,
    to: payload.to,
    fromBytes: totalBytes(before, 'allocatedBytes'),
    toBytes: totalBytes(after, 'allocatedBytes'),
    bornBytes: diff.bornBytes,
    freedBytes: diff.freedBytes,
    netBytes: diff.netBytes,
    siteCount: groups.length,
    sites: groups.slice(0, MOMENT_SITES).map(g => ({
      site: g.frameId < 0 ? null : frameOf(table, g.frameId),
      frames: stackLines(table, g.stack),
      count: g.count,
      bornBytes: g.bornBytes,
      freedBytes: g.freedBytes,
      netBytes: g.netBytes
    }))
  };
}

function file(id: number): { snapshot: Snapshot; timeline: ITimeline | null } {
  const found = opened.get(id);
  if (!found) {
    throw new Error(`snapshot file ${id} is not open`);
  }
  return found;
}

function frameOf(table: FrameTable, frameId: number): Frame {
  const { filename, line, name } = table.frame(frameId);
  return { filename, line, name };
}

function stackLines(table: FrameTable, stack: number): MomentFrame[] {
  return visibleStack(table, stack).map(e => (e.kind === 'native' ? { native: e.count } : frameOf(table, e.frameId)));
}
