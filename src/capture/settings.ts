/** The extension's settings (schema/plugin.json) as the capture code uses them. */
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { DEFAULT_THRESHOLDS, IBadgeThresholds } from '../badges/view';
import { SnapshotStore } from './store';
import { IHelperSettings } from './protocol';

const MIB = 2 ** 20;

/** Capture settings, read from the Settings Editor. */
export interface ICaptureSettings {
  helper: IHelperSettings;
  thresholds: IBadgeThresholds;
  snapshotsKept: number;
}

export const DEFAULT_CAPTURE_SETTINGS: ICaptureSettings = {
  helper: {
    capture: true,
    history: 'all',
    stacks: 'python',
    max_entries: 100000,
    include_traces: false,
    peaks: 'passive',
    snapshots_kept: SnapshotStore.DEFAULT_MAX_RECORDS
  },
  thresholds: DEFAULT_THRESHOLDS,
  snapshotsKept: SnapshotStore.DEFAULT_MAX_RECORDS
};

/** Read the composite settings into the shape the capture code takes. */
export function readCaptureSettings(settings: ISettingRegistry.ISettings): ICaptureSettings {
  const get = <T>(key: string, fallback: T): T => (settings.composite[key] as T | undefined) ?? fallback;
  const d = DEFAULT_CAPTURE_SETTINGS;
  return {
    helper: {
      capture: get('capture', d.helper.capture),
      history: get('history', d.helper.history),
      stacks: get('stacks', d.helper.stacks),
      max_entries: get('maxEntries', d.helper.max_entries),
      include_traces: get('includeTraces', d.helper.include_traces),
      peaks: get('peaks', d.helper.peaks),
      snapshots_kept: get('snapshotsKept', d.snapshotsKept)
    },
    // People think of thresholds in MiB; the badges compare bytes.
    thresholds: {
      warnBytes: get('badgeWarnMiB', d.thresholds.warnBytes / MIB) * MIB,
      dangerBytes: get('badgeDangerMiB', d.thresholds.dangerBytes / MIB) * MIB
    },
    snapshotsKept: get('snapshotsKept', d.snapshotsKept)
  };
}
