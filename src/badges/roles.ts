/**
 * The badge tooltip's part about roles: what the memory a cell left behind
 * is for (parameters, gradients, optimizer state, activations, ...). Pure.
 */
import { formatBytes, IRoleMove, roleLabel, ROLES } from '../engine';
import { CellRecord } from '../capture/store';

/** Roles shown by name in the tooltip; the rest are summed as "other roles". */
const MAX_ROLES_SHOWN = 5;

/**
 * Lines for the tooltip: the cell's net change by role, largest change
 * first, with the blocks allocated earlier that changed role (`moves`, from
 * the store's roleMovesOf), and what stays after it by role; none when the
 * kernel sent no roles.
 */
export function roleLines(record: CellRecord, moves: readonly IRoleMove[] | null = null): string[] {
  const roles = record.roles;
  if (!roles) {
    return [];
  }
  const lines: string[] = [];
  const net = record.roleNetBytes;
  if (net) {
    const changed = ROLES.filter(r => net[r] !== 0).sort((a, b) => Math.abs(net[b]) - Math.abs(net[a]));
    const shown = changed.slice(0, MAX_ROLES_SHOWN).map(r => `${formatBytes(net[r], true)} ${roleLabel(r)}`);
    const rest = changed.slice(MAX_ROLES_SHOWN).reduce((n, r) => n + net[r], 0);
    if (changed.length > MAX_ROLES_SHOWN) {
      shown.push(`${formatBytes(rest, true)} other roles`);
    }
    lines.push(`By role: ${shown.length ? shown.join(', ') : 'no change'}.`);
    if (moves?.length) {
      // Else the diff by role, which sees only blocks born and freed, seems to contradict this line.
      const each = moves.map(m => `${formatBytes(m.bytes)} from ${roleLabel(m.from)} to ${roleLabel(m.to)}`);
      lines.push(
        `Of it, blocks allocated earlier changed role: ${each.join(', ')} (the diff by role counts only blocks born and freed).`
      );
    }
  }
  const held = ROLES.filter(r => roles.bytes[r] > 0).sort((a, b) => roles.bytes[b] - roles.bytes[a]);
  if (held.length) {
    lines.push(`After it: ${held.map(r => `${formatBytes(roles.bytes[r])} ${roleLabel(r)}`).join(', ')}.`);
  }
  if (roles.partial) {
    lines.push('Roles are partial: the kernel ran out of time and called what it did not reach unknown.');
  }
  return lines;
}
