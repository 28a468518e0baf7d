// The CLI's runs for bench/fuzz_files.py, all in one Node process: reads
// [{argv}] as JSON on stdin, runs each as `cuda-memdiff` would (the built
// dist/node/cli/main.js given as the first argument), or [{messages}]: the
// kernel helper's snapshot messages replaying a folder, decoded as the panel
// decodes them (the engine's WireDecoder), and writes one outcome
// per run to stdout: {kind: 'report'|'refused'|'usage'|'crash', text, code, bad}
// (a refusal exits 2; anything else that fails is a crash).
// `text` is what the user would read on stderr for a failure; `bad` says what
// is wrong with a report (NaN, undefined, a negative byte count), or is null.
'use strict';
const fs = require('fs');
const path = require('path');

const cli = require(process.argv[2]);
const engine = require(path.join(path.dirname(process.argv[2]), '..', 'engine'));

/** The panel's path: the helper's snapshot messages for one replayed folder, decoded in order. */
function decodeMessages(messages) {
  const decoder = new engine.WireDecoder(new engine.FrameTable());
  for (const m of messages) {
    const bad = badValue(decoder.decode(m).totals, 'totals');
    if (bad) {
      return bad;
    }
  }
  return null;
}

// Words that never belong in a report: a number or name that went missing on the way.
const BAD_TEXT = /\bNaN\b|\bundefined\b|-?Infinity\b|\[object \w+\]/;
// Counts and byte figures that cannot be negative (a change, `net_*`, can).
const COUNT_KEY = /(bytes|blocks|count|entries|segments|Bytes|Blocks)$/;

/** What is wrong with a value the JSON report is made from, or null. */
function badValue(value, key = '', seen = new Set()) {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      return `${key} is ${value}`;
    }
    if (value < 0 && COUNT_KEY.test(key) && !/^net|_change/.test(key)) {
      return `${key} is ${value}`;
    }
    return null;
  }
  if (value === undefined) {
    return `${key} is undefined`;
  }
  if (typeof value === 'string') {
    return /^(NaN|undefined|-?Infinity)$/.test(value) ? `${key} is '${value}'` : null;
  }
  if (value === null || typeof value !== 'object' || seen.has(value)) {
    return null;
  }
  seen.add(value);
  for (const [k, v] of Object.entries(value)) {
    const bad = badValue(v, Array.isArray(value) ? key : k, seen);
    if (bad) {
      return bad;
    }
  }
  return null;
}

// JSON.stringify writes NaN as null: the value is looked at before it is written.
let jsonBad = null;
const stringify = JSON.stringify;
JSON.stringify = function (value, ...rest) {
  jsonBad = jsonBad || badValue(value);
  return stringify.call(this, value, ...rest);
};

const cases = JSON.parse(fs.readFileSync(0, 'utf-8'));
const out = [];
for (const c of cases) {
  jsonBad = null;
  try {
    if (c.messages) {
      out.push({ kind: 'report', text: '', bad: decodeMessages(c.messages) });
      continue;
    }
    const text = cli.run(c.argv);
    // A line saying what was left out quotes the refusal, which may quote the value ("out of range (NaN)").
    const shown = text
      .split('\n')
      .filter(line => !/ left out\b/.test(line))
      .join('\n');
    const bad = c.argv.includes('--json') ? jsonBad : (BAD_TEXT.exec(shown) || [null])[0];
    out.push({ kind: 'report', text: '', bad: bad && String(bad) });
  } catch (reason) {
    const { code, text } = cli.failureOf(reason);
    // Without EXIT_REFUSED (a CLI where refusals and bugs both exit 1), the words alone tell them apart.
    const crash = /unexpected error/.test(text) || (cli.EXIT_REFUSED !== undefined && code !== cli.EXIT_REFUSED);
    out.push({
      kind: crash ? 'crash' : /\nusage:/.test(text) ? 'usage' : 'refused',
      text: crash && reason instanceof Error ? `${text.trim()} ${reason.stack.split('\n')[1].trim()}` : text,
      code,
      bad: null
    });
  }
}
JSON.stringify = stringify;
process.stdout.write(JSON.stringify(out));
