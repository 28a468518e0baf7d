/** Paths and loaders for the test data committed under test-data/. */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import {
  adviceText,
  findingText,
  FrameTable,
  IExecutionVerdict,
  ISessionManifest,
  loadSession,
  readSnapshot,
  Snapshot
} from '..';

export const TEST_DATA = path.resolve(__dirname, '../../../test-data');
export const RECORDINGS = path.join(TEST_DATA, 'recordings');
export const FIXTURES = path.join(TEST_DATA, 'fixtures');
export const LIVE = path.join(TEST_DATA, 'live');

/** Every recorded H200 session folder. */
export function recordingNames(): string[] {
  return fs
    .readdirSync(RECORDINGS)
    .filter(name => fs.existsSync(path.join(RECORDINGS, name, 'manifest.json')))
    .sort();
}

/** A recorded session folder, loaded as the CLI loads it (from the recordings, or `LIVE`). */
export function sessionOf(name: string, root = RECORDINGS) {
  return loadSession(fs.readFileSync(path.join(root, name, 'manifest.json'), 'utf-8'), f =>
    readBytes(path.join(root, name, f))
  );
}

const VENV_PYTHON = path.resolve(__dirname, '../../../.venv/bin/python');
const PYTHON = process.env.PYTHON ?? (fs.existsSync(VENV_PYTHON) ? VENV_PYTHON : 'python3');

/** The kernel helper's real messages replaying a recorded session folder (dump_replay.py: a real IPython shell). */
export function helperMessages(folder: string): any[] {
  const helpers = path.resolve(__dirname, '../../../kernel-helpers');
  const out = execFileSync(PYTHON, [path.join(helpers, 'tests', 'dump_replay.py'), folder], {
    encoding: 'utf-8',
    env: { ...process.env, PYTHONPATH: helpers },
    maxBuffer: 1 << 30
  });
  return out
    .trim()
    .split('\n')
    .map(line => JSON.parse(line));
}

export function readBytes(file: string): Uint8Array {
  return new Uint8Array(fs.readFileSync(file));
}

export function manifestOf(name: string): ISessionManifest & {
  code_names_by_execution_count: { [count: string]: string };
  expected: { leak_cells: number[] };
} {
  return JSON.parse(fs.readFileSync(path.join(RECORDINGS, name, 'manifest.json'), 'utf-8'));
}

export function recordedSnapshot(name: string, file: string, frames?: FrameTable): Snapshot {
  return readSnapshot(readBytes(path.join(RECORDINGS, name, file)), frames);
}

/** A verdict's findings and fixes in English, as the CLI words them (executions by their labels when given). */
export function wording(v: IExecutionVerdict, labels?: readonly string[]): string {
  const label = (k: number) => labels?.[k] ?? `execution ${k}`;
  return [...v.findings.map(f => findingText(f, label)), ...v.fixes.map(adviceText)].join('\n');
}
