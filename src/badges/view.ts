/**
 * What a cell's badge says, computed from its record: text, colour level and
 * the longer description for the tooltip and screen readers. Pure, so it is
 * tested without a DOM.
 */
import { formatBytes } from '../engine';
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
  options: { oom: boolean; currentKernelSession: number; thresholds?: IBadgeThresholds }
): IBadgeView {
  const t = options.thresholds ?? DEFAULT_THRESHOLDS;
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
  const peak = `${record.peakExact ? '' : '≤ '}${formatBytes(record.peakBytes)}`;
  const text = `${options.oom ? 'OOM ' : ''}${formatBytes(net, true)} · peak ${peak}`;
  const lines = [
    `GPU memory left by this cell: ${formatBytes(net, true)} allocated, ${formatBytes(record.reservedNetBytes, true)} reserved; ` +
      `peak ${peak}; ${formatBytes(record.allocatedBytes)} allocated after it.`
  ];
  lines.push(...roleLines(record));
  if (!record.peakExact) {
    lines.push(
      `The cell stayed under the session's earlier peak of ${formatBytes(record.peakBytes)}: torch's peak counter is ` +
        "left alone so max_memory_allocated() stays yours (setting 'Cell peaks' gives each cell its own)."
    );
  }
  for (const d of record.devices) {
    if (d.device_total !== null && d.device_free !== null) {
      const outside = Math.max(0, d.device_total - d.device_free - d.reserved);
      lines.push(
        `cuda:${d.device}: ${formatBytes(d.allocated)} allocated, ${formatBytes(d.reserved)} reserved, ` +
          `${formatBytes(d.device_free)} free of ${formatBytes(d.device_total)}; ` +
          `${formatBytes(outside)} used outside PyTorch's allocator (CUDA context, other libraries and processes).`
      );
    }
  }
  if (options.oom) {
    lines.unshift('This cell ran out of GPU memory.');
  }
  if (record.replay) {
    lines.push(`Replayed from the recorded session ${record.replay}.`);
  }
  const stale = record.kernelSession !== options.currentKernelSession;
  if (stale) {
    lines.push('From a previous kernel session.');
  }
  return { text, level, description: lines.join('\n'), netBytes: net, peakBytes: record.peakBytes, stale };
}
