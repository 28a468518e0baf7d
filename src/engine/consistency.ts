/**
 * The allocator's layout, checked the same way whichever way a snapshot
 * arrived (a pickle or JSON file, or the kernel helper's message for a live
 * or replayed cell): segments that overlap, and blocks that overlap or leave
 * their segment, would each be counted, so reserved or free memory would come
 * out wrong (negative free space) with nothing said.
 */
import { SnapshotError } from './errors';
import { Block, Segment } from './model';

const hex = (n: number) => `0x${n.toString(16)}`;

/** Refuse segments that overlap on a device (one listed twice); `sorted` is by device and address. */
export function checkNoOverlap(sorted: readonly Segment[]): void {
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1], sorted[i]];
    if (a.device === b.device && b.address < a.address + a.totalSize) {
      throw new SnapshotError(
        `not a consistent snapshot: two segments on device ${b.device} overlap at ${hex(b.address)} (one listed twice?)`
      );
    }
  }
}

/** Refuse block `b` of `segment` where it overlaps `a`, the block before it by address. */
function checkApart(segment: Segment, a: Block, b: Block): void {
  if (b.address < a.address + a.size || b.address === a.address) {
    const at = `not a consistent snapshot: segment ${hex(segment.address)}`;
    throw new SnapshotError(
      b.address === a.address
        ? `${at} lists two blocks at ${hex(a.address)} (one listed twice?)`
        : `${at} blocks at ${hex(a.address)} and ${hex(b.address)} overlap`
    );
  }
}

/** Refuse blocks of one segment that overlap or are listed twice; `sorted` is by address. */
export function checkBlocksApart(segment: Segment, sorted: readonly Block[]): void {
  for (let i = 1; i < sorted.length; i++) {
    checkApart(segment, sorted[i - 1], sorted[i]);
  }
}

/**
 * Refuse a layout whose segments overlap or whose blocks overlap or lie
 * outside their segment. `segments` are sorted by device and address,
 * `blocks` by segment and address, each naming its segment's index.
 */
export function checkLayout(segments: readonly Segment[], blocks: readonly Block[]): void {
  checkNoOverlap(segments);
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i];
    const segment = segments[block.segment];
    if (block.address < segment.address || block.address + block.size > segment.address + segment.totalSize) {
      throw new SnapshotError(
        `not a consistent snapshot: the block at ${hex(block.address)} lies outside its segment ${hex(segment.address)}`
      );
    }
    if (i > 0 && blocks[i - 1].segment === block.segment) {
      checkApart(segment, blocks[i - 1], block);
    }
  }
}
