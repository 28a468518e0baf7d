/**
 * The segment map's colours for cells (or allocation sites), as a pure
 * function of what a snapshot shows and of the notebook: not of the order a
 * person viewed snapshots in, nor of anything the page remembers, so Cell [1]
 * has one colour in each of the session's snapshots, and the same one after a
 * reload. A cell's colour follows its place among the notebook's code cells
 * (neighbours, often shown together, differ); a group with no place (an
 * allocation site, a deleted cell's code) has its key's hash. Nothing is
 * kept: JupyterLab keeps no state of this panel, and an order of cells by
 * their first run would change after a reload (the kernel sends again only
 * the snapshots it still keeps, and none of an earlier kernel's).
 */
import { murmur2 } from '../engine';

/** Groups with a colour of their own in one map; the rest share the neutral "other" colour. */
export const GROUP_COLOURS = 5;

/**
 * Give each shown group, largest first, one of `count` colours (0 to
 * count - 1), all different: its place (`placeOf`) modulo `count`, or where
 * it has none its key's hash; unless a larger shown group has that colour,
 * then the next one free after it. Groups after the first `count` get none.
 * Two groups of one colour (cells 1 and 6) so differ only in the maps that
 * show both.
 */
export function groupColours(
  shown: readonly string[],
  placeOf: (group: string) => number | undefined = () => undefined,
  count: number = GROUP_COLOURS
): Map<string, number> {
  const colours = new Map<string, number>();
  const taken = new Set<number>();
  for (const group of shown.slice(0, count)) {
    let colour = (placeOf(group) ?? murmur2(group)) % count;
    while (taken.has(colour)) {
      colour = (colour + 1) % count;
    }
    colours.set(group, colour);
    taken.add(colour);
  }
  return colours;
}
