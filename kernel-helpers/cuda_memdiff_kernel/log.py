"""The kernel's bounded log of the session's snapshots, kept as changes.

Frontends attach at any time (a second view, a reloaded page, another
notebook on the same kernel): each gets the kept snapshots on attach, the
oldest whole and the rest as the blocks born and freed since the one before.
The log holds the block table at its oldest and at its newest snapshot plus
the changes in between, so a session of 200 snapshots costs about two tables
and what the cells changed, not 200 tables.
"""

import collections
import contextlib
import gc

from . import protocol
from .compact import FrameTable, read_history
from .reader import SnapshotReader

# history: None, or (trace columns since the previous capture, {"since_us", "until_us", "complete", "dropped"}).
Entry = collections.namedtuple("Entry", "seq prev fields segments born freed history")

# Beyond this many kept rows (blocks in the oldest table plus every change), the oldest snapshots go.
DEFAULT_MAX_ROWS = 2_000_000
# At most this many trace entries per snapshot (the newest); a cell that made more says it dropped some.
MAX_HISTORY_ENTRIES = 100_000


@contextlib.contextmanager
def collector_paused():
    """The garbage collector off, then as it was.

    A snapshot is one dict per block and reading it one tuple per block: with
    the collector on, those allocations trigger collections that walk every
    object of the kernel again and again, and find nothing (none is in a cycle).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class _State(collections.namedtuple("_State", "entries base current rows")):
    """Replaced whole on each change, so an interrupt leaves the old or the new state, never half.

    ``current``, the newest table, is the one object changed in place (a copy
    of 100,000 rows costs several ms a cell); an add that is interrupted puts
    its rows back (SnapshotReader.undo).
    """


class SnapshotLog:
    """Snapshots of this kernel, oldest first, bounded by count and by kept rows."""

    def __init__(self, max_entries=protocol.DEFAULT_SETTINGS["snapshots_kept"], max_rows=DEFAULT_MAX_ROWS):
        self.table = FrameTable()
        self._reader = SnapshotReader(self.table)
        self.max_entries = max(1, int(max_entries))
        self.max_rows = max_rows
        self.dropped = 0
        self._next_seq = 1
        self._state = _State((), {}, {}, 0)
        self._reading = None  # the state an add was reading against: its read is undone unless the add kept it
        self._marks = {}  # device -> the last trace entry the previous capture saw
        self._until_us = None

    @property
    def entries(self):
        return self._state.entries

    @property
    def base(self):
        """The block table at the oldest kept snapshot."""
        return self._state.base

    @property
    def current(self):
        """The block table at the newest snapshot: the same dict from one snapshot to the next, changed in place
        (``version`` tells its states apart)."""
        return self._state.current

    @property
    def version(self):
        """Which snapshot ``current`` is at: the newest entry's seq (None before the first)."""
        entries = self._state.entries
        return entries[-1].seq if entries else None

    def add(self, raw, allocations=None, **fields):
        """Keep a raw snapshot with its message fields; returns the new entry.

        ``allocations``: the allocator's count of allocations, read just before
        ``raw`` was taken (torch_probe.allocation_count); it spares reading
        blocks that cannot have changed (reader.py).
        """
        state = self._state
        self._settle()
        try:
            self._reading = state
            with collector_paused():
                segments, blocks, born, freed = self._reader.read(raw, state.current, allocations)
                history = self._history(raw)
            entry = Entry(self._next_seq, self.version, fields, segments, born, freed, history)
            traced = len(history[0]["device"]) if history else 0
            if state.entries:
                rows = state.rows + len(born) + len(freed) + traced
                new = _State(state.entries + (entry,), state.base, blocks, rows)
            else:  # the base is a copy: the reader changes the newest table in place
                new = _State((entry,), dict(blocks), blocks, len(blocks) + traced)
            new, dropped = self._trim(new)
            self._next_seq += 1
            self._state = new
        except BaseException:
            while True:  # a second interrupt while the rows go back: put them back again (the undo can be rerun)
                try:
                    self._settle()
                    break
                except KeyboardInterrupt:
                    continue
            raise
        self.dropped += dropped
        return entry

    def _settle(self):
        """Undo the read of an add that did not keep its snapshot (an interrupt, even one inside the undo:
        the next add settles it), forget the read of one that did."""
        if self._reading is None:
            return
        if self._reading is self._state:
            self._reader.undo(self._state.current)
        else:
            self._reader.keep()
        self._reading = None

    def _history(self, raw):
        """The trace entries since the previous capture, when this one read the history; else None.

        A capture without traces breaks the chain: the next traced one cannot
        tell which entries are new, so it starts over and says so with a
        ``since_us`` of None, which links it to no snapshot but an empty first
        one (the engine's historyBetween).
        """
        traces = raw.get("device_traces") if isinstance(raw, dict) else None
        if not traces:
            self._marks, self._until_us = {}, None
            return None
        cols, marks, complete, dropped = read_history(raw, self.table, self._marks, MAX_HISTORY_ENTRIES)
        since = self._until_us
        until = max((m[0] for m in marks.values() if m[0] is not None), default=since)
        self._marks, self._until_us = marks, until
        info = {
            "since_us": since,
            "until_us": until,
            "complete": complete,
            "dropped": dropped,
        }
        return cols, info

    def _trim(self, state):
        dropped = 0
        while len(state.entries) > 1 and (len(state.entries) > self.max_entries or state.rows > self.max_rows):
            first, second = state.entries[0], state.entries[1]
            base = dict(state.base)
            for key in second.freed:
                base.pop(key, None)
            for row in second.born:
                base[(row[0], row[1])] = row
            rows = (
                state.rows
                - len(state.base)
                - len(second.born)
                - len(second.freed)
                + len(base)
                - (len(first.history[0]["device"]) if first.history else 0)
            )
            head = Entry(second.seq, None, second.fields, second.segments, list(base.values()), [], second.history)
            state = _State((head,) + state.entries[2:], base, state.current, rows)
            dropped += 1
            del first
        return state, dropped
