/**
 * What a cell's allocation history adds to its badge's tooltip: what made
 * its peak, and for a cell that ran out of memory, why. Pure, so it is tested
 * without a DOM; its own module, apart from the badge's other words.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import {
  Block,
  CellCodeNames,
  cellSites,
  formatBytes,
  FrameTable,
  ICellSite,
  IOomReport,
  IPeakAnatomy,
  sitesInBrief
} from '../engine';
import { oomAdvice } from '../components/oomwords';
import { siteText } from '../components/stack';

/** How many sites a tooltip names. */
const SITES_NAMED = 3;

/**
 * The largest sites in words, then what they leave out of `total` (by
 * default the sites' sum), so the list adds up to it: `…; 32.0 MiB elsewhere
 * (1 more site)`.
 */
function sitesWords(sites: readonly ICellSite[], trans: TranslationBundle, total?: number): string {
  const brief = sitesInBrief(sites, SITES_NAMED, total);
  const named = brief.sites.map(s => trans.__('%1 from %2', formatBytes(s.bytes), siteText(s, trans)));
  if (brief.rest.sites) {
    named.push(
      trans._n(
        '%2 elsewhere (%1 more site)',
        '%2 elsewhere (%1 more sites)',
        brief.rest.sites,
        formatBytes(brief.rest.bytes)
      )
    );
  } else if (brief.rest.bytes) {
    named.push(trans.__('%1 elsewhere', formatBytes(brief.rest.bytes)));
  }
  return named.join('; ');
}

/**
 * "At peak (808 MiB): 512 MiB from Cell [4], line 2; ...; 8.00 MiB elsewhere
 * (2 more sites)." for a cell whose history says what made its peak.
 * `runOf` gives the cell whose run allocated a block (see SnapshotStore.runsAtPeak).
 */
export function peakLine(
  peak: IPeakAnatomy,
  frames: FrameTable,
  cells: CellCodeNames,
  trans: TranslationBundle,
  runOf?: (b: Block) => string | null
): string | null {
  const sites = cellSites(peak.alive, frames, cells, {}, runOf);
  if (!sites.length) {
    return null;
  }
  const words = sitesWords(sites, trans, peak.bytes);
  return peak.complete
    ? trans.__('At peak (%1): %2.', formatBytes(peak.bytes), words)
    : trans.__('At peak (%1 or more: history lost entries): %2.', formatBytes(peak.bytes), words);
}

/**
 * The OOM post-mortem in a few lines: the request against the free memory, fragmentation, the holders.
 * `runOf` gives the cell whose run allocated a block (see SnapshotStore.runsAtOom).
 */
export function oomLines(
  oom: IOomReport,
  cells: CellCodeNames,
  trans: TranslationBundle,
  runOf?: (b: Block) => string | null
): string[] {
  const unknown = trans.__('an unknown amount');
  const lines = [
    trans.__(
      "It asked for %1 on cuda:%2, with %3 free on the device and %4 free in PyTorch's segments (largest free block %5).",
      oom.requestBytes === null ? unknown : formatBytes(oom.requestBytes),
      oom.device,
      oom.deviceFreeBytes === null ? unknown : formatBytes(oom.deviceFreeBytes),
      formatBytes(oom.segmentFreeBytes),
      formatBytes(oom.largestFreeBlockBytes)
    )
  ];
  const advice = oomAdvice(oom, trans);
  if (advice) {
    lines.push(advice);
  }
  const holders = cellSites(oom.held, oom.atOom.frames, cells, {}, runOf);
  if (holders.length) {
    lines.push(trans.__('The device held: %1.', sitesWords(holders, trans)));
  }
  return lines;
}
