// A dropped OOM dump's post-mortem in the panel, on the real H200 recording: the error is announced to a
// screen reader when the file comes, not again when the notebook's cell names change or its section opens again.
import { render, screen } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as path from 'path';
import * as React from 'react';
import { CellCodeNames } from '../../engine';
import { readBytes, RECORDINGS } from '../../engine/__tests__/data';
import { openSnapshotFile } from '../../worker/files';
import { FileOomBody } from '../fileoom';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');

function oomOf(name: string, id: number) {
  const bytes = readBytes(path.join(RECORDINGS, 'oom--python', name));
  return openSnapshotFile({ id, bytes, width: 800, keep: false }).value.oom!;
}

describe("a file's out-of-memory section in the panel", () => {
  it('announces the failed request once a file, keeping it shown as the cell names change', () => {
    const oom = oomOf('oom00.pickle.gz', 1);
    const names = (source: string) => new CellCodeNames([{ id: 'a', source, executionCount: 1 }]);
    const { rerender } = render(<FileOomBody oom={oom} cells={names('x = 1')} trans={trans} />);
    expect(screen.getByRole('alert').textContent).toMatch(/60\.0\sGiB/);
    rerender(<FileOomBody oom={oom} cells={names('x = 2')} trans={trans} />);
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getByText(/60\.0\sGiB/, { selector: 'p' })).toBeTruthy();
    // its section closed and opened again: drawn anew, not read out anew
    rerender(<div />);
    rerender(<FileOomBody oom={oom} cells={names('x = 2')} trans={trans} />);
    expect(screen.queryByRole('alert')).toBeNull();
    expect(screen.getByText(/60\.0\sGiB/, { selector: 'p' })).toBeTruthy();
    // another file is news again
    rerender(<FileOomBody oom={{ ...oomOf('oom00.pickle.gz', 2) }} cells={names('x = 2')} trans={trans} />);
    expect(screen.getByRole('alert').textContent).toMatch(/60\.0\sGiB/);
  });
});
