/**
 * The allocator's layout, checked the same way whichever way a snapshot
 * arrived (a pickle or JSON file, or the kernel helper's message for a live
 * or replayed cell): segments that overlap, and blocks that overlap or leave
 * their segment, would each be counted, so reserved or free memory would come
 * out wrong (negative free space) with nothing said. So would a segment that
 * ends where numbers stop being exact.
 */
import { SnapshotError } from './errors';
import { Block, Segment } from './model';

/**
 * The largest address, size or end a snapshot may hold: a JavaScript number
 * is an exact integer only up to 2^53 - 1. Real CUDA addresses stay below
 * 2^48; past this, two blocks could round to one address and a diff merge
 * them, so a larger value is refused by name, never rounded.
 */
export const MAX_EXACT = Number.MAX_SAFE_INTEGER;

/** Why a value past MAX_EXACT is refused, as each refusal ends. */
export const PAST_EXACT = 'past 2^53 - 1, where numbers stop being exact';

const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * Refuse a segment whose end (address + total_size) is past MAX_EXACT; `where`
 * names it (`segment 4`). With its end exact, so is every block inside it.
 */
export function checkSegmentEnd(segment: Segment, where: string): void {
  if (segment.address + segment.totalSize > MAX_EXACT) {
    // The sum of two exact numbers, as the message quotes it, in integers that do not round.
    const end = BigInt(segment.address) + BigInt(segment.totalSize);
    throw new SnapshotError(`not a snapshot: ${where} address + total_size is out of range (${end}): ${PAST_EXACT}`);
  }
}

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
 * Refuse a layout whose segments end past MAX_EXACT or overlap, or whose
 * blocks overlap or lie outside their segment. `segments` are sorted by device and address,
 * `blocks` by segment and address, each naming its segment's index.
 */
export function checkLayout(segments: readonly Segment[], blocks: readonly Block[]): void {
  // Ends first: the overlap and containment checks below add addresses to sizes.
  segments.forEach(segment => checkSegmentEnd(segment, `segment ${hex(segment.address)}`));
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
