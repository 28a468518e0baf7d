/**
 * What a cell's badge says, computed from its record: text, colour level and
 * the longer description for the tooltip and screen readers. Pure, so it is
 * tested without a DOM.
 */
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { formatBytes, IRoleMove } from '../engine';
import { IRecordingAbout } from '../capture/protocol';
import { recordingDetail, recordingName } from '../capture/status';
import { CellRecord } from '../capture/store';
import { roleLines } from './roles';

/** Allocated change above which a badge warns, and above which it alarms. */
export interface IBadgeThresholds {
  warnBytes: number;
  dangerBytes: number;
}

export const DEFAULT_THRESHOLDS: IBadgeThresholds = {
  warnBytes: 256 * 2 ** 20,
  dangerBytes: 2 * 2 ** 30
};

/** The badge for one cell. */
export interface IBadgeView {
  text: string;
  level: 'freed' | 'flat' | 'grew' | 'warn' | 'danger' | 'oom';
  description: string;
  netBytes: number;
  peakBytes: number;
  /** From a kernel session before the current one (dimmed). */
  stale: boolean;
}

/** The badge of a record; `oom` when the cell's execution ran out of memory. */
export function badgeView(
  record: CellRecord,
  options: {
    oom: boolean;
    currentKernelSession: number;
    thresholds?: IBadgeThresholds;
    trans?: TranslationBundle;
    /** What the replayed recording says of itself, where the record is one of its cells. */
    recording?: IRecordingAbout | null;
    /** Blocks allocated earlier that changed role during the cell (the store's roleMovesOf). */
    roleMoves?: readonly IRoleMove[] | null;
  }
): IBadgeView {
  const t = options.thresholds ?? DEFAULT_THRESHOLDS;
  const trans = options.trans ?? nullTranslator.load('jupyterlab_cuda_memdiff');
  const net = record.netBytes;
  const level: IBadgeView['level'] = options.oom
    ? 'oom'
    : net >= t.dangerBytes
      ? 'danger'
      : net >= t.warnBytes
        ? 'warn'
        : net > 0
          ? 'grew'
          : net < 0
            ? 'freed'
            : 'flat';
  const peak = record.peakExact ? formatBytes(record.peakBytes) : trans.__('≤ %1', formatBytes(record.peakBytes));
  const text = options.oom
    ? trans.__('OOM %1 · peak %2', formatBytes(net, true), peak)
    : trans.__('%1 · peak %2', formatBytes(net, true), peak);
  const lines = [
    trans.__(
      'GPU memory left by this cell: %1 allocated, %2 reserved; %3 allocated after it.',
      formatBytes(net, true),
      formatBytes(record.reservedNetBytes, true),
      formatBytes(record.allocatedBytes)
    ),
    // The peak is the device's total, not the cell's own rise: a harmless cell after a big one shows a big peak.
    trans.__(
      "Peak %1: all memory allocated at the cell's highest moment, what earlier cells keep included (torch.cuda.max_memory_allocated()).",
      peak
    )
  ];
  lines.push(...roleLines(record, options.roleMoves ?? null));
  if (!record.peakExact) {
    lines.push(
      trans.__(
        "The cell stayed under the session's earlier peak of %1: torch's peak counter is left alone so max_memory_allocated() stays yours (setting 'Cell peaks' gives each cell its own).",
        formatBytes(record.peakBytes)
      )
    );
  }
  for (const d of record.devices) {
    if (d.device_total !== null && d.device_free !== null) {
      const outside = Math.max(0, d.device_total - d.device_free - d.reserved);
      lines.push(
        trans.__(
          "cuda:%1: %2 allocated, %3 reserved, %4 free of %5; %6 used outside PyTorch's allocator (CUDA context, other libraries and processes).",
          d.device,
          formatBytes(d.allocated),
          formatBytes(d.reserved),
          formatBytes(d.device_free),
          formatBytes(d.device_total),
          formatBytes(outside)
        )
      );
    }
  }
  if (options.oom) {
    lines.unshift(trans.__('This cell ran out of GPU memory.'));
  }
  if (record.replay) {
    lines.push(
      trans.__(
        'Replayed from %1. %2',
        recordingName(options.recording, trans),
        recordingDetail(options.recording, record.replay, trans)
      )
    );
  }
  const stale = record.kernelSession !== options.currentKernelSession;
  if (stale) {
    lines.push(trans.__('From a previous kernel session.'));
  }
  return { text, level, description: lines.join('\n'), netBytes: net, peakBytes: record.peakBytes, stale };
}
