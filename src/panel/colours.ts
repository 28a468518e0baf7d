/**
 * The segment map's colours for cells (or allocation sites) that stay with
 * their group across a session's snapshots: stepping from one cell's map to
 * the next, Cell [1] keeps its colour, so a person can follow its blocks.
 * The assignment is a pure function; GroupColours remembers what it gave,
 * and the panel model keeps one for the notebook it follows.
 */

/** Groups with a colour of their own in one map; the rest share the neutral "other" colour. */
export const GROUP_COLOURS = 5;

/**
 * Give each shown group, largest first, one of `count` colours (0 to
 * count - 1), all different: the colour it was given before, unless a larger
 * shown group keeps that one; else a colour no group was given yet, else the
 * first one free. Groups after the first `count` get none.
 */
export function keepColours(
  shown: readonly string[],
  given: ReadonlyMap<string, number>,
  count: number
): Map<string, number> {
  const groups = shown.slice(0, count);
  const colours = new Map<string, number>();
  const taken = new Set<number>();
  for (const group of groups) {
    const before = given.get(group);
    if (before !== undefined && before < count && !taken.has(before)) {
      colours.set(group, before);
      taken.add(before);
    }
  }
  // A new group takes a colour nobody had, so no group seen earlier seems to come back under another's colour.
  const used = new Set(given.values());
  const free = [...Array(count).keys()].filter(c => !taken.has(c));
  const fresh = free.filter(c => !used.has(c));
  const stale = free.filter(c => used.has(c));
  const next = [...fresh, ...stale];
  for (const group of groups) {
    if (!colours.has(group)) {
      colours.set(group, next.shift()!);
    }
  }
  return colours;
}

/** The colours given to groups in one session: the same group gets the same colour in each of its snapshots. */
export class GroupColours {
  constructor(readonly count: number = GROUP_COLOURS) {}

  /**
   * The colours of a snapshot's shown groups (largest first; see
   * keepColours), remembered for the next snapshot. Asking again for the
   * same groups gives the same colours.
   */
  colour(shown: readonly string[]): Map<string, number> {
    const colours = keepColours(shown, this._given, this.count);
    colours.forEach((colour, group) => this._given.set(group, colour));
    return colours;
  }

  /** Forget every group: another notebook's session starts afresh. */
  clear(): void {
    this._given.clear();
  }

  // At most `count` groups per snapshot shown: bounded by the session's snapshots.
  private readonly _given = new Map<string, number>();
}
