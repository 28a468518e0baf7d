/**
 * The segment map: one row per reserved segment, drawn to scale with its size
 * written on the left, blocks at their offsets coloured by the cell that
 * allocated them (or, for a snapshot with no notebook cells in its stacks, by
 * allocation site), so free space inside segments (fragmentation) shows at a
 * glance. A cell keeps its colour in each snapshot of the session, and after
 * a reload (see colours.ts). Where the kernel gave each block's role, the map
 * can colour by role instead (the chart's role colours). A legend names each
 * colour.
 * Hovering a block names it; clicking shows its stack. From the keyboard,
 * one block is in the tab order and the arrow keys move through the map,
 * showing each block's stack as they go (as the chart's bands do).
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import {
  allocationSite,
  Block,
  BlockRoles,
  CellCodeNames,
  formatBytes,
  isCellFilename,
  Role,
  roleLabel,
  Snapshot,
  visibleStack
} from '../engine';
import {
  ISegmentMapItem,
  ISegmentMapPlace,
  ISegmentRow,
  largestGroups,
  rolesPresent,
  segmentMapKeyTarget,
  segmentMapLayout,
  segmentMapPlaceOf
} from './segments';
import { blockStateWords } from './words';
import {
  cellFrameLabel,
  copiesText,
  elsewhereText,
  frameText,
  ICellLocation,
  nativeFramesText,
  StackView
} from '../components/stack';
import { useWidth } from './width';
import { GROUP_COLOURS, groupColours } from './colours';

/** Width before the panel is measured, in pixels. */
const DEFAULT_WIDTH = 320;
/** The column of segment sizes on the left. */
const LABEL_WIDTH = 44;
const ROW_HEIGHT = 9;
const MAX_ROWS = 400;
/** How far the keyboard's focus ring lies outside its block. */
const RING_GAP = 2;
/**
 * The width of free space's outline (style/base.css), drawn inside the row:
 * on whole pixels, not blurred over two at half strength, and hidden under
 * the blocks, so it outlines the free space between them.
 */
const FREE_OUTLINE = 1;

/** Props of SegmentMap. */
export interface ISegmentMapProps {
  snapshot: Snapshot;
  /** Each allocated block's role; null when the kernel gave none (the map then colours by code only). */
  roles?: BlockRoles | null;
  cells: CellCodeNames;
  showAllFrames: boolean;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
}

/** What a colour stands for. */
interface IGroup {
  key: string;
  label: string;
  /** A cell's place among the notebook's code cells, which gives its colour (see colours.ts). */
  place?: number;
}

/** The cell whose code allocated a block: the outermost notebook frame of its stack. */
function allocatingCell(
  snapshot: Snapshot,
  block: Block,
  cells: CellCodeNames,
  trans: TranslationBundle
): IGroup | null {
  const ids = snapshot.frames.stack(block.stack);
  for (let i = ids.length - 1; i >= 0; i--) {
    const frame = snapshot.frames.frame(ids[i]);
    if (isCellFilename(frame.filename)) {
      const copies = cells.lookup(frame.filename)?.cells;
      // Copies of one cell share its code: one colour, and the legend names each copy.
      if (copies) {
        return {
          key: `cell:${copies[0].id}`,
          label: copiesText(copies, frame.line, trans, 'cellLabel'),
          place: cells.placeOf(copies[0].id)
        };
      }
      // Another process ran the same code: its own colour, never the cell's (this notebook did not run it).
      const elsewhere = cells.sameCodeElsewhere(frame.filename);
      return elsewhere.length
        ? {
            key: `elsewhere:${elsewhere[0].id}`,
            label: trans.__('Same code as %1, run by another process', copiesText(elsewhere, null, trans, 'cellLabel'))
          }
        : null;
    }
  }
  return null;
}

/** The allocation site of a block: its innermost frame worth showing. */
function allocatingSite(
  snapshot: Snapshot,
  block: Block,
  cells: CellCodeNames,
  showAll: boolean,
  trans: TranslationBundle
): IGroup | null {
  const id = allocationSite(snapshot.frames, block.stack, { allFrames: showAll });
  if (id < 0) {
    return null;
  }
  const frame = snapshot.frames.frame(id);
  const copies = cells.lookup(frame.filename)?.cells;
  const elsewhere = copies ? [] : cells.sameCodeElsewhere(frame.filename);
  const where = copies
    ? copiesText(copies, frame.line, trans)
    : `${frame.filename.split('/').pop()}:${frame.line}` +
      (elsewhere.length ? `; ${elsewhereText(elsewhere, trans)}` : '');
  // Keyed by what the frame says, not by its id (the store's table numbers frames as they come, so a reload numbers
  // them again): the key gives the site's colour.
  return { key: `site:${frame.filename}:${frame.line}:${frame.name}`, label: `${frame.name} (${where})` };
}

/** Frames a block's hover text lists before "…". */
const HOVER_FRAMES = 6;

/**
 * Hover text of a block: size, its role where the map is coloured by role
 * (what the colour means), state, and its stack (filtered, innermost
 * first), cells named as the notebook shows them.
 */
function blockTitle(
  snapshot: Snapshot,
  block: Block,
  role: Role | null,
  cells: CellCodeNames,
  trans: TranslationBundle
): string {
  const size = formatBytes(block.size);
  const state = blockStateWords(block.state, trans).text;
  // The address tells neighbours of one size and line apart (a screen reader reads this as the block's name).
  const address = block.address.toString(16);
  const lines = [
    role
      ? trans.__('%1 %2 at 0x%3, %4', size, trans.__(roleLabel(role)), address, state)
      : trans.__('%1 at 0x%2, %3', size, address, state)
  ];
  const entries = visibleStack(snapshot.frames, block.stack);
  for (const entry of entries.slice(0, HOVER_FRAMES)) {
    if (entry.kind === 'native') {
      lines.push(`  ${nativeFramesText(entry.count, trans)}`);
    } else {
      const f = snapshot.frames.frame(entry.frameId);
      const cell = cells.lookup(f.filename)?.cells[0];
      if (cell) {
        const { label, sourceLine } = cellFrameLabel(cell, f.line, trans);
        lines.push(`  ${label}: ${sourceLine}`);
      } else {
        lines.push(`  ${frameText(f, cells, trans)}`);
      }
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

/** Props of one segment's row. */
interface ISegmentRowProps {
  row: ISegmentRow;
  /** The row's place in the map, and how many segments the snapshot has. */
  index: number;
  count: number;
  /** Each item's hover text and name. */
  texts: { title: string; name: string }[];
  colourOf: (group: string) => string;
  /** The item picked, and the one in the tab order, where they are in this row. */
  selected: number | null;
  tabbable: number | null;
  trans: TranslationBundle;
}

/**
 * One segment's row, drawn again only when what it shows changes: a key that
 * moves the pick redraws the two rows it leaves and enters, not 400.
 */
const SegmentRow = React.memo(function SegmentRow(props: ISegmentRowProps): JSX.Element {
  const { row, index: r, trans } = props;
  const free = trans.__('%1: %2, %3 free', row.label, formatBytes(row.size), formatBytes(row.freeBytes));
  return (
    <g
      data-cuda-memdiff-segment={row.label}
      role="row"
      aria-label={trans.__('Segment %1 of %2, %3', r + 1, props.count, free)}
    >
      {/* each row its size: two segments of one size read as one drawn on two lines when only the first had it */}
      <text
        aria-hidden="true"
        className="jp-CudaMemdiffSegments-size"
        x={LABEL_WIDTH - 4}
        y={row.y + (ROW_HEIGHT - 1) / 2}
        dominantBaseline="middle"
        textAnchor="end"
      >
        {formatBytes(row.size)}
      </text>
      <rect
        className="jp-CudaMemdiffSegments-free"
        aria-hidden="true"
        x={row.x + FREE_OUTLINE / 2}
        y={row.y + FREE_OUTLINE / 2}
        width={Math.max(0, row.width - FREE_OUTLINE)}
        height={ROW_HEIGHT - 1 - FREE_OUTLINE}
      >
        <title>{free}</title>
      </rect>
      {row.items.map((item, i) => (
        <rect
          key={item.block}
          data-cuda-memdiff-item={`${r}:${i}`}
          role="gridcell"
          aria-label={props.texts[i].name}
          aria-selected={props.selected === i}
          tabIndex={props.tabbable === i ? 0 : -1}
          className={`jp-CudaMemdiffSegments-block ${item.count > 1 ? 'jp-mod-band' : props.colourOf(item.group)}${
            item.state === 'active_pending_free' ? ' jp-mod-pending' : ''
          }`}
          x={item.x}
          y={row.y}
          width={item.width}
          height={ROW_HEIGHT - 1}
        >
          <title>{props.texts[i].title}</title>
        </rect>
      ))}
    </g>
  );
});

/** The segments of one snapshot. */
export function SegmentMap(props: ISegmentMapProps): JSX.Element {
  const { snapshot, cells, trans, showAllFrames } = props;
  // The picked block, by its index: another snapshot starts with none (an index means another block, or
  // none, there), and going back does not bring it back.
  const [pick, setPick] = React.useState<{ snapshot: Snapshot; block: number } | null>(null);
  // The block the keyboard's focus ring is drawn around: over the rows, as the last thing drawn (a block's own
  // outline is cut by the map's edge and drawn over by the next row).
  const [ring, setRing] = React.useState<{ snapshot: Snapshot; block: number } | null>(null);
  if (pick && pick.snapshot !== snapshot) {
    setPick(null);
  }
  if (ring && ring.snapshot !== snapshot) {
    setRing(null);
  }
  const picked = pick?.snapshot === snapshot ? pick.block : null;
  const [wantRoles, setWantRoles] = React.useState(false);
  const roles = props.roles ?? null;
  const byRole = wantRoles && roles !== null;
  // The rows' own box, which scrolls where the map is taller than half the window: its width is the map's.
  const rowsBox = React.useRef<HTMLDivElement>(null);
  const width = useWidth(rowsBox, DEFAULT_WIDTH);
  const detailHead = React.useRef<HTMLParagraphElement>(null);
  // A pick shows the block's stack below the map: bring its first line into view, or a pick in a tall map
  // seems to do nothing (the map stops at half the window, so the picked block stays in view too).
  React.useEffect(() => {
    if (picked !== null && detailHead.current) {
      Private.scrollIntoScroller(detailHead.current);
    }
  }, [picked]);
  const roleMap = React.useMemo(() => {
    if (!byRole) {
      return null;
    }
    const layout = segmentMapLayout(snapshot, {
      width,
      labelWidth: LABEL_WIDTH,
      rowHeight: ROW_HEIGHT,
      maxRows: MAX_ROWS,
      groupOf: block => roles!.roleOf(block)
    });
    const legend = rolesPresent(snapshot, roles!).map(({ role, bytes }) => ({
      key: role,
      className: `jp-CudaMemdiffSegments-role jp-mod-${role}`,
      label: `${trans.__(roleLabel(role))} (${formatBytes(bytes)})`
    }));
    return { layout, legend };
  }, [snapshot, roles, byRole, width, trans]);
  // The colour groups do not depend on the width (grouping 40,000 blocks is
  // most of the work): a resize only lays the rows out again.
  const byCode = React.useMemo(() => {
    // Colour by cell when the stacks reach notebook cells, else by allocation site.
    const byStack = new Map<number, IGroup | null>();
    const cellOf = (block: Block) => {
      if (!byStack.has(block.stack)) {
        byStack.set(block.stack, allocatingCell(snapshot, block, cells, trans));
      }
      return byStack.get(block.stack) ?? null;
    };
    const byCell = snapshot.blocks.some(b => b.state !== 'inactive' && cellOf(b) !== null);
    const siteByStack = new Map<number, IGroup | null>();
    const groupOf = (block: Block): IGroup | null => {
      if (byCell) {
        return cellOf(block);
      }
      if (!siteByStack.has(block.stack)) {
        siteByStack.set(block.stack, allocatingSite(snapshot, block, cells, showAllFrames, trans));
      }
      return siteByStack.get(block.stack) ?? null;
    };
    const groups = new Map<string, IGroup>();
    const keyOf = (block: Block) => {
      const group = groupOf(block);
      if (group) {
        groups.set(group.key, group);
      }
      return group?.key ?? '';
    };
    // The largest groups get a colour: a cell's follows its place in the notebook, the same in every snapshot.
    const top = largestGroups(snapshot, keyOf, GROUP_COLOURS);
    const given = groupColours(top, key => groups.get(key)?.place);
    const colourOf = (key: string) => {
      const k = given.get(key);
      return k === undefined ? 'jp-mod-other' : `jp-mod-group${k}`;
    };
    const legend = top.map(key => ({ key, className: colourOf(key), label: groups.get(key)?.label ?? key }));
    return { keyOf, colourOf, legend, byCell };
  }, [snapshot, cells, showAllFrames, trans]);
  const { keyOf, byCell } = byCode;
  const codeLayout = React.useMemo(
    () =>
      roleMap
        ? null
        : segmentMapLayout(snapshot, {
            width,
            labelWidth: LABEL_WIDTH,
            rowHeight: ROW_HEIGHT,
            maxRows: MAX_ROWS,
            groupOf: keyOf
          }),
    [snapshot, keyOf, width, roleMap]
  );
  const layout = roleMap?.layout ?? codeLayout!;
  const legend = roleMap?.legend ?? byCode.legend;
  const colourOf = React.useMemo(
    () => (roleMap ? (role: string) => `jp-CudaMemdiffSegments-role jp-mod-${role}` : byCode.colourOf),
    [roleMap, byCode]
  );
  const block = picked !== null ? snapshot.blocks[picked] : null;
  // Each item's hover text and its name for a screen reader: made once a layout, not at each key.
  const texts = React.useMemo(
    () =>
      layout.rows.map(row =>
        row.items.map(item => {
          if (item.count > 1) {
            const band = Private.bandTitle(snapshot, item, trans);
            return { title: band, name: band };
          }
          const b = snapshot.blocks[item.block];
          const title = blockTitle(snapshot, b, byRole ? roles!.roleOf(b) : null, cells, trans);
          return { title, name: Private.shortName(title) };
        })
      ),
    [layout, snapshot, byRole, roles, cells, trans]
  );
  const pickedPlace = React.useMemo(
    () => (picked !== null ? segmentMapPlaceOf(layout.rows, picked) : null),
    [layout, picked]
  );
  const ringPlace = React.useMemo(
    () => (ring?.snapshot === snapshot ? segmentMapPlaceOf(layout.rows, ring.block) : null),
    [layout, ring, snapshot]
  );
  // One item is in the tab order: the picked block's, else the first drawn.
  const firstRow = layout.rows.findIndex(r => r.items.length > 0);
  const tabbable = pickedPlace ?? (firstRow >= 0 ? { row: firstRow, item: 0 } : null);
  // One set of handlers on the drawing: the item is named by its data attributes (a handler a rect, made
  // again at each render, would make every row draw again at each key).
  const placeOf = (target: EventTarget): ISegmentMapPlace | null => {
    const rect = target instanceof Element ? target.closest('[data-cuda-memdiff-item]') : null;
    const [row, item] = (rect?.getAttribute('data-cuda-memdiff-item') ?? '').split(':').map(Number);
    return rect && layout.rows[row]?.items[item] ? { row, item } : null;
  };
  const blockAt = (place: ISegmentMapPlace) => layout.rows[place.row].items[place.item].block;
  const onKey = (event: React.KeyboardEvent) => {
    const at = placeOf(event.target);
    const target =
      at && (event.key === 'Enter' || event.key === ' ' ? at : segmentMapKeyTarget(layout.rows, at, event.key));
    if (!target) {
      return;
    }
    event.preventDefault();
    setPick({ snapshot, block: blockAt(target) });
    setRing({ snapshot, block: blockAt(target) });
    // Focus goes with the pick, so the next key moves on from there.
    rowsBox.current?.querySelector<SVGElement>(`[data-cuda-memdiff-item="${target.row}:${target.item}"]`)?.focus();
  };
  const onClick = (event: React.MouseEvent) => {
    const at = placeOf(event.target);
    if (at) {
      setPick({ snapshot, block: blockAt(at) });
    }
  };
  const onFocus = (event: React.FocusEvent) => {
    const at = placeOf(event.target);
    setRing(at && Private.focusVisible(event.target) ? { snapshot, block: blockAt(at) } : null);
  };
  const items = layout.rows.flatMap(r => r.items);
  const hasOther = items.some(i => i.count === 1 && colourOf(i.group) === 'jp-mod-other');
  const hasBands = items.some(i => i.count > 1);
  const hasPending = items.some(i => i.state === 'active_pending_free');
  const reserved = snapshot.segments.reduce((n, s) => n + s.totalSize, 0);
  const free = layout.rows.reduce((n, r) => n + r.freeBytes, 0);
  const largest = snapshot.segments.reduce((n, s) => Math.max(n, s.totalSize), 0);
  const height = Math.max(layout.height, ROW_HEIGHT);
  return (
    <div className="jp-CudaMemdiffSegments">
      <p className="jp-CudaMemdiffSegments-summary">
        {snapshot.segments.length
          ? trans.__(
              '%1 segments, %2 reserved, %3 of it free. Rows are drawn to scale: the longest is %4.',
              snapshot.segments.length,
              formatBytes(reserved),
              formatBytes(free),
              formatBytes(largest)
            )
          : trans.__('No segments: nothing is reserved on the device.')}
      </p>
      {roles ? (
        <button
          className="jp-CudaMemdiffChart-byRole jp-CudaMemdiffSegments-byRole"
          aria-pressed={byRole}
          onClick={() => setWantRoles(!byRole)}
        >
          {trans.__('colour by role')}
        </button>
      ) : null}
      <ul className="jp-CudaMemdiffSegments-legend" aria-label={trans.__('Colours of the segment map')}>
        {legend.map(entry => (
          <li key={entry.key}>
            <span className={`jp-CudaMemdiffSegments-swatch ${entry.className}`} aria-hidden="true" />
            {entry.label}
          </li>
        ))}
        {hasOther ? (
          <li>
            <span className="jp-CudaMemdiffSegments-swatch jp-mod-other" aria-hidden="true" />
            {byRole ? trans.__('other') : byCell ? trans.__('other code') : trans.__('other sites')}
          </li>
        ) : null}
        {hasBands ? (
          <li>
            <span className="jp-CudaMemdiffSegments-swatch jp-mod-band" aria-hidden="true" />
            {trans.__('blocks too small to draw, summarised')}
          </li>
        ) : null}
        {hasPending ? (
          <li>
            <span className="jp-CudaMemdiffSegments-swatch jp-mod-other jp-mod-pending" aria-hidden="true" />
            {trans.__('freed, waiting for its stream (paler)')}
          </li>
        ) : null}
        <li>
          <span className="jp-CudaMemdiffSegments-swatch jp-mod-free" aria-hidden="true" />
          {trans.__('free space inside a segment')}
        </li>
      </ul>
      <div className="jp-CudaMemdiffSegments-rows" ref={rowsBox}>
        <svg
          viewBox={`0 0 ${width} ${height}`}
          role="grid"
          aria-label={
            byRole
              ? trans.__('%1 segments; blocks coloured by role', snapshot.segments.length)
              : byCell
                ? trans.__('%1 segments; blocks coloured by the cell that allocated them', snapshot.segments.length)
                : trans.__('%1 segments; blocks coloured by the line that allocated them', snapshot.segments.length)
          }
          onKeyDown={onKey}
          onClick={onClick}
          onFocus={onFocus}
          onBlur={() => setRing(null)}
        >
          {layout.rows.map((row, r) => (
            <SegmentRow
              key={row.segment}
              row={row}
              index={r}
              count={snapshot.segments.length}
              texts={texts[r]}
              colourOf={colourOf}
              selected={pickedPlace?.row === r ? pickedPlace.item : null}
              tabbable={tabbable?.row === r ? tabbable.item : null}
              trans={trans}
            />
          ))}
          {ringPlace ? (
            <rect
              className="jp-CudaMemdiffSegments-ring"
              aria-hidden="true"
              x={layout.rows[ringPlace.row].items[ringPlace.item].x - RING_GAP}
              y={layout.rows[ringPlace.row].y - RING_GAP}
              width={layout.rows[ringPlace.row].items[ringPlace.item].width + 2 * RING_GAP}
              height={ROW_HEIGHT - 1 + 2 * RING_GAP}
            />
          ) : null}
        </svg>
      </div>
      {layout.hiddenRows > 0 ? <p>{trans.__('and %1 more segments', layout.hiddenRows)}</p> : null}
      {block ? (
        <div className="jp-CudaMemdiffSegments-detail">
          <p ref={detailHead} title={blockStateWords(block.state, trans).title}>
            {roles?.has(block)
              ? // What the memory is for, where the kernel said: in either colouring, the role is what a person asks of a block.
                trans.__(
                  'Block %1 %2 at 0x%3 (%4)',
                  formatBytes(block.size),
                  trans.__(roleLabel(roles.roleOf(block))),
                  block.address.toString(16),
                  blockStateWords(block.state, trans).text
                )
              : trans.__(
                  'Block %1 at 0x%2 (%3)',
                  formatBytes(block.size),
                  block.address.toString(16),
                  blockStateWords(block.state, trans).text
                )}
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
    </div>
  );
}

namespace Private {
  /** Hover text, and name, of a band: how many blocks it stands for, their bytes, where it starts. */
  export function bandTitle(snapshot: Snapshot, band: ISegmentMapItem, trans: TranslationBundle): string {
    return trans.__(
      '%1 small blocks, %2 in all, from 0x%3',
      band.count,
      formatBytes(band.bytes),
      snapshot.blocks[band.block].address.toString(16)
    );
  }

  /**
   * A block's name for a screen reader: its hover text's first line (size,
   * address, state) and its first frame, not the whole stack at each key.
   */
  export function shortName(title: string): string {
    const [head, frame] = title.split('\n');
    return frame ? `${head}; ${frame.trim()}` : head;
  }

  /**
   * Scroll the nearest scrolling box around `element` (the panel's content)
   * just enough to show it; scrollIntoView would scroll JupyterLab's own
   * boxes too, which hide their overflow.
   */
  export function scrollIntoScroller(element: HTMLElement): void {
    let box = element.parentElement;
    while (box && !/(auto|scroll)/.test(getComputedStyle(box).overflowY)) {
      box = box.parentElement;
    }
    if (!box) {
      return;
    }
    const shown = box.getBoundingClientRect();
    const at = element.getBoundingClientRect();
    if (at.bottom > shown.bottom) {
      box.scrollTop += Math.min(at.bottom - shown.bottom, at.top - shown.top);
    } else if (at.top < shown.top) {
      box.scrollTop -= shown.top - at.top;
    }
  }

  /** Whether the browser shows a focus ring for this element (the keyboard moved there, not a click). */
  export function focusVisible(element: Element): boolean {
    try {
      return element.matches(':focus-visible');
    } catch {
      return true; // a browser without the selector: show it
    }
  }
}
