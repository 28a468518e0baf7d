/**
 * Snapshots back to the formats PyTorch and this project read: the raw
 * `_snapshot()` dict (what `_dump_snapshot()` pickles), and session folders
 * (docs/session-format.md) of one pickle per cell plus a manifest.
 */
import { gzipSync } from 'fflate';
import { holderAnswerJson, IBlockHolders } from './holders';
import { Block, FrameTable, Snapshot } from './model';
import { PyDict, PyValue } from './pickle';
import { pickle } from './pickler';
import { kernelsInOrder } from './retention';
import { BlockRoles } from './roles';
import { IWireDeviceStats } from './wire';

const SMALL_SEGMENT_BYTES = 2 * 2 ** 20;

function framesOf(table: FrameTable, stack: number): PyValue[] {
  return table.stack(stack).map(id => {
    const f = table.frame(id);
    return { name: f.name, filename: f.filename, line: f.line };
  });
}

function blockDict(
  table: FrameTable,
  address: number,
  size: number,
  requested: number,
  state: string,
  stack: number
): PyDict {
  return { address, size, requested_size: requested, state, frames: framesOf(table, stack) };
}

/**
 * The snapshot as the dict torch.cuda.memory._snapshot() returns. Free space
 * the model leaves implicit is written as inactive blocks, so every segment
 * is tiled by its blocks as PyTorch's tools expect. Trace entries are kept.
 */
export function snapshotToRaw(snapshot: Snapshot): PyDict {
  const table = snapshot.frames;
  const bySegment = new Map<number, Block[]>();
  for (const b of snapshot.blocks) {
    const list = bySegment.get(b.segment) ?? [];
    list.push(b);
    bySegment.set(b.segment, list);
  }
  const segments: PyValue[] = snapshot.segments.map((seg, i) => {
    const blocks: PyValue[] = [];
    let cursor = seg.address;
    let allocated = 0;
    let active = 0;
    let requested = 0;
    for (const b of bySegment.get(i) ?? []) {
      if (b.address > cursor) {
        blocks.push(blockDict(table, cursor, b.address - cursor, 0, 'inactive', 0));
      }
      blocks.push(blockDict(table, b.address, b.size, b.requestedSize, b.state, b.stack));
      cursor = Math.max(cursor, b.address + b.size);
      if (b.state !== 'inactive') {
        active += b.size;
        requested += b.requestedSize;
      }
      if (b.state === 'active_allocated') {
        allocated += b.size;
      }
    }
    const end = seg.address + seg.totalSize;
    if (end > cursor) {
      blocks.push(blockDict(table, cursor, end - cursor, 0, 'inactive', 0));
    }
    const pool = seg.pool ? seg.pool.split(',').map(Number) : [0, 0];
    return {
      device: seg.device,
      address: seg.address,
      total_size: seg.totalSize,
      allocated_size: allocated,
      active_size: active,
      requested_size: requested,
      stream: seg.stream,
      // Small-pool segments are 2 MiB; larger ones come from the large pool.
      segment_type: seg.segmentType || (seg.totalSize > SMALL_SEGMENT_BYTES ? 'large' : 'small'),
      segment_pool_id: pool,
      is_expandable: seg.isExpandable,
      frames: framesOf(table, seg.stack),
      blocks
    };
  });
  const deviceCount = snapshot.totals.reduce((n, t) => Math.max(n, t.device + 1), 0);
  const traces: PyValue[][] = Array.from({ length: deviceCount }, () => []);
  for (const e of snapshot.traces) {
    const entry: PyDict = {
      action: e.action,
      size: e.size,
      stream: e.stream,
      time_us: e.timeUs,
      user_metadata: e.userMetadata,
      frames: framesOf(table, e.stack)
    };
    if (e.address !== null) {
      entry.addr = e.address;
    }
    if (e.deviceFree !== null) {
      entry.device_free = e.deviceFree;
    }
    traces[e.device]?.push(entry);
  }
  return { segments, device_traces: traces, allocator_settings: {}, external_annotations: [] };
}

/** The snapshot as a gzip pickle that torch.cuda._memory_viz and this project open. */
export function snapshotToPickle(snapshot: Snapshot, gzip = true): Uint8Array {
  const data = pickle(snapshotToRaw(snapshot));
  return gzip ? gzipSync(data) : data;
}

/** One executed cell of a session to export. */
export interface IExportCell {
  index: number;
  executionCount: number | null;
  source: string;
  cellId: string | null;
  error: string | null;
  snapshot: Snapshot;
  oomSnapshots: Snapshot[];
  /** Allocator statistics the helper sent with the snapshot, when it did. */
  devices: readonly IWireDeviceStats[];
  /**
   * The cell's peak as the helper told it (the store's `peakBytes` and
   * `peakExact`): not exact when torch's peak counters were not reset for the
   * cell and it stayed under the high-water mark, which is then all `bytes` says.
   */
  peak?: { bytes: number; exact: boolean };
  /**
   * The kernel session the cell ran in (the store's `CellRecord.kernelSession`):
   * a change from the cell before is a kernel restart or change.
   */
  kernelSession?: number;
  /** The kernel's roles after the cell (bytes per role), written as the manifest's `roles` when known. */
  roles?: { bytes: Readonly<Record<string, number>>; partial: boolean } | null;
  /**
   * What each block was for after the cell, where the kernel said it
   * (the store's blockRolesOf): written as `cellNN.roles.json`, which the
   * leak finder reads to split a leak by what frees it, as the panel did.
   */
  blockRoles?: BlockRoles | null;
  /**
   * The kernel's answer about who held the blocks after the cell, where it
   * was asked then (the leak finder asks after the latest cell): written as
   * `cellNN.holders.json`, which `cuda-memdiff leaks` reads as the panel did.
   */
  holders?: { holders: IBlockHolders; partial: boolean } | null;
}

/** A roles file's columns (parseBlockRoles reads them): each block of the snapshot the kernel gave a role. */
function blockRolesJson(snapshot: Snapshot, roles: BlockRoles) {
  const named = snapshot.blocks.filter(b => roles.has(b));
  return {
    device: named.map(b => b.device),
    address: named.map(b => b.address),
    role: named.map(b => roles.roleOf(b))
  };
}

/** The allocator statistics of a cell; `peak`, the cell's own as the store holds it, stands for the devices' sum. */
function stats(snapshot: Snapshot, devices: readonly IWireDeviceStats[], peak?: IExportCell['peak']) {
  const perDevice = snapshot.totals.map(t => {
    const d = devices.find(x => x.device === t.device);
    return {
      device: t.device,
      allocated: t.allocatedBytes,
      reserved: t.reservedBytes,
      peak_allocated: d?.peak_allocated ?? t.allocatedBytes,
      peak_reserved: d?.peak_reserved ?? t.reservedBytes,
      device_free: d?.device_free ?? null,
      device_total: d?.device_total ?? null
    };
  });
  const sum = (k: 'allocated' | 'reserved' | 'peak_allocated' | 'peak_reserved') =>
    perDevice.reduce((n, d) => n + d[k], 0);
  return {
    allocated: sum('allocated'),
    reserved: sum('reserved'),
    peak_allocated: peak?.bytes ?? sum('peak_allocated'),
    peak_reserved: sum('peak_reserved'),
    ...(peak ? { peak_exact: peak.exact } : {}),
    per_device: perDevice
  };
}

/** Allocator statistics of a device nothing has touched: before a session's first cell and after a restart. */
function emptyDeviceStats() {
  return { allocated: 0, reserved: 0, peak_allocated: 0, peak_reserved: 0, per_device: [] as unknown[] };
}

/**
 * The files of a session folder: manifest.json and one gzip pickle per cell
 * (and per OOM snapshot, and a holders file per cell the kernel was asked
 * about). Each cell's `kernel_session` is written when known, numbered 1,
 * 2, ... in order as the views name kernels (not the store's own count), and
 * a cell whose kernel differs from the cell before starts from an empty
 * device: the new process holds nothing of the old one's memory.
 */
export function sessionFolderFiles(
  cells: readonly IExportCell[],
  meta: { [key: string]: unknown } = {}
): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let before: ReturnType<typeof stats> | ReturnType<typeof emptyDeviceStats> = emptyDeviceStats();
  let kernel: number | undefined;
  let ooms = 0;
  let untilUs: number | null | undefined; // where the cell before's history ended (undefined: no cell before)
  const kernels = kernelsInOrder(cells.map(cell => cell.kernelSession));
  const manifestCells = cells.map((cell, k) => {
    if (cell.kernelSession !== undefined) {
      if (kernel !== undefined && cell.kernelSession !== kernel) {
        before = emptyDeviceStats();
        untilUs = undefined;
      }
      kernel = cell.kernelSession;
    }
    // A cell's traces are only what the kernel recorded since the capture before it. Said in the manifest where
    // that capture is the cell before in the folder, the reader takes them as the whole stretch between the two;
    // a file alone would look like a ring buffer that wrapped (history lost entries). An OOM capture in between
    // splits the stretch: those cells are left to the file's own reading.
    const history = cell.snapshot.history;
    const linked = history !== undefined && history.sinceUs === (untilUs === undefined ? null : untilUs);
    untilUs = history ? history.untilUs : null;
    const name = `cell${String(k).padStart(2, '0')}.pickle.gz`;
    files.set(name, snapshotToPickle(cell.snapshot));
    let holdersName: string | null = null;
    if (cell.holders) {
      holdersName = `cell${String(k).padStart(2, '0')}.holders.json`;
      const answer = holderAnswerJson(cell.holders.holders, cell.holders.partial);
      files.set(holdersName, new TextEncoder().encode(JSON.stringify(answer)));
    }
    let rolesName: string | null = null;
    if (cell.roles && cell.blockRoles) {
      rolesName = `cell${String(k).padStart(2, '0')}.roles.json`;
      files.set(rolesName, new TextEncoder().encode(JSON.stringify(blockRolesJson(cell.snapshot, cell.blockRoles))));
    }
    const oomFiles = cell.oomSnapshots.map(s => {
      const oomName = `oom${String(ooms++).padStart(2, '0')}.pickle.gz`;
      files.set(oomName, snapshotToPickle(s));
      return oomName;
    });
    const after = stats(cell.snapshot, cell.devices, cell.peak);
    const entry = {
      index: cell.index,
      execution_count: cell.executionCount,
      cell_id: cell.cellId,
      source: cell.source,
      error: cell.error,
      snapshot_file: name,
      oom_snapshots: oomFiles,
      blocks: cell.snapshot.blocks.length,
      segments: cell.snapshot.segments.length,
      ...(cell.kernelSession !== undefined ? { kernel_session: kernels[k] } : {}),
      ...(cell.roles ? { roles: { bytes: cell.roles.bytes, partial: cell.roles.partial } } : {}),
      ...(holdersName ? { holders_file: holdersName } : {}),
      ...(rolesName ? { roles_file: rolesName } : {}),
      ...(linked
        ? { history: { since_us: history.sinceUs, until_us: history.untilUs, complete: history.complete } }
        : {}),
      before,
      after
    };
    before = after;
    return entry;
  });
  const manifest = { ...meta, exported_by: 'jupyterlab-cuda-memdiff', cells: manifestCells };
  files.set('manifest.json', new TextEncoder().encode(JSON.stringify(manifest, null, 1)));
  return files;
}
