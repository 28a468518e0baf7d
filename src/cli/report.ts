/**
 * The CLI's two renderings of engine results: JSON for tools (snake_case,
 * bytes as integers) and tables for people (binary units).
 */
import {
  CellCodeNames,
  cellFunction,
  cellOfRun,
  cellSites,
  ICellSite,
  ICellSource,
  fileOomReport,
  IOomPostMortem,
  IOomReport,
  OomSnapshotMoment,
  IPeakAnatomy,
  DeviceTotals,
  formatBytes,
  FragmentationAdvice,
  oomVerdict,
  FrameTable,
  ICellReport,
  IFrameFilterOptions,
  IRunSite,
  ISession,
  ISessionCell,
  kernelsNamed,
  leftOutShares,
  sessionCellName,
  sessionCellNames,
  sitesInBrief,
  sessionCellTag,
  PeakContradiction,
  Snapshot,
  SnapshotDiff,
  StackEntry,
  totalBytes,
  visibleStack
} from '../engine';
import { inKernel } from './runNames';
import { IColumn, ITableNote, printable, renderTable } from './table';

/** The line a table shows where the kernel restarted (`kernel` is the new kernel's number, kernelSessionsOf's). */
export function restartNote(kernel: number): ITableNote {
  return { note: `~~ kernel restarted: kernel ${kernel} starts from an empty device ~~` };
}

/**
 * The columns that name a table's cell: `cell` as the panel names it (`[3]`,
 * the prompt's count, or a capture point's label, `step 4`; see
 * sessionCellTag), then `snapshot`, the cell's snapshot file in the folder,
 * which tells apart cells that show no count and is what `diff` takes
 * (`diff DIR/cell01.pickle.gz DIR/cell02.pickle.gz`). The manifest's `index`
 * (a position in the notebook, counting markdown cells in an export) is
 * only `--json`'s: no command takes it.
 */
export const CELL_COLUMNS: readonly IColumn[] = [{ header: 'cell', right: true }, { header: 'snapshot' }];

/** A row's values for CELL_COLUMNS, from the cell's manifest entry. */
export function cellColumns(cell: ISessionCell): string[] {
  return [printable(sessionCellTag(cell.execution_count, cell.label)), printable(cell.snapshot_file)];
}

/** A frame as JSON; cell frames say which cell when the sources are known. */
type FrameJson =
  | { name: string; filename: string; line: number; cells?: { index: string; execution_count: number | null }[] }
  | { native_frames: number };

export function frameJson(table: FrameTable, entry: StackEntry, cells?: CellCodeNames): FrameJson {
  if (entry.kind === 'native') {
    return { native_frames: entry.count };
  }
  const f = table.frame(entry.frameId);
  const match = cells?.lookup(f.filename);
  return match
    ? {
        name: f.name,
        filename: f.filename,
        line: f.line,
        cells: match.cells.map(c => ({ index: c.id, execution_count: c.executionCount ?? null }))
      }
    : { name: f.name, filename: f.filename, line: f.line };
}

export function siteJson(table: FrameTable, frameId: number) {
  if (frameId < 0) {
    return null;
  }
  const f = table.frame(frameId);
  return { filename: f.filename, line: f.line, name: f.name };
}

/** The cells of a session folder's manifest (`session.sourceCells`) by their code names, as frames name them. */
export function sessionCells(cells: readonly ISessionCell[]): CellCodeNames {
  return sessionCellNames(cells);
}

/**
 * An allocation site in words: `Cell [3], line 3` for a frame of a cell the
 * session's manifest has (as the peak lines say it), else `file:line name`.
 * Of copies of one cell's code, the frame names ``run`` (the manifest index of
 * the cell whose run allocated, see BlockBirths) where it is one of them;
 * where it is not, or unknown, every copy (`Cell [3], line 3 or Cell [5], line 3`).
 */
export function siteLabel(table: FrameTable, frameId: number, cells?: CellCodeNames, run?: string): string {
  if (frameId < 0) {
    return '(no Python stack)';
  }
  const f = table.frame(frameId);
  const copies = cells?.lookup(f.filename)?.cells;
  if (copies) {
    const own = cellOfRun(copies, run);
    return copiesPlace(own ? [own] : copies, f.line, cellFunction(f.name));
  }
  return printable(`${f.filename}:${f.line} ${f.name}`);
}

/** JSON for one allocation-site group. */
export function groupJson(table: FrameTable, group: IRunSite, options: IFrameFilterOptions, cells?: CellCodeNames) {
  return {
    site: siteJson(table, group.frameId),
    // Only where the site's code is several cells': the manifest index of the cell whose run allocated the blocks.
    ...(group.run === undefined ? {} : { run: Number(group.run) }),
    count: group.count,
    born_count: group.bornCount,
    freed_count: group.freedCount,
    born_bytes: group.bornBytes,
    freed_bytes: group.freedBytes,
    net_bytes: group.netBytes,
    stacks: group.stackCount,
    frames: visibleStack(table, group.stack, options).map(e => frameJson(table, e, cells))
  };
}

function deviceJson(t: DeviceTotals) {
  return {
    device: t.device,
    allocated_bytes: t.allocatedBytes,
    reserved_bytes: t.reservedBytes,
    active_bytes: t.activeBytes,
    inactive_bytes: t.inactiveBytes,
    largest_free_bytes: t.largestFreeBytes,
    active_blocks: t.activeBlocks,
    allocated_blocks: t.allocatedBlocks,
    segments: t.segments
  };
}

/** `summary --json`. */
export function summaryJson(snapshot: Snapshot) {
  return {
    allocated_bytes: totalBytes(snapshot, 'allocatedBytes'),
    reserved_bytes: totalBytes(snapshot, 'reservedBytes'),
    // Every block of the segments, free ones included (as it always was: tools read it so).
    blocks: snapshot.blocks.length,
    // The blocks in use, the table's `allocated blocks` (the devices' allocated_blocks summed).
    allocated_blocks: snapshot.totals.reduce((n, t) => n + t.allocatedBlocks, 0),
    trace_entries: snapshot.traces.length,
    oom_entries: snapshot.traces.filter(e => e.action === 'oom').length,
    devices: snapshot.totals.map(deviceJson),
    oom: oomOfFile(snapshot)
  };
}

/** `summary --json`'s `oom`: the post-mortem of the trace's newest `oom` entry (null without one). */
function oomOfFile(snapshot: Snapshot) {
  const oom = fileOomReport(snapshot);
  return oom ? { ...oomJson(oom), device: oom.device, written_at_error: oom.moment === 'error' } : null;
}

/** `summary` for people. */
export function summaryText(snapshot: Snapshot): string {
  const rows = snapshot.totals.map(t => [
    `cuda:${t.device}`,
    formatBytes(t.allocatedBytes),
    formatBytes(t.reservedBytes),
    formatBytes(t.inactiveBytes),
    formatBytes(t.largestFreeBytes),
    String(t.allocatedBlocks),
    String(t.segments)
  ]);
  const table = renderTable(
    [
      { header: 'device' },
      { header: 'allocated', right: true },
      { header: 'reserved', right: true },
      { header: 'free in segments', right: true },
      { header: 'largest free', right: true },
      // Blocks in use: --json's top-level `blocks` counts the free blocks of the segments too.
      { header: 'allocated blocks', right: true },
      { header: 'segments', right: true }
    ],
    rows,
    undefined,
    'devices'
  );
  const ooms = snapshot.traces.filter(e => e.action === 'oom').length;
  const oom = fileOomReport(snapshot);
  const postMortem = oom ? `\n\n${oomText('the program', oom, snapshot.frames, new CellCodeNames([]), {})}` : '';
  return rows.length
    ? table + (ooms ? `\n${countText(ooms, 'out-of-memory event')} in the trace` : '') + postMortem
    : 'no CUDA memory: the snapshot has no segments';
}

/** `diff --json`. */
export function diffJson(
  diff: SnapshotDiff,
  groups: readonly IRunSite[],
  options: IFrameFilterOptions,
  cells?: CellCodeNames
) {
  return {
    born_bytes: diff.bornBytes,
    freed_bytes: diff.freedBytes,
    net_bytes: diff.netBytes,
    born_blocks: diff.born.length,
    freed_blocks: diff.freed.length,
    kept_blocks: diff.keptCount,
    kept_bytes: diff.keptBytes,
    devices: diff.devices.map(d => ({
      device: d.device,
      born_bytes: d.bornBytes,
      freed_bytes: d.freedBytes,
      net_bytes: d.netBytes
    })),
    groups: groups.map(g => groupJson(diff.frames, g, options, cells))
  };
}

/** The columns of a table of changes: net, born, freed, blocks, then what changed (`what`). */
export function changeColumns(what: string): IColumn[] {
  return [
    { header: 'net', right: true },
    { header: 'born', right: true },
    { header: 'freed', right: true },
    { header: 'blocks', right: true },
    { header: what }
  ];
}

/** A row of a table of changes. */
export function changeRow(
  c: { netBytes: number; bornBytes: number; freedBytes: number; count: number },
  what: string
): string[] {
  return [formatBytes(c.netBytes, true), formatBytes(c.bornBytes), formatBytes(c.freedBytes), String(c.count), what];
}

/** `1 block`, `3 blocks`: a count and its noun, plural but for one. */
export function countText(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `1 block`, `3 blocks`. */
export function blocksText(n: number): string {
  return countText(n, 'block');
}

/**
 * The line every `diff` opens with, by site or by role: what was born, then
 * freed, then the net of the two, as the panel's diff says it.
 */
export function diffHeadText(diff: SnapshotDiff): string {
  return (
    `born ${formatBytes(diff.bornBytes)} in ${blocksText(diff.born.length)}, ` +
    `freed ${formatBytes(diff.freedBytes)} in ${blocksText(diff.freed.length)}, ` +
    `net ${formatBytes(diff.netBytes, true)} (${blocksText(diff.keptCount)} kept)`
  );
}

/**
 * `diff` for people: a summary line, the groups, and the stack of each; a site in a cell of `cells` is
 * named as `session` names it (see siteLabel for a group's `run`).
 */
export function diffText(
  diff: SnapshotDiff,
  groups: readonly IRunSite[],
  options: IFrameFilterOptions,
  cells?: CellCodeNames
): string {
  const table = diff.frames;
  const head = diffHeadText(diff);
  if (!groups.length) {
    return `${head}\nno allocated block changed`;
  }
  const rows = groups.map(g => changeRow(g, siteLabel(table, g.frameId, cells, g.run)));
  const parts = [head, '', renderTable(changeColumns('allocation site'), rows, undefined, 'allocation sites')];
  for (const g of groups.slice(0, 10)) {
    parts.push('', `${formatBytes(g.netBytes, true)} at ${siteLabel(table, g.frameId, cells, g.run)}`);
    for (const e of visibleStack(table, g.stack, options)) {
      if (e.kind === 'native') {
        parts.push(`    [${countText(e.count, 'C++ frame')}]`);
      } else {
        const f = table.frame(e.frameId);
        parts.push(`    ${printable(`${f.filename}:${f.line} in ${f.name}`)}`);
      }
    }
  }
  return parts.join('\n');
}

/**
 * A cell site as JSON: the manifest index of the allocating cell (null outside cells, and where several cells
 * have that code and which of them allocated is unknown: `copies` lists them) and the line in it.
 */
function cellSiteJson(site: ICellSite) {
  return {
    cell: site.cell && !site.sameSource ? Number(site.cell.id) : null,
    ...(site.sameSource ? { copies: site.sameSource.map(c => Number(c.id)) } : {}),
    line: site.line,
    filename: site.filename,
    bytes: site.bytes
  };
}

/**
 * The `peak` object of `session --json`: the allocated total at the peak (torch's own figure when the
 * manifest has it; the replayed history's can differ by a few KiB) and what was alive then, by cell and line.
 */
export function peakJson(peak: IPeakAnatomy, recorded: number | null, sites: readonly ICellSite[]) {
  return {
    bytes: recorded ?? peak.bytes,
    sites: sites.map(cellSiteJson)
  };
}

/**
 * `exact: false` where the peak's bytes are only torch's high-water mark (see peakWords); `complete: false`
 * where the history lost entries, so the sites do not add up to the peak ("or more" in the text); nothing
 * otherwise.
 */
function exactJson(r: ICellReport) {
  return { ...(r.peakExact ? {} : { exact: false }), ...(r.peak?.complete === false ? { complete: false } : {}) };
}

/** The `oom` object of `session --json` (the holders are in the text output). */
export function oomJson(oom: IOomPostMortem) {
  return {
    request_bytes: oom.requestBytes,
    device_free_bytes: oom.deviceFreeBytes,
    largest_free_block_bytes: oom.largestFreeBlockBytes,
    segment_free_bytes: oom.segmentFreeBytes,
    fragmentation: oom.fragmentation,
    short_bytes: oom.shortBytes
  };
}

/** Where a cell site is, in words: `Cell [5], line 3`, `Cell [3], line 3 or Cell [5], line 3` (copies), or `file.py:12`. */
export function cellSiteLabel(site: ICellSite): string {
  if (site.cell) {
    return copiesPlace(site.sameSource ?? [site.cell], site.line, site.function);
  }
  // The file's name is data: a newline in it must not start a line of the report.
  return site.line === null ? '(no Python stack)' : `${printable(site.filename)}:${site.line}`;
}

/**
 * `Cell [5], line 3`, or `train_step (Cell [5], line 3)` for a function the cell defined (see sessionCells);
 * copies of one cell's code whose run is not known are each named, joined by "or".
 */
function copiesPlace(copies: readonly ICellSource[], line: number | null, fn: string | null): string {
  const place = copies
    .map(cell => `${sessionCellName(Number(cell.id), cell.executionCount)}, line ${line ?? '?'}`)
    .join(' or ');
  // A function the cell defined runs when any cell calls it: the place is where its code is, not when it ran.
  return fn ? `${printable(fn)} (${place})` : place;
}

/** Most sites a list in words names; the rest are summed as one more item. */
const SITES_IN_WORDS = 3;

/** `2 more sites`: what a cut list of sites says of the sites it does not name. */
export function moreSitesText(count: number): string {
  return countText(count, 'more site');
}

/**
 * `321 MiB from Cell [3], line 3, ...`, and what the named sites leave out (of `total`, by default their sum),
 * so the list adds up to its total.
 */
function sitesInWords(sites: readonly ICellSite[], total?: number): string {
  const brief = sitesInBrief(sites, SITES_IN_WORDS, total);
  const named = brief.sites.map(site => `${formatBytes(site.bytes)} from ${cellSiteLabel(site)}`);
  if (brief.rest.sites) {
    named.push(`${formatBytes(brief.rest.bytes)} from ${moreSitesText(brief.rest.sites)}`);
  } else if (brief.rest.bytes) {
    named.push(`${formatBytes(brief.rest.bytes)} no site accounts for`);
  }
  return named.join(', ');
}

/** What the post-mortem says about fragmentation, by the engine's advice. */
const FRAGMENTATION_WORDS: Record<FragmentationAdvice, string> = {
  'enable-expandable-segments':
    '  fragmentation: the free space in segments would fit the request, but no free block is big enough; ' +
    'try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True',
  'expandable-segments-on':
    '  fragmentation: the free space in segments would fit the request, but no free block is big enough; ' +
    'expandable segments are already on, so that setting will not help'
};

/** Where the figures after the error are of a later moment: what the text says of the segments and holders. */
const OOM_LATER: Partial<Record<OomSnapshotMoment, { segments: string; holders: string }>> = {
  'cell-end': { segments: 'after the cell (no snapshot was taken at the error)', holders: 'after the cell' },
  'after-error': {
    segments: 'when the file was written (after the error: the trace goes on)',
    holders: 'when the file was written'
  }
};

/** The OOM post-mortem in words; a cell's (with its diff) says what changed since the cell started. */
export function oomText(
  name: string,
  oom: IOomPostMortem | IOomReport,
  table: FrameTable,
  cells: CellCodeNames,
  options: IFrameFilterOptions,
  held: readonly ICellSite[] = cellSites(oom.held, table, cells, options)
): string {
  const free = oom.deviceFreeBytes === null ? 'an unknown amount' : formatBytes(oom.deviceFreeBytes);
  const asked = oom.requestBytes === null ? 'an unknown amount' : formatBytes(oom.requestBytes);
  const segments = `${formatBytes(oom.segmentFreeBytes)} free (largest free block ${formatBytes(oom.largestFreeBlockBytes)})`;
  // Without a snapshot at the error, the segments and holders are of a later moment: say which.
  const later = OOM_LATER[oom.moment];
  const lines = [
    `${name} ran out of memory on cuda:${oom.device}: it asked for ${asked}; ` +
      `the device had ${free} free, and ` +
      (later ? `${later.segments} PyTorch's segments had ${segments}` : `PyTorch's segments ${segments}`)
  ];
  const verdict = oomVerdict(oom);
  if (verdict?.kind === 'fragmentation') {
    lines.push(FRAGMENTATION_WORDS[verdict.setting]);
  } else if (verdict?.kind === 'short') {
    const short = `  not fragmentation: the request is ${formatBytes(verdict.bytes)} more than all the free memory together`;
    lines.push(
      verdict.beyondProcess
        ? `${short}, more than this process's tensors held (${formatBytes(oom.heldBytes)}): ` +
            "other processes, or memory outside PyTorch's allocator, filled the device"
        : `${short}, and torch.cuda.empty_cache() cannot help (PyTorch empties its cache before it gives up); ` +
            'free what filled the device, or ask for less (a smaller batch, shorter sequences)'
    );
  }
  if (held.length) {
    lines.push(`  the device held${later ? ` ${later.holders}` : ''}: ${sitesInWords(held)}`);
  }
  if ('diff' in oom) {
    lines.push(
      `  since the cell started: born ${formatBytes(oom.diff.bornBytes)}, freed ${formatBytes(oom.diff.freedBytes)}`
    );
  }
  return lines.join('\n');
}
/**
 * `left_out_before`, only on a cell with cells left out just before it (their
 * snapshot could not be read): its change counts theirs too. With `evidence`
 * (a leak's), each says the bytes of it made while that cell ran.
 */
export function leftOutJson(
  session: ISession,
  k: number,
  evidence: readonly { readonly stack: number; readonly bytes: number }[] | null = null
): { left_out_before?: { index: number; execution_count: number | null; leaked_bytes?: number }[] } {
  const shares = leftOutShares(session, k, evidence ?? []);
  if (!shares.length) {
    return {};
  }
  return {
    left_out_before: shares.map(s => ({
      index: session.sourceCells[s.position].index,
      execution_count: session.sourceCells[s.position].execution_count,
      ...(evidence ? { leaked_bytes: s.bytes } : {})
    }))
  };
}

/** `session --json`; `entries` are the manifest's cells of the reports (`session.manifest.cells`). */
export function sessionJson(
  reports: ICellReport[],
  entries: readonly ISessionCell[],
  table: FrameTable,
  options: IFrameFilterOptions,
  cells: CellCodeNames
) {
  return {
    cells: reports.map((r, k) => ({
      index: r.index,
      snapshot_file: entries[k].snapshot_file,
      execution_count: r.executionCount,
      // Only on a labelled cell (a capture point's `step 4`): a notebook session keeps the shape tools read.
      ...(r.label === null ? {} : { label: r.label }),
      kernel_session: r.kernelSession,
      after_restart: r.afterRestart,
      allocated_bytes: r.allocatedBytes,
      reserved_bytes: r.reservedBytes,
      net_bytes: r.netBytes,
      peak_bytes: r.peakBytes,
      born_bytes: r.bornBytes,
      freed_bytes: r.freedBytes,
      error: r.error,
      // An object for a cell that ran out of memory with a known request (OOM snapshot or history); true/false otherwise.
      oom: r.oomReport ? oomJson(r.oomReport) : r.oom,
      peak: r.peak ? { ...peakJson(r.peak, r.peakBytes, r.peakSites ?? []), ...exactJson(r) } : null,
      // Only where the cell's history contradicts its snapshots: why `peak` is null.
      ...(r.peakContradiction ? { peak_contradiction: r.peakContradiction } : {}),
      top_sites: r.sites.map(g => groupJson(table, g, options, cells))
    }))
  };
}

/**
 * `session` for people: the table, then each cell's peak and out-of-memory
 * error in words; `entries` are the manifest's cells of the reports. Where
 * the session spans kernels, each cell is named with its kernel
 * (`Cell [1] in kernel 2`): each kernel counts its runs from 1 again.
 */
export function sessionText(
  reports: ICellReport[],
  entries: readonly ISessionCell[],
  table: FrameTable,
  cells?: CellCodeNames,
  options: IFrameFilterOptions = {}
): string {
  const parts = [sessionTable(reports, entries, table, cells)];
  const kernels = kernelsNamed(reports.map(r => r.kernelSession));
  for (const [k, r] of reports.entries()) {
    const name = inKernel(printable(sessionCellName(r.index, r.executionCount, r.label)), kernels[k]);
    if (r.oomReport && cells) {
      parts.push('', oomText(name, r.oomReport, table, cells, options, r.oomSites ?? undefined));
    }
    const gap = parts.length > 1 && !r.oomReport ? '' : '\n';
    if (r.peak && r.peak.bytes > 0 && cells) {
      parts.push(
        `${gap}${name} peak ${peakWords(r, r.peak)}` +
          `${r.peak.complete ? '' : ' or more (history lost entries)'}: ${sitesInWords(r.peakSites ?? [], r.peak.bytes)}`
      );
    } else if (r.peakContradiction) {
      const figure = r.peakBytes === null ? '' : ` ${r.peakExact ? '' : '≤'}${formatBytes(r.peakBytes)}`;
      parts.push(`${gap}${name} peak${figure}: not broken down: ${PEAK_CONTRADICTION_TEXT[r.peakContradiction]}`);
    }
  }
  return parts.join('\n');
}

/** Why a cell's history gives no peak anatomy, in words. */
const PEAK_CONTRADICTION_TEXT: { [K in PeakContradiction]: string } = {
  'not-this-snapshot':
    'its allocation history ends holding blocks the snapshot after the cell does not (a history of another session or device?)',
  'above-recorded': "its allocation history lost entries and replays to a peak above torch's own figure for the cell"
};

/**
 * A cell's peak in words: torch's figure, or, where its peak counter was not reset for the cell (an export of a
 * passive session), the replayed history's, with the counter's high-water mark as the bound it gives.
 */
function peakWords(r: ICellReport, peak: IPeakAnatomy): string {
  if (r.peakBytes === null || r.peakExact) {
    return formatBytes(r.peakBytes ?? peak.bytes);
  }
  const bound = `torch's peak counter, not reset for the cell, says at most ${formatBytes(r.peakBytes)}`;
  return peak.complete ? `${formatBytes(peak.bytes)} (${bound})` : `at most ${formatBytes(r.peakBytes)} (${bound})`;
}

/** One row per executed cell, a line where the kernel restarted. */
function sessionTable(
  reports: ICellReport[],
  entries: readonly ISessionCell[],
  table: FrameTable,
  cells?: CellCodeNames
): string {
  const rows: (string[] | ITableNote)[] = [];
  reports.forEach((r, k) => {
    if (r.afterRestart) {
      rows.push(restartNote(r.kernelSession));
    }
    rows.push([
      ...cellColumns(entries[k]),
      formatBytes(r.allocatedBytes),
      // what the cache holds beside it: a cell that frees all it allocated may leave its segments reserved
      formatBytes(r.reservedBytes),
      formatBytes(r.netBytes, true),
      r.peakBytes === null ? '' : `${r.peakExact ? '' : '≤'}${formatBytes(r.peakBytes)}`,
      formatBytes(r.bornBytes),
      formatBytes(r.freedBytes),
      (r.oom ? 'OOM ' : '') + (r.sites.length ? siteLabel(table, r.sites[0].frameId, cells, r.sites[0].run) : '')
    ]);
  });
  return renderTable(
    [
      ...CELL_COLUMNS,
      { header: 'allocated', right: true },
      { header: 'reserved', right: true },
      { header: 'net', right: true },
      { header: 'peak', right: true },
      { header: 'born', right: true },
      { header: 'freed', right: true },
      { header: 'top site' }
    ],
    rows,
    undefined,
    'cells'
  );
}
