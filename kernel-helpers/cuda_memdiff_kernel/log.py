"""The kernel's bounded log of the session's snapshots, kept as changes.

Frontends attach at any time (a second view, a reloaded page, another
notebook on the same kernel): each gets the kept snapshots on attach, the
oldest whole and the rest as the blocks born and freed since the one before.
The log holds the block table at its oldest and at its newest snapshot plus
the changes in between, so a session of 200 snapshots costs about two tables
and what the cells changed, not 200 tables.
"""
import collections

from . import protocol
from .compact import FrameTable, read_state

Entry = collections.namedtuple("Entry", "seq prev fields segments born freed")

# Beyond this many kept rows (blocks in the oldest table plus every change), the oldest snapshots go.
DEFAULT_MAX_ROWS = 2_000_000


class _State(collections.namedtuple("_State", "entries base current rows")):
    """Replaced whole on each change, so an interrupt leaves the old or the new state, never half."""


class SnapshotLog:
    """Snapshots of this kernel, oldest first, bounded by count and by kept rows."""

    def __init__(self, max_entries=protocol.DEFAULT_SETTINGS["snapshots_kept"], max_rows=DEFAULT_MAX_ROWS):
        self.table = FrameTable()
        self.max_entries = max(1, int(max_entries))
        self.max_rows = max_rows
        self.dropped = 0
        self._next_seq = 1
        self._state = _State((), {}, {}, 0)

    @property
    def entries(self):
        return self._state.entries

    @property
    def base(self):
        """The block table at the oldest kept snapshot."""
        return self._state.base

    @property
    def current(self):
        """The block table at the newest snapshot."""
        return self._state.current

    def add(self, raw, **fields):
        """Keep a raw snapshot with its message fields; returns the new entry."""
        segments, blocks = read_state(raw, self.table)
        state = self._state
        old = state.current
        born = [row for key, row in blocks.items() if old.get(key) != row]
        freed = [key for key in old if key not in blocks]
        prev = state.entries[-1].seq if state.entries else None
        entry = Entry(self._next_seq, prev, fields, segments, born, freed)
        if state.entries:
            new = _State(state.entries + (entry,), state.base, blocks, state.rows + len(born) + len(freed))
        else:
            new = _State((entry,), blocks, blocks, len(blocks))
        new, dropped = self._trim(new)
        self._state, self._next_seq = new, self._next_seq + 1
        self.dropped += dropped
        return entry

    def _trim(self, state):
        dropped = 0
        while len(state.entries) > 1 and (len(state.entries) > self.max_entries or state.rows > self.max_rows):
            first, second = state.entries[0], state.entries[1]
            base = dict(state.base)
            for key in second.freed:
                base.pop(key, None)
            for row in second.born:
                base[(row[0], row[1])] = row
            rows = state.rows - len(state.base) - len(second.born) - len(second.freed) + len(base)
            head = Entry(second.seq, None, second.fields, second.segments, list(base.values()), [])
            state = _State((head,) + state.entries[2:], base, state.current, rows)
            dropped += 1
            del first
        return state, dropped
