/** The last traceback: a failed cell's function frames keep their locals alive. */
import { Context, total } from './context';
import { Finding } from './finding';

export function findTraceback(f: Finding, context: Context): void {
  if (!f.execution.error) {
    return;
  }
  const pinned = f.retention.alive.filter(b => {
    if (!context.canLeak(b, f.retention)) {
      return false;
    }
    const frames = context.cellFrames(b.stack);
    // Allocated below the cell's own <module> frame: in a function the exception unwound.
    return frames.length > 1 || (frames.length === 1 && frames[0].frame.name !== '<module>');
  });
  if (!pinned.length) {
    return;
  }
  const fn = context.cellFrames(pinned[0].stack)[0]?.frame.name ?? null;
  const error = f.execution.error.split(':')[0];
  if (
    f.leak(
      'traceback',
      pinned,
      { code: 'traceback', bytes: total(pinned), fn, error },
      [{ code: 'clear-traceback' }],
      context
    )
  ) {
    f.hold({ kind: 'traceback', path: 'sys.last_traceback', reference: { type: 'last-traceback' } });
  }
}
