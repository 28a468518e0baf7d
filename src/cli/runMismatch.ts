/**
 * `diff` of two snapshots that look like two runs' (another session, GPU or
 * rank): the line that says so above the table, and its JSON, from the
 * engine's evidence (runMismatch).
 */
import { IRunMismatch, RunEvidence } from '../engine';
import { countText } from './report';

/** One piece of evidence in words. */
function evidenceText(e: RunEvidence): string {
  switch (e.code) {
    case 'device-count':
      return `BEFORE saw ${countText(e.before, 'device')}, AFTER ${e.after}`;
    case 'history-apart':
      return `their histories on cuda:${e.device} overlap in time but share no event`;
    case 'segments-apart':
      // "Among": one at the same address and of the same size.
      return `none of BEFORE's ${countText(e.beforeSegments, 'segment')} is among AFTER's ${e.afterSegments}`;
  }
}

/** The line above the table: what says so, and what the figures then are. */
export function differentRunsNote(m: IRunMismatch): string {
  return (
    `note: BEFORE and AFTER look like snapshots of different runs (${m.evidence.map(evidenceText).join('; ')}), ` +
    'so the figures below are not a leak: every block counts as freed or born'
  );
}

/** `--json`'s `different_runs`: the evidence, its keys in the JSON's snake case; null when none. */
export function differentRunsJson(m: IRunMismatch | null) {
  if (!m) {
    return null;
  }
  return {
    evidence: m.evidence.map(e => {
      switch (e.code) {
        case 'device-count':
          return { code: 'device_count', before: e.before, after: e.after };
        case 'history-apart':
          return { code: 'history_apart', device: e.device };
        case 'segments-apart':
          return { code: 'segments_apart', before_segments: e.beforeSegments, after_segments: e.afterSegments };
      }
    })
  };
}
