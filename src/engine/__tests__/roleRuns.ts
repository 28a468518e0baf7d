// Test helper: a recorded roles file (cellNN.roles.json) as the kernel's wire runs (roles.py `block_runs`).
import { ROLES } from '..';
import { ROLE_CODES } from '../protocol.generated';

/** The columns of a `cellNN.roles.json`. */
export interface IRolesFile {
  device: number[];
  address: number[];
  role: string[];
}

/** The runs the kernel sends for these blocks: device and address order, `3a` for three of the first role. */
export function runsOf(file: IRolesFile): { count: number; runs: string } {
  const order = file.role
    .map((role, i) => ({ role, device: file.device[i], address: file.address[i] }))
    .sort((a, b) => a.device - b.device || a.address - b.address);
  let runs = '';
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j < order.length && order[j].role === order[i].role) {
      j++;
    }
    runs += `${j - i > 1 ? j - i : ''}${ROLE_CODES[ROLES.indexOf(order[i].role)]}`;
    i = j;
  }
  return { count: order.length, runs };
}
