// The CLI's words for a run, from the engine's data: `Cell [1] in kernel 1` once a session folder spans a restart.
import { ISessionManifest } from '../../engine';
import { executionLabels, inKernel } from '../runNames';

describe("a run's name in the CLI", () => {
  const cell = (index: number, count: number | null, kernel: number, label?: string) => ({
    index,
    execution_count: count,
    kernel_session: kernel,
    source: '',
    snapshot_file: `${index}.pickle`,
    ...(label ? { label } : {})
  });
  const manifest = (...cells: ReturnType<typeof cell>[]) => ({ cells }) as unknown as ISessionManifest;

  it("names a session folder's cells with their kernel once it restarted", () => {
    expect(executionLabels(manifest(cell(0, 1, 1), cell(1, 1, 2)))).toEqual([
      'Cell [1] in kernel 1',
      'Cell [1] in kernel 2'
    ]);
    expect(executionLabels(manifest(cell(0, 1, 1), cell(1, 2, 1)))).toEqual(['Cell [1]', 'Cell [2]']);
  });

  it('keeps a capture point by its label, and a cell without a count by its index', () => {
    expect(executionLabels(manifest(cell(0, null, 1, 'step 4'), cell(3, null, 2)))).toEqual([
      'step 4 in kernel 1',
      'Cell [ ] (index 3) in kernel 2'
    ]);
    expect(inKernel('Cell [2]', null)).toBe('Cell [2]');
  });
});
