// Preloaded with `node -r` into a process whose peak memory is measured: at
// exit it writes that peak, in bytes, to the file named by PEAK_RSS_FILE.
//
// Linux's getrusage maxRSS (process.resourceUsage) is wrong for this: a child
// starts from its parent's resident size at fork, so a CLI spawned by a jest
// worker or by this bench reports at least the worker's memory. VmHWM belongs
// to the address space that exec made, so it counts only the child's own.
'use strict';
const fs = require('fs');

function peakBytes() {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf-8'));
    if (m) {
      return Number(m[1]) * 1024;
    }
  } catch {
    // Not Linux: fall back below.
  }
  return process.resourceUsage().maxRSS * 1024;
}

const target = process.env.PEAK_RSS_FILE;
if (target) {
  process.on('exit', () => fs.writeFileSync(target, String(peakBytes())));
}
module.exports = { peakBytes };
