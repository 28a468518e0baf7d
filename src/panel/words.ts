/**
 * What the panel's block views (the diff's block tables, the segment map)
 * say of a block's state: in words, with torch's own term for the tooltip,
 * where a PyTorch user looks for it.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { BlockState } from '../engine';

/** A block's state in words (`allocated`), and torch's term (`active_allocated`) for a tooltip. */
export function blockStateWords(state: BlockState, trans: TranslationBundle): { text: string; title: string } {
  const title = trans.__("torch's block state: %1", state);
  switch (state) {
    case 'active_allocated':
      return { text: trans.__('allocated'), title };
    case 'active_pending_free':
      // Freed by Python, but another stream may still use it: the allocator reuses it once that stream is done.
      return { text: trans.__('freed, waiting for a stream'), title };
    case 'inactive':
      return { text: trans.__('free'), title };
    default:
      return { text: state, title };
  }
}
