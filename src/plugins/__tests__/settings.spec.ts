// The Settings Editor speaks MiB and words; the capture code gets bytes and the helper's keys.
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { readCaptureSettings } from '../settings';

function read(composite: Record<string, unknown>) {
  return readCaptureSettings({ composite } as unknown as ISettingRegistry.ISettings);
}

describe('readCaptureSettings', () => {
  it('takes badge thresholds in MiB', () => {
    const t = read({ badgeWarnMiB: 100, badgeDangerMiB: 1024 }).thresholds;
    expect(t).toEqual({ warnBytes: 100 * 2 ** 20, dangerBytes: 2 ** 30 });
  });

  it('defaults to leaving the peak counters alone and keeping 200 snapshots', () => {
    const s = read({});
    expect(s.helper.peaks).toBe('passive');
    expect(s.helper.snapshots_kept).toBe(200);
    expect(s.thresholds).toEqual({ warnBytes: 256 * 2 ** 20, dangerBytes: 2 * 2 ** 30 });
  });

  it('passes the per-cell peaks choice and the snapshots kept on to the helper', () => {
    const s = read({ peaks: 'per-cell', snapshotsKept: 50 });
    expect(s.helper).toMatchObject({ peaks: 'per-cell', snapshots_kept: 50 });
    expect(s.snapshotsKept).toBe(50);
  });
});
