/**
 * The block-level diff: a summary line, then allocation sites sorted by the
 * bytes they changed; a site expands into its stack and its blocks.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { AllocationSite, Block, CellCodeNames, formatBytes, FrameTable, SnapshotDiff } from '../engine';
import { cellFrameLabel, ICellLocation, StackView } from '../components/stack';

/** Sites rendered at once; the rest are counted (the list stays fast at any size). */
export const MAX_SITES_SHOWN = 200;
/** Blocks listed under an expanded site. */
export const MAX_BLOCKS_SHOWN = 100;

/** Props of DiffView. */
export interface IDiffViewProps {
  diff: SnapshotDiff;
  groups: readonly AllocationSite[];
  showAllFrames: boolean;
  onShowAllFrames: (value: boolean) => void;
  cells: CellCodeNames;
  trans: TranslationBundle;
  onReveal: (location: ICellLocation) => void;
  /** What the diff compares, e.g. "Cell [3] against the cell before it". */
  caption: string;
}

function siteText(frames: FrameTable, frameId: number, cells: CellCodeNames, trans: TranslationBundle): string {
  if (frameId < 0) {
    return trans.__('(no Python stack)');
  }
  const frame = frames.frame(frameId);
  const match = cells.lookup(frame.filename);
  if (match) {
    return match.cells.map(c => cellFrameLabel(c, frame.line, trans).label).join(` ${trans.__('or')} `);
  }
  return `${frame.name} (${frame.filename}:${frame.line})`;
}

function BlockTable(props: { blocks: readonly Block[]; born: boolean; trans: TranslationBundle }): JSX.Element {
  const { blocks, born, trans } = props;
  const shown = blocks.slice(0, MAX_BLOCKS_SHOWN);
  return (
    <table className="jp-CudaMemdiffBlocks">
      <caption>{born ? trans.__('Blocks born') : trans.__('Blocks freed')}</caption>
      <thead>
        <tr>
          <th scope="col">{trans.__('Address')}</th>
          <th scope="col">{trans.__('Size')}</th>
          <th scope="col">{trans.__('Requested')}</th>
          <th scope="col">{trans.__('State')}</th>
        </tr>
      </thead>
      <tbody>
        {shown.map(b => (
          <tr key={`${b.device}:${b.address}`}>
            <td>
              cuda:{b.device} 0x{b.address.toString(16)}
            </td>
            <td>{formatBytes(b.size)}</td>
            <td>{formatBytes(b.requestedSize)}</td>
            <td>{b.state}</td>
          </tr>
        ))}
      </tbody>
      {blocks.length > shown.length ? (
        <tfoot>
          <tr>
            <td colSpan={4}>{trans.__('and %1 more blocks', blocks.length - shown.length)}</td>
          </tr>
        </tfoot>
      ) : null}
    </table>
  );
}

function SiteRow(props: IDiffViewProps & { group: AllocationSite }): JSX.Element {
  const { group, diff, cells, trans } = props;
  const [open, setOpen] = React.useState(false);
  const frames = diff.frames;
  const site = group.frameId >= 0 ? frames.frame(group.frameId) : null;
  const label = siteText(frames, group.frameId, cells, trans);
  return (
    <li
      className="jp-CudaMemdiffSite"
      data-cuda-memdiff-site={site ? `${site.filename}:${site.line}` : ''}
      data-cuda-memdiff-net-bytes={group.netBytes}
    >
      <button className="jp-CudaMemdiffSite-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="jp-CudaMemdiffSite-net">{formatBytes(group.netBytes, true)}</span>
        <span className="jp-CudaMemdiffSite-label">{label}</span>
        <span className="jp-CudaMemdiffSite-count">
          {trans.__('%1 born, %2 freed', group.bornCount, group.freedCount)}
        </span>
      </button>
      {open ? (
        <div className="jp-CudaMemdiffSite-detail">
          <StackView
            frames={frames}
            stack={group.stack}
            filter={{ allFrames: props.showAllFrames }}
            cells={cells}
            trans={trans}
            onReveal={props.onReveal}
          />
          {group.stackCount > 1 ? (
            <p className="jp-CudaMemdiffSite-note">
              {trans.__("%1 different stacks reach this line; shown: the largest block's.", group.stackCount)}
            </p>
          ) : null}
          {group.born.length ? <BlockTable blocks={group.born} born={true} trans={trans} /> : null}
          {group.freed.length ? <BlockTable blocks={group.freed} born={false} trans={trans} /> : null}
        </div>
      ) : null}
    </li>
  );
}

/** The diff of two snapshots. */
export function DiffView(props: IDiffViewProps): JSX.Element {
  const { diff, groups, trans } = props;
  const shown = groups.slice(0, MAX_SITES_SHOWN);
  return (
    <section className="jp-CudaMemdiffDiff" aria-label={trans.__('Block-level diff')}>
      <p className="jp-CudaMemdiffDiff-caption">{props.caption}</p>
      <p className="jp-CudaMemdiffDiff-summary" role="status">
        {trans.__(
          'Born %1 in %2 blocks, freed %3 in %4 blocks, net %5',
          formatBytes(diff.bornBytes),
          diff.born.length,
          formatBytes(diff.freedBytes),
          diff.freed.length,
          formatBytes(diff.netBytes, true)
        )}
      </p>
      <label className="jp-CudaMemdiffDiff-switch">
        <input
          type="checkbox"
          checked={props.showAllFrames}
          onChange={e => props.onShowAllFrames(e.currentTarget.checked)}
        />{' '}
        {trans.__('Show all frames')}
      </label>
      {shown.length ? (
        <ul className="jp-CudaMemdiffSites" aria-label={trans.__('Allocation sites')}>
          {shown.map(g => (
            <SiteRow key={g.frameId} {...props} group={g} />
          ))}
        </ul>
      ) : (
        <p>{trans.__('No allocated block changed.')}</p>
      )}
      {groups.length > shown.length ? (
        <p className="jp-CudaMemdiffDiff-more">{trans.__('and %1 more sites', groups.length - shown.length)}</p>
      ) : null}
    </section>
  );
}
