/**
 * What an out-of-memory post-mortem says in words: the same in the panel's
 * OOM view, a snapshot file's view and the badge's tooltip.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import { formatBytes, FragmentationAdvice, IOomFigures, oomVerdict } from '../engine';

/** The post-mortem's first line, its figures as (label, value) rows, and its advice (see oomAdvice). */
export function oomFacts(
  oom: IOomFigures, // an IOomReport, or a file's (from the worker)
  trans: TranslationBundle
): { summary: string; facts: [string, string][]; advice: string | null } {
  const free = oom.deviceFreeBytes === null ? trans.__('an unknown amount') : formatBytes(oom.deviceFreeBytes);
  const asked = oom.requestBytes === null ? trans.__('an unknown amount') : formatBytes(oom.requestBytes);
  return {
    summary: trans.__('It asked for %1 on cuda:%2; the device had %3 free.', asked, oom.device, free),
    facts: [
      [trans.__('Requested'), asked],
      [trans.__('Free on the device'), free],
      [trans.__("Free in PyTorch's segments"), formatBytes(oom.segmentFreeBytes)],
      [trans.__('Largest free block'), formatBytes(oom.largestFreeBlockBytes)]
    ],
    advice: oomAdvice(oom, trans)
  };
}

/** What to do (the engine's oomVerdict) in words; null where the figures do not tell. */
export function oomAdvice(oom: IOomFigures, trans: TranslationBundle): string | null {
  const verdict = oomVerdict(oom);
  if (!verdict) {
    return null;
  }
  if (verdict.kind === 'fragmentation') {
    return fragmentationWords(verdict.setting, trans);
  }
  return verdict.beyondProcess
    ? trans.__(
        "Not fragmentation: the request is %1 more than all the free memory together, more than this process's tensors held (%2). Other processes, or memory outside PyTorch's allocator, filled the device.",
        formatBytes(verdict.bytes),
        formatBytes(oom.heldBytes)
      )
    : trans.__(
        'Not fragmentation: the request is %1 more than all the free memory together, and torch.cuda.empty_cache() cannot help (PyTorch empties its cache before it gives up). Free what filled the device, or ask for less (a smaller batch, shorter sequences).',
        formatBytes(verdict.bytes)
      );
}

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
