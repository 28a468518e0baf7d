/**
 * What a cell's allocation history adds to its badge's tooltip: what made
 * its peak, and for a cell that ran out of memory, why. Pure, so it is tested
 * without a DOM; its own module, apart from the badge's other words.
 */
import {
  CellCodeNames,
  cellSites,
  cellTag,
  formatBytes,
  FragmentationAdvice,
  FrameTable,
  ICellSite,
  IOomReport,
  IPeakAnatomy
} from '../engine';

/** How many sites a tooltip names. */
const SITES_NAMED = 3;

/** A site in words: `Cell [4], line 3`, or `file.py:12` outside the notebook. */
export function siteWords(site: ICellSite): string {
  if (site.cell) {
    // Copies of one cell share its code name: say each, the frame cannot tell which ran it.
    const counts = (site.sameSource ?? [site.cell]).map(cellTag);
    const place = `Cell ${counts.join(' or ')}, line ${site.line}`;
    return site.function ? `${site.function} (${place})` : place;
  }
  return site.line === null ? 'no Python stack' : `${site.filename.split('/').pop()}:${site.line}`;
}

function sitesWords(sites: readonly ICellSite[]): string {
  return sites
    .slice(0, SITES_NAMED)
    .map(s => `${formatBytes(s.bytes)} from ${siteWords(s)}`)
    .join('; ');
}

/** "at peak: 512 MiB from Cell [4], line 2; ..." for a cell whose history says what made its peak. */
export function peakLine(peak: IPeakAnatomy, frames: FrameTable, cells: CellCodeNames): string | null {
  const sites = cellSites(peak.alive, frames, cells);
  if (!sites.length) {
    return null;
  }
  return `At peak (${formatBytes(peak.bytes)}${peak.complete ? '' : ' or more: history lost entries'}): ${sitesWords(sites)}.`;
}

/** What the tooltip says about fragmentation, by the engine's advice. */
const FRAGMENTATION_WORDS: Record<FragmentationAdvice, string> = {
  'enable-expandable-segments':
    'Fragmentation: the free space in segments would fit the request, but no free block is big enough; ' +
    'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids it.',
  'expandable-segments-on':
    'Fragmentation: the free space in segments would fit the request, but no free block is big enough; ' +
    'expandable segments are already on, so that setting will not help.'
};

/** The OOM post-mortem in a few lines: the request against the free memory, fragmentation, the holders. */
export function oomLines(oom: IOomReport, cells: CellCodeNames): string[] {
  const free = oom.deviceFreeBytes === null ? 'unknown' : formatBytes(oom.deviceFreeBytes);
  const lines = [
    `It asked for ${oom.requestBytes === null ? 'an unknown amount' : formatBytes(oom.requestBytes)} on cuda:${oom.device}, with ${free} free on the device and ` +
      `${formatBytes(oom.segmentFreeBytes)} free in PyTorch's segments (largest free block ` +
      `${formatBytes(oom.largestFreeBlockBytes)}).`
  ];
  if (oom.fragmentationAdvice) {
    lines.push(FRAGMENTATION_WORDS[oom.fragmentationAdvice]);
  }
  const holders = cellSites(oom.held, oom.atOom.frames, cells);
  if (holders.length) {
    lines.push(`The device held: ${sitesWords(holders)}.`);
  }
  return lines;
}
