/**
 * Which leaks are fixed: code leaks while any of its leaked memory is alive
 * or while a later run of the same code leaks again (that run may well have
 * freed this one's bytes by rebinding the list: the leak goes on). A leak
 * whose memory other code freed, with no later run leaking again, is fixed
 * by the cell that freed (most of) it.
 */
import { Finding } from './finding';

export function settleFixed(findings: readonly Finding[]): void {
  // Later runs first: an earlier run's verdict depends on theirs.
  const leaksLater = new Set<string>();
  for (let i = findings.length - 1; i >= 0; i--) {
    const f = findings[i];
    if (!f.leaking) {
      continue;
    }
    const evidence = f.uniqueEvidence();
    const freedBy = new Map<number, number>();
    let alive = false;
    for (const b of evidence) {
      const at = f.freedAtOf(b);
      if (at === null) {
        alive = true;
        break;
      }
      freedBy.set(at, (freedBy.get(at) ?? 0) + b.size);
    }
    if (alive || leaksLater.has(f.runKey)) {
      leaksLater.add(f.runKey);
      continue;
    }
    let by = -1;
    let most = -1;
    for (const [k, bytes] of freedBy) {
      if (bytes > most || (bytes === most && k > by)) {
        by = k;
        most = bytes;
      }
    }
    f.fixed = { by, bytes: evidence.reduce((n, b) => n + b.size, 0) };
  }
}
