/**
 * @jest-environment node
 */
// Addresses JavaScript numbers cannot hold exactly: a real H200 recording with one segment moved up to 2^53,
// where a number stops being exact, run through the built CLI (npm run build:cli first). Real CUDA addresses
// stay below 2^48, so such a file is damaged or hostile: it is refused in one line that names the file and the
// field, never read with an end, or two blocks, rounded onto one address.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { gzipSync } from 'fflate';
import { decodeSnapshotBytes, pickle, PyDict, PyValue } from '../../engine';

const ROOT = path.resolve(__dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'cuda-memdiff.js');
const RECORDING = path.join(ROOT, 'test-data', 'recordings', 'gpu_memory_demo--python', 'cell01.pickle.gz');
const TWO_53 = BigInt(2) ** BigInt(53);

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-memdiff-addresses-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf-8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** An integer as the pickle holds it: a number while exact, else a bigint. */
function int(value: bigint): PyValue {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

/**
 * The recording with its last segment (index `last`) moved so that it starts at `start(segment)`: its blocks
 * and the trace entries inside it move with it, so nothing else about the file changes.
 */
function moved(name: string, start: (address: bigint, totalSize: bigint) => bigint): string {
  const raw = decodeSnapshotBytes(new Uint8Array(fs.readFileSync(RECORDING))).value as PyDict;
  const segments = raw.segments as PyDict[];
  const segment = segments[segments.length - 1];
  const address = BigInt(segment.address as number);
  const end = address + BigInt(segment.total_size as number);
  const shift = start(address, BigInt(segment.total_size as number)) - address;
  const move = (at: PyDict, key: string) => (at[key] = int(BigInt(at[key] as number) + shift));
  move(segment, 'address');
  (segment.blocks as PyDict[]).forEach(b => move(b, 'address'));
  for (const entries of raw.device_traces as PyDict[][]) {
    entries
      .filter(e => typeof e.addr === 'number' && BigInt(e.addr) >= address && BigInt(e.addr) < end)
      .forEach(e => move(e, 'addr'));
  }
  const file = path.join(dir, name);
  fs.writeFileSync(file, gzipSync(pickle(raw)));
  return file;
}

/** Refused in one line that starts with the file and matches `pattern`, with no stack trace. */
function expectRefused(r: ReturnType<typeof cli>, file: string, pattern: RegExp): void {
  expect(r.out).toBe('');
  expect(r.err.split('\n').filter(Boolean)).toEqual([expect.stringMatching(/^cuda-memdiff: /)]);
  expect(r.err.startsWith(`cuda-memdiff: ${file}: `)).toBe(true);
  expect(r.err.trimEnd()).toMatch(pattern);
  expect(r.err).not.toMatch(/unexpected error|TypeError|\s+at \S+ \(/);
  expect(r.code).toBe(2);
}

describe('a recording with an address JavaScript numbers cannot hold', () => {
  it.each([
    [
      // Every address and size is below 2^53, but the segment's end is 2^53: read, its blocks' ends and its free
      // space were sums past the last exact number, where a block one byte outside still looked inside.
      'a segment that ends at 2^53',
      (address: bigint, totalSize: bigint) => TWO_53 - totalSize,
      /not a snapshot: segment 4 address \+ total_size is out of range \(9007199254740992\): past 2\^53 - 1, where numbers stop being exact$/
    ],
    [
      'a segment that starts at 2^60',
      () => TWO_53 * BigInt(128),
      /not a snapshot: segment 4 address is out of range \(1152921504606846976\): past 2\^53 - 1, where numbers stop being exact$/
    ]
  ])('refuses %s by file and field, in summary and in diff', (name, start, why) => {
    const file = moved(`${name.replace(/\W+/g, '-')}.pickle.gz`, start);
    expectRefused(cli('summary', file), file, why);
    expectRefused(cli('diff', RECORDING, file), file, why);
  });

  it('reads the same segment moved just below, where every end is still exact', () => {
    const file = moved('below.pickle.gz', (address, totalSize) => TWO_53 - BigInt(1) - totalSize);
    const r = cli('summary', file, '--json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  });
});
