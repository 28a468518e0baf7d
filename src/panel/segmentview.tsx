/**
 * The segment map: one row per reserved segment, blocks drawn at their
 * offsets, coloured by state and by the cell that allocated them, so free
 * space inside segments (fragmentation) shows at a glance. Hovering a block
 * names it; clicking shows its stack.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { Block, CellCodeNames, formatBytes, isCellFilename, Snapshot, visibleStack } from '../engine';
import { segmentMapLayout } from './segments';
import { ICellLocation, StackView } from './stack';

const WIDTH = 300;
const ROW_HEIGHT = 8;
const MAX_ROWS = 400;
const CELL_COLOURS = 6;

/** Props of SegmentMap. */
export interface ISegmentMapProps {
  snapshot: Snapshot;
  cells: CellCodeNames;
  /** Code cell ids in notebook order, for stable colours. */
  cellOrder: readonly string[];
  showAllFrames: boolean;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}

/** The cell whose code allocated a block: the outermost notebook frame of its stack. */
function allocatingCell(snapshot: Snapshot, block: Block, cells: CellCodeNames): string {
  const ids = snapshot.frames.stack(block.stack);
  for (let i = ids.length - 1; i >= 0; i--) {
    const frame = snapshot.frames.frame(ids[i]);
    if (isCellFilename(frame.filename)) {
      return cells.lookup(frame.filename)?.cells[0]?.id ?? '';
    }
  }
  return '';
}

/** Frames a block's hover text lists before "…". */
const HOVER_FRAMES = 6;

/** Hover text of a block: size, state and its stack (filtered, innermost first). */
function blockTitle(snapshot: Snapshot, block: Block, trans: TranslationBundle): string {
  const lines = [`${formatBytes(block.size)} ${block.state}`];
  const entries = visibleStack(snapshot.frames, block.stack);
  for (const entry of entries.slice(0, HOVER_FRAMES)) {
    if (entry.kind === 'native') {
      lines.push(`  [${entry.count} C++]`);
    } else {
      const f = snapshot.frames.frame(entry.frameId);
      lines.push(`  ${f.name} (${f.filename}:${f.line})`);
    }
  }
  if (entries.length > HOVER_FRAMES) {
    lines.push('  …');
  }
  if (!entries.length) {
    lines.push(`  ${trans.__('no Python stack')}`);
  }
  return lines.join('\n');
}

/** The segments of one snapshot. */
export function SegmentMap(props: ISegmentMapProps): JSX.Element {
  const { snapshot, cells, cellOrder, trans } = props;
  const [picked, setPicked] = React.useState<number | null>(null);
  const layout = React.useMemo(() => {
    const groups = new Map<number, string>();
    return segmentMapLayout(snapshot, {
      width: WIDTH,
      rowHeight: ROW_HEIGHT,
      maxRows: MAX_ROWS,
      groupOf: block => {
        let group = groups.get(block.stack);
        if (group === undefined) {
          group = allocatingCell(snapshot, block, cells);
          groups.set(block.stack, group);
        }
        return group;
      }
    });
  }, [snapshot, cells]);
  const colour = (group: string) => {
    const k = cellOrder.indexOf(group);
    return k < 0 ? 'jp-mod-other' : `jp-mod-cell${k % CELL_COLOURS}`;
  };
  const block = picked !== null ? snapshot.blocks[picked] : null;
  return (
    <section className="jp-CudaMemdiffSegments" aria-label={trans.__('Segment map')}>
      <svg
        viewBox={`0 0 ${WIDTH} ${Math.max(layout.height, ROW_HEIGHT)}`}
        role="img"
        aria-label={trans.__('%1 segments; blocks coloured by the cell that allocated them', snapshot.segments.length)}
      >
        {layout.rows.map(row => (
          <g key={row.segment} data-cuda-memdiff-segment={row.label}>
            <rect className="jp-CudaMemdiffSegments-free" x={0} y={row.y} width={WIDTH} height={ROW_HEIGHT - 1}>
              <title>{`${row.label}: ${formatBytes(snapshot.segments[row.segment].totalSize)}, ${formatBytes(row.freeBytes)} ${trans.__('free')}`}</title>
            </rect>
            {row.items.map(item => (
              <rect
                key={item.block}
                className={`jp-CudaMemdiffSegments-block ${item.count > 1 ? 'jp-mod-band' : colour(item.group)}${
                  item.state === 'active_pending_free' ? ' jp-mod-pending' : ''
                }`}
                x={item.x}
                y={row.y}
                width={item.width}
                height={ROW_HEIGHT - 1}
                onClick={() => setPicked(item.block)}
              >
                <title>
                  {item.count > 1
                    ? trans.__('%1 small blocks', item.count)
                    : blockTitle(snapshot, snapshot.blocks[item.block], trans)}
                </title>
              </rect>
            ))}
          </g>
        ))}
      </svg>
      {layout.hiddenRows > 0 ? <p>{trans.__('and %1 more segments', layout.hiddenRows)}</p> : null}
      {block ? (
        <div className="jp-CudaMemdiffSegments-detail">
          <p>
            {trans.__('Block %1 at 0x%2 (%3)', formatBytes(block.size), block.address.toString(16), block.state)}
          </p>
          <StackView
            frames={snapshot.frames}
            stack={block.stack}
            filter={{ allFrames: props.showAllFrames }}
            cells={cells}
            trans={trans}
            onReveal={props.onReveal}
          />
        </div>
      ) : null}
    </section>
  );
}
