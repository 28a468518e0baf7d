/**
 * The block-level diff: a summary line, then allocation sites sorted by the
 * bytes they changed, or roles (parameter, gradient, ...) each holding its
 * sites; a site expands into its stack and its blocks.
 */
import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import {
  AllocationSite,
  Block,
  CellCodeNames,
  formatBytes,
  formatCount,
  FrameTable,
  IRoleGroup,
  IRoleMove,
  IRunMismatch,
  roleLabel,
  RunEvidence,
  SnapshotDiff,
  shownOf
} from '../engine';
import type { DiffGrouping } from './model';
import { blockStateWords } from './words';
import { keepFiguresWhole } from '../components/nobreak';
import { SoftBreaks } from '../components/softbreaks';
import { frameText, ICellLocation, StackView } from '../components/stack';

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
  /** Group by site, or by role and then by site. */
  grouping?: DiffGrouping;
  onGrouping?: (value: DiffGrouping) => void;
  /** The diff by role; null when a compared snapshot has no per-block roles. */
  roleGroups?: readonly IRoleGroup[] | null;
  /** Blocks kept on both sides that changed role, which the groups by role leave out (engine `roleMoves`). */
  roleMoves?: readonly IRoleMove[] | null;
  /** Why the compared snapshots look like two runs' (said above the figures); null or absent when not. */
  differentRuns?: IRunMismatch | null;
}

function evidenceText(e: RunEvidence, trans: TranslationBundle): string {
  switch (e.code) {
    case 'device-count':
      return trans._n('one saw %1 device, the other %2', 'one saw %1 devices, the other %2', e.before, e.after);
    case 'history-apart':
      return trans.__('their histories on cuda:%1 overlap in time but share no event', e.device);
    case 'segments-apart':
      return trans._n(
        'the one segment of one is not among the %2 of the other',
        'none of the %1 segments of one is among the %2 of the other',
        e.beforeSegments,
        e.afterSegments
      );
  }
}

/** The note above a diff of two runs' snapshots: the same evidence as the CLI's, in the panel's words. */
export function differentRunsText(m: IRunMismatch, trans: TranslationBundle): string {
  return trans.__(
    'These snapshots look like they come from different runs (%1), so the figures below are not a leak: every block counts as freed or born.',
    m.evidence.map(e => evidenceText(e, trans)).join('; ')
  );
}

function siteText(frames: FrameTable, frameId: number, cells: CellCodeNames, trans: TranslationBundle): string {
  if (frameId < 0) {
    return trans.__('(no Python stack)');
  }
  return frameText(frames.frame(frameId), cells, trans);
}

/**
 * The blocks of a site. In a narrow panel (its default 250 px) each block
 * reads on two lines, its address across the row and its figures under it,
 * so every column stays in sight (style/base.css). The roles are spelt out:
 * that layout is no CSS table, and some browsers then drop a table's
 * semantics.
 */
function BlockTable(props: { blocks: readonly Block[]; born: boolean; trans: TranslationBundle }): JSX.Element {
  const { blocks, born, trans } = props;
  const shown = shownOf(blocks, MAX_BLOCKS_SHOWN);
  const caption = born ? trans.__('Blocks born') : trans.__('Blocks freed');
  return (
    <div className="jp-CudaMemdiffBlocks-box">
      <table className="jp-CudaMemdiffBlocks" role="table">
        <caption>{caption}</caption>
        <thead role="rowgroup">
          <tr role="row">
            <th scope="col" role="columnheader">
              {trans.__('Address')}
            </th>
            <th scope="col" role="columnheader">
              {trans.__('Size')}
            </th>
            <th scope="col" role="columnheader">
              {trans.__('Requested')}
            </th>
            <th scope="col" role="columnheader">
              {trans.__('State')}
            </th>
          </tr>
        </thead>
        <tbody role="rowgroup">
          {shown.map(b => {
            const state = blockStateWords(b.state, trans);
            return (
              <tr key={`${b.device}:${b.address}`} role="row">
                <td role="cell">
                  cuda:{b.device} 0x{b.address.toString(16)}
                </td>
                <td role="cell">{formatBytes(b.size)}</td>
                <td role="cell">{formatBytes(b.requestedSize)}</td>
                <td role="cell" title={state.title}>
                  {state.text}
                </td>
              </tr>
            );
          })}
        </tbody>
        {blocks.length > shown.length ? (
          <tfoot role="rowgroup">
            <tr role="row">
              <td role="cell" colSpan={4}>
                {trans._n(
                  'and %2 more block',
                  'and %2 more blocks',
                  blocks.length - shown.length,
                  formatCount(blocks.length - shown.length)
                )}
              </td>
            </tr>
          </tfoot>
        ) : null}
      </table>
    </div>
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
        <span className="jp-CudaMemdiffSite-label">
          <SoftBreaks text={label} />
        </span>
        <span className="jp-CudaMemdiffSite-count">
          {trans.__('%1 born, %2 freed', formatCount(group.bornCount), formatCount(group.freedCount))}
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

function SiteList(props: IDiffViewProps & { sites: readonly AllocationSite[]; label: string }): JSX.Element {
  const { sites, trans } = props;
  const shown = shownOf(sites, MAX_SITES_SHOWN);
  return (
    <>
      <ul className="jp-CudaMemdiffSites" aria-label={props.label}>
        {shown.map(g => (
          <SiteRow key={g.frameId} {...props} group={g} />
        ))}
      </ul>
      {sites.length > shown.length ? (
        <p className="jp-CudaMemdiffDiff-more">
          {trans._n(
            'and %2 more site',
            'and %2 more sites',
            sites.length - shown.length,
            formatCount(sites.length - shown.length)
          )}
        </p>
      ) : null}
    </>
  );
}

function RoleRow(props: IDiffViewProps & { role: IRoleGroup }): JSX.Element {
  const { role, trans } = props;
  const [open, setOpen] = React.useState(false);
  const label = trans.__(roleLabel(role.role));
  return (
    <li
      className={`jp-CudaMemdiffRole jp-mod-${role.role}`}
      data-cuda-memdiff-role={role.role}
      data-cuda-memdiff-net-bytes={role.netBytes}
    >
      <button className="jp-CudaMemdiffSite-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="jp-CudaMemdiffSite-net">{formatBytes(role.netBytes, true)}</span>
        <span className="jp-CudaMemdiffSite-label jp-CudaMemdiffRole-label">{label}</span>
        <span className="jp-CudaMemdiffSite-count">
          {trans._n(
            'born %2, freed %3, %1 site',
            'born %2, freed %3, %1 sites',
            role.sites.length,
            formatBytes(role.bornBytes),
            formatBytes(role.freedBytes)
          )}
        </span>
      </button>
      {open ? <SiteList {...props} sites={role.sites} label={trans.__('Allocation sites of %1', label)} /> : null}
    </li>
  );
}

/**
 * Why the roles above differ from a cell's change by role (its badge): blocks
 * allocated before that changed role are in the one, not in the other.
 */
export function roleMovesText(moves: readonly IRoleMove[], trans: TranslationBundle): string {
  const each = moves.map(m =>
    trans.__('%1 from %2 to %3', formatBytes(m.bytes), trans.__(roleLabel(m.from)), trans.__(roleLabel(m.to)))
  );
  return trans.__(
    // Any two snapshots, not only a cell's: the badge is the change in totals of a cell against the one before.
    'Blocks allocated earlier changed role (%1): the roles above count only blocks born and freed, while the change in each role\u2019s total (a cell badge\u2019s figures) counts these too.',
    each.join(', ')
  );
}

/** The diff of two snapshots. */
export function DiffView(props: IDiffViewProps): JSX.Element {
  const { diff, groups, trans } = props;
  const byRole = props.grouping === 'role';
  return (
    <section className="jp-CudaMemdiffDiff" aria-label={trans.__('Block-level diff')}>
      <p className="jp-CudaMemdiffDiff-caption">{props.caption}</p>
      {props.differentRuns ? (
        <p className="jp-CudaMemdiffDiff-note jp-CudaMemdiffDiff-runs">
          {differentRunsText(props.differentRuns, trans)}
        </p>
      ) : null}
      <p className="jp-CudaMemdiffDiff-summary" role="status">
        {keepFiguresWhole(
          trans.__(
            'Born %1 in %2 blocks, freed %3 in %4 blocks, net %5',
            formatBytes(diff.bornBytes),
            formatCount(diff.born.length),
            formatBytes(diff.freedBytes),
            formatCount(diff.freed.length),
            formatBytes(diff.netBytes, true)
          )
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
      {props.onGrouping ? (
        <fieldset className="jp-CudaMemdiffDiff-grouping">
          <legend>{trans.__('Group by')}</legend>
          <label>
            <input
              type="radio"
              name="jp-CudaMemdiffDiff-grouping"
              checked={!byRole}
              onChange={() => props.onGrouping!('site')}
            />{' '}
            {trans.__('allocation site')}
          </label>
          <label>
            <input
              type="radio"
              name="jp-CudaMemdiffDiff-grouping"
              checked={byRole}
              onChange={() => props.onGrouping!('role')}
            />{' '}
            {trans.__('role, then site')}
          </label>
        </fieldset>
      ) : null}
      {byRole && !props.roleGroups ? (
        <p className="jp-CudaMemdiffDiff-note">
          {trans.__(
            'No per-block roles for these snapshots (a file, or a kernel that sent none): grouped by allocation site.'
          )}
        </p>
      ) : null}
      {!groups.length ? (
        <p>{trans.__('No allocated block changed.')}</p>
      ) : byRole && props.roleGroups ? (
        <ul className="jp-CudaMemdiffRoles" aria-label={trans.__('Roles')}>
          {props.roleGroups.map(r => (
            <RoleRow key={r.role} {...props} role={r} />
          ))}
        </ul>
      ) : (
        <SiteList {...props} sites={groups} label={trans.__('Allocation sites')} />
      )}
      {byRole && props.roleGroups && props.roleMoves?.length ? (
        <p className="jp-CudaMemdiffDiff-note jp-CudaMemdiffDiff-roleMoves">{roleMovesText(props.roleMoves, trans)}</p>
      ) : null}
    </section>
  );
}
