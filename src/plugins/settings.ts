/** The extension's settings (schema/plugin.json) as the capture code uses them. */
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { DEFAULT_THRESHOLDS, IBadgeThresholds } from '../badges/view';
import { DEFAULT_HELPER_SETTINGS, IHelperSettings } from '../capture/protocol';

const MIB = 2 ** 20;

/** Capture settings, read from the Settings Editor. */
export interface ICaptureSettings {
  helper: IHelperSettings;
  thresholds: IBadgeThresholds;
  snapshotsKept: number;
}

export const DEFAULT_CAPTURE_SETTINGS: ICaptureSettings = {
  helper: { ...DEFAULT_HELPER_SETTINGS },
  thresholds: DEFAULT_THRESHOLDS,
  snapshotsKept: DEFAULT_HELPER_SETTINGS.snapshots_kept
};

/** The Settings Editor's name of a helper setting: `max_entries` is `maxEntries`. */
export function settingKey(helperKey: string): string {
  return helperKey.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/** Read the composite settings into the shape the capture code takes. */
export function readCaptureSettings(settings: ISettingRegistry.ISettings): ICaptureSettings {
  const get = <T>(key: string, fallback: T): T => (settings.composite[key] as T | undefined) ?? fallback;
  const d = DEFAULT_CAPTURE_SETTINGS;
  // Every helper setting the Python side defines, under its camelCase name in the schema.
  const helper = Object.fromEntries(
    Object.entries(DEFAULT_HELPER_SETTINGS).map(([key, value]) => [key, get(settingKey(key), value)])
  ) as unknown as IHelperSettings;
  return {
    helper,
    // People think of thresholds in MiB; the badges compare bytes.
    thresholds: {
      warnBytes: get('badgeWarnMiB', d.thresholds.warnBytes / MIB) * MIB,
      dangerBytes: get('badgeDangerMiB', d.thresholds.dangerBytes / MIB) * MIB
    },
    snapshotsKept: helper.snapshots_kept
  };
}
