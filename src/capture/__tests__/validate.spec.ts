// Kernel messages are checked against the helper's own schema before anything reads them.
import * as fs from 'fs';
import * as path from 'path';
import { MessageError, validateMessage } from '../validate';
import { PROTOCOL_VERSION } from '../protocol';

const LIVE = path.resolve(__dirname, '../../../test-data/live/h200_live_cells.jsonl');
const messages = fs
  .readFileSync(LIVE, 'utf-8')
  .trim()
  .split('\n')
  .map(line => JSON.parse(line));
const snapshot = messages.find(m => m.type === 'snapshot');

describe('validateMessage', () => {
  it('accepts every message the helper sent on an H200', () => {
    for (const m of messages) {
      delete m.measured_allocated;
      expect(validateMessage(m)).toBe(m);
    }
  });

  it.each([
    ['a total as a string', { ...snapshot, devices: [{ ...snapshot.devices[0], allocated: '012' }] }, /allocated/],
    ['a negative size', { ...snapshot, blocks: { ...snapshot.blocks, size: [-5] } }, /size/],
    ['a missing block table', { ...snapshot, blocks: undefined }, /blocks/],
    ['an unknown status', { v: PROTOCOL_VERSION, type: 'status', status: 'constructor', message: '' }, /status/],
    ['another protocol', { ...snapshot, v: 1 }, /protocol 1/],
    ['an unknown type', { v: PROTOCOL_VERSION, type: '__proto__' }, /unknown kernel message type/],
    ['not an object', 'ready', /not an object/]
  ])('refuses %s with one line', (_, message, why) => {
    expect(() => validateMessage(message)).toThrow(MessageError);
    expect(() => validateMessage(message)).toThrow(why);
  });

  it('refuses an address past 2^53 - 1, which JSON.parse has already rounded, by the field that holds it', () => {
    // The kernel's JSON says 9007199254740993; the browser's JSON.parse reads 9007199254740992, as it would read
    // ...992 itself: past 2^53 - 1 two addresses are one number, and two blocks were decoded as one.
    const address = JSON.parse('9007199254740993');
    const replayed = { ...snapshot, replay: 'run3', blocks: { ...snapshot.blocks, address: [address] } };
    expect(() => validateMessage(replayed)).toThrow(
      /^the replayed recording run3: a malformed snapshot message: \/blocks\/address\/0 must be <= 9007199254740991$/
    );
  });

  it("names the replayed recording whose values a message passed on, rather than blame the kernel's helper", () => {
    // Found by bench/fuzz_files.py: a recording whose trace entry had a size of -1 was replayed into
    // "a malformed snapshot message: /traces/size/3 must be >= 0", which named no recording.
    const replayed = { ...snapshot, replay: 'run3', blocks: { ...snapshot.blocks, size: [-5] } };
    expect(() => validateMessage(replayed)).toThrow(
      /^the replayed recording run3: a malformed snapshot message: \/blocks\/size/
    );
  });
});
