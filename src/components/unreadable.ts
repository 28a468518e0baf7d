/**
 * Why a file could not be read, in one line, as the panel says it. The
 * engine's refusals over a decode limit tell how to raise it on the command
 * line, which a panel user cannot pass: here they name the panel's limit and
 * the command that reads the file past it.
 */
import { formatBytes, formatCount, LIMIT_NAMES, LimitError } from '../engine';

/** The reason's message; for a file over a decode limit, the panel's limit and the command line's way past it. */
export function unreadableReason(reason: unknown): string {
  if (reason instanceof LimitError) {
    const count = formatCount(reason.value);
    const value =
      reason.limit === 'maxBytes'
        ? formatBytes(reason.value)
        : reason.limit === 'maxIntegerBytes'
          ? `${count} bytes`
          : count;
    const flag = LIMIT_NAMES[reason.limit].flag;
    return `${reason.what}, over the panel's limit of ${value}; if the file is real, read it with the command line: npx cuda-memdiff summary FILE ${flag} N`;
  }
  return reason instanceof Error ? reason.message : String(reason);
}
