/**
 * What an out-of-memory post-mortem says about fragmentation, in the panel's
 * OOM view and in the badge's tooltip alike.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { FragmentationAdvice } from '../engine';

/** The advice in words: enable expandable segments, or (already on) that the setting will not help. */
export function fragmentationWords(advice: FragmentationAdvice, trans: TranslationBundle): string {
  return advice === 'expandable-segments-on'
    ? trans.__(
        'Fragmentation: the free space in segments would fit the request, but no free block is big enough. Expandable segments are already on, so that setting will not help.'
      )
    : trans.__(
        'Fragmentation: the free space in segments would fit the request, but no free block is big enough. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA starts.'
      );
}
