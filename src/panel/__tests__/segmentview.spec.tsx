import { fireEvent, render, screen } from '@testing-library/react';
import { nullTranslator } from '@jupyterlab/translation';
import * as fs from 'fs';
import * as path from 'path';
import * as React from 'react';
import { CellCodeNames, readSnapshot } from '../../engine';
import { SegmentMap } from '../segmentview';

const trans = nullTranslator.load('jupyterlab_cuda_memdiff');
const REC = path.resolve(__dirname, '../../../test-data/recordings/gpu_memory_demo--python');
const manifest = JSON.parse(fs.readFileSync(path.join(REC, 'manifest.json'), 'utf-8'));

describe('SegmentMap', () => {
  it('draws each segment and colours blocks by the cell that allocated them', () => {
    const snapshot = readSnapshot(new Uint8Array(fs.readFileSync(path.join(REC, manifest.cells[2].snapshot_file))));
    const ids = manifest.cells.map((_: unknown, i: number) => `cell-${i}`);
    const cells = new CellCodeNames(manifest.cells.map((c: any, i: number) => ({ id: ids[i], source: c.source, executionCount: c.execution_count })));
    const onReveal = jest.fn();
    const { container } = render(
      <SegmentMap snapshot={snapshot} cells={cells} cellOrder={ids} showAllFrames={false} trans={trans} onReveal={onReveal} />
    );
    expect(container.querySelectorAll('[data-cuda-memdiff-segment]')).toHaveLength(snapshot.segments.length);
    // the model's weights come from cell 0, the batches from cell 1, the kept graphs from cell 2
    for (const k of [0, 1, 2]) {
      expect(container.querySelectorAll(`.jp-mod-cell${k}`).length).toBeGreaterThan(0);
    }
    const block = container.querySelector('.jp-mod-cell2') as SVGRectElement;
    // hovering shows the block's stack
    expect(block.querySelector('title')!.textContent).toMatch(/^\d.* active_allocated\n  .*ipykernel_\d+\/\d+\.py:3\)/m);
    fireEvent.click(block);
    fireEvent.click(screen.getByRole('button', { name: 'Cell [3], line 3' }));
    expect(onReveal).toHaveBeenCalledWith({ cell: expect.objectContaining({ id: 'cell-2' }), line: 3 });
  });
});
