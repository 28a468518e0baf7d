/**
 * `--by role`: the CLI's renderings of memory by role (parameter, gradient,
 * optimizer state, activation, ...), for `session` and `diff`; and where a
 * recorded snapshot's roles are found.
 */
import * as path from 'path';
import {
  BlockRoles,
  CellCodeNames,
  formatBytes,
  ICellReport,
  ICellRoles,
  IDecodeLimits,
  IFrameFilterOptions,
  IRoleGroup,
  IRoleMove,
  ISessionCell,
  ROLES,
  SnapshotDiff,
  SnapshotError,
  sessionRoles
} from '../engine';
import {
  CELL_COLUMNS,
  cellColumns,
  changeColumns,
  changeRow,
  diffHeadText,
  groupJson,
  restartNote,
  siteLabel
} from './report';
import { inFolder, ManifestsBeside, readFolderFile } from './files';
import { ITableNote, renderTable } from './table';

/**
 * `session --by role` for people: per cell, the bytes alive after it by role
 * (roles that are ever non-zero); `entries` are the manifest's cells of the
 * reports. A last `roles` column says where a cell's roles fall short (not
 * recorded, or a pass that ran out of time), and only where one does.
 */
export function sessionRolesText(
  reports: ICellReport[],
  entries: readonly ISessionCell[],
  roles: readonly (ICellRoles | null)[]
): string {
  const shown = ROLES.filter(role => roles.some(r => r && r.bytes[role] > 0));
  const note = (cell: ICellRoles | null) =>
    cell === null ? 'not recorded' : cell.partial ? 'partial (ran out of time: the rest is unknown)' : '';
  const notes = roles.some(cell => note(cell) !== '');
  const rows: (string[] | ITableNote)[] = [];
  reports.forEach((r, k) => {
    if (r.afterRestart) {
      rows.push(restartNote(r.kernelSession));
    }
    const cell = roles[k];
    rows.push([
      ...cellColumns(entries[k]),
      formatBytes(r.allocatedBytes),
      ...shown.map(role => (cell ? formatBytes(cell.bytes[role]) : '')),
      ...(notes ? [note(cell)] : [])
    ]);
  });
  return renderTable(
    [
      ...CELL_COLUMNS,
      { header: 'allocated', right: true },
      ...shown.map(role => ({ header: role, right: true })),
      ...(notes ? [{ header: 'roles' }] : [])
    ],
    rows
  );
}

/** `diff --by role --json`: each role's change and its sites. */
export function diffRolesJson(
  diff: SnapshotDiff,
  groups: readonly IRoleGroup[],
  options: IFrameFilterOptions,
  cells?: CellCodeNames,
  moves: readonly IRoleMove[] = []
) {
  return {
    born_bytes: diff.bornBytes,
    freed_bytes: diff.freedBytes,
    net_bytes: diff.netBytes,
    roles: groups.map(g => ({
      role: g.role,
      born_bytes: g.bornBytes,
      freed_bytes: g.freedBytes,
      net_bytes: g.netBytes,
      blocks: g.count,
      sites: g.sites.map(s => groupJson(diff.frames, s, options, cells))
    })),
    role_moves: moves.map(m => ({ from: m.from, to: m.to, bytes: m.bytes, blocks: m.count }))
  };
}

/** `diff --by role` for people: diff's opening line, then a line per role, its top sites under it (named as diffText names them). */
export function diffRolesText(
  diff: SnapshotDiff,
  groups: readonly IRoleGroup[],
  cells?: CellCodeNames,
  moves: readonly IRoleMove[] = []
): string {
  const head = diffHeadText(diff);
  // As the panel's note under its roles says it (diffview's roleMovesText).
  const moved = moves.length
    ? [
        '',
        `blocks allocated earlier changed role (${moves.map(m => `${formatBytes(m.bytes)} from ${m.from} to ${m.to}`).join(', ')}): ` +
          "the roles above count only blocks born and freed; each role's total (session --by role) counts these too"
      ]
    : [];
  if (!groups.length) {
    return [`${head}\nno allocated block changed`, ...moved].join('\n');
  }
  const rows: string[][] = [];
  for (const g of groups) {
    rows.push(changeRow(g, g.role));
    g.sites.slice(0, 5).forEach(s => rows.push(changeRow(s, `  ${siteLabel(diff.frames, s.frameId, cells, s.run)}`)));
  }
  return [head, '', renderTable(changeColumns('role / allocation site'), rows), ...moved].join('\n');
}

/**
 * The per-block roles recorded for a snapshot file of a session folder: the
 * folder's manifest.json (from `manifests`, which reads it once) names the file
 * and its cell's `roles_file`.
 */
export function rolesBeside(file: string, manifests: ManifestsBeside, limits: IDecodeLimits): BlockRoles {
  const dir = path.dirname(file);
  const why = `${file}: no roles recorded for it (--by role needs snapshots of a session folder recorded with roles)`;
  const manifest = manifests(file);
  if (!manifest) {
    throw new SnapshotError(why);
  }
  const k = manifest.cells.findIndex(c => c.snapshot_file === path.basename(file));
  const read = (name: string) => readFolderFile(path.join(dir, name), limits);
  // "cell02.roles.json: cannot be read ..." names no folder: the files given may lie far from the working one.
  const roles =
    k < 0 ? null : inFolder(dir, () => sessionRoles({ cells: [manifest.cells[k]] }, read)[0], 'a file inside');
  if (!roles?.blocks) {
    throw new SnapshotError(why);
  }
  return roles.blocks;
}
