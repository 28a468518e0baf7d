/** Paths and loaders for the test data committed under test-data/. */
import * as fs from 'fs';
import * as path from 'path';
import {
  adviceText,
  findingText,
  FrameTable,
  IExecutionVerdict,
  ILeakExecution,
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
export function wording(v: IExecutionVerdict, executions?: readonly ILeakExecution[]): string {
  const label = (k: number) => executions?.[k].label ?? `execution ${k}`;
  return [...v.findings.map(f => findingText(f, label)), ...v.fixes.map(adviceText)].join('\n');
}
