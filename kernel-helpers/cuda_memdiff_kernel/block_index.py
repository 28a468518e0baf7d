"""The allocated blocks by address, kept in step with the log's block table for the role pass.

The role pass joins tensors to blocks by address, after every cell. Reading
the whole table again each cell (40,000 rows) cost more than the walk
itself; a capture already says which blocks were born and freed, so the
index follows those changes and tells the pass which addresses they
touched. Without them (a replayed or recorded table, a capture the pass did
not see) it compares the tables row by row.
"""

import array
import bisect
import collections
import itertools
import operator

from .compact import ROW_ADDRESS, ROW_DEVICE, ROW_SIZE, ROW_STATE

_ADDRESS = operator.itemgetter(ROW_ADDRESS)
_DEVICE = operator.itemgetter(ROW_DEVICE)
_STATE = operator.itemgetter(ROW_STATE)
_KEY_ADDRESS = operator.itemgetter(1)  # of a (device, address) key
_ADDRESS_TYPE = "Q"  # unsigned 64-bit: a device address
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)

# What a capture changed in the log's block table: the version it started from, the born rows, the freed keys,
# the version it made. The log changes one table in place, so a version (SnapshotLog.version) names its state.
Changes = collections.namedtuple("Changes", "since born freed version")


class BlockIndex:
    """{address: block row} of the allocated blocks (no pending frees), and their wire order."""

    def __init__(self):
        self.version = None  # the version of the log's table last followed (None: not known)
        self.rows = {}
        self.replaced = {}  # address -> the row it had before the last update (changed or freed)
        # How the last update changed ``starts``: () not at all; None: not known (read afresh); else (kept,
        # inserts): ``kept``, the (start, stop) slices of the old starts that stay, in order; ``inserts``, the
        # (position in what stays, addresses) where new addresses go in, in order.
        self.edit = None
        self.inserted = frozenset()  # the addresses the last edit inserted
        # The addresses, sorted: an array of machine integers, whose slices are copied as bytes; a list's slices
        # touch the reference count of each address object (cache misses: 1.6 ms a cell at 40,000 blocks).
        self._starts = None
        self._order = None  # addresses in (device, address) order
        self._devices = set()

    def update(self, blocks, changes=None):
        """Follow ``blocks`` ({(device, address): row}); the set of addresses whose block changed.

        ``changes``: Changes, as the log's entry gives them; used when they
        start from the version followed last, else the rows are compared.
        """
        self.replaced, self.edit, self.inserted = {}, None, frozenset()
        if changes is not None and self.version is not None and changes.since == self.version:
            touched = self._apply(changes.born, changes.freed)
        else:
            touched = self._compare(blocks)
        self.version = None if changes is None else changes.version
        return touched

    def _apply(self, born, freed):
        """Follow a capture's born rows and freed keys: a few C calls over each list, a loop only for pending frees."""
        rows, replaced = self.rows, self.replaced
        freed_at = list(map(_KEY_ADDRESS, freed))
        old = list(map(rows.pop, freed_at, itertools.repeat(None)))
        gone = list(itertools.compress(freed_at, old))  # rows are non-empty tuples: only a missing one is false
        replaced.update(zip(gone, filter(None, old)))
        born_at = list(map(_ADDRESS, born))
        touched = set(freed_at)
        touched.update(born_at)
        old = list(map(rows.pop, born_at, itertools.repeat(None)))
        replaced.update(zip(itertools.compress(born_at, old), filter(None, old)))
        if any(map(_STATE, born)):  # pending frees are not allocated: row by row
            added = []
            for address, row, before in zip(born_at, born, old):
                if row[ROW_STATE] == 0:
                    rows[address] = row
                    self._devices.add(row[ROW_DEVICE])
                    if before is None:
                        added.append(address)
                elif before is not None:
                    gone.append(address)
        else:
            rows.update(zip(born_at, born))
            self._devices.update(map(_DEVICE, born))
            added = list(itertools.compress(born_at, map(operator.not_, old)))
        if not gone and not added:
            self.edit = ()
        elif self._starts is not None:
            self._splice(gone, added)
        else:
            self._order = None
        return touched

    def _splice(self, gone, added):
        """``starts`` less ``gone`` plus ``added``: a bisection per change and slices copied in C, not a sort.

        Blocks a cell frees or makes side by side (a list of tensors) make
        one slice or one insert, not one step each.
        """
        starts = self._starts
        gone_at = sorted(map(bisect.bisect_left, itertools.repeat(starts), gone))
        # The slices between two positions that go; those side by side leave an empty one, dropped.
        kept = [
            (start, stop)
            for start, stop in zip(
                itertools.chain((0,), map(operator.add, gone_at, itertools.repeat(1))),
                itertools.chain(gone_at, (len(starts),)),
            )
            if stop > start
        ]
        staying = _kept_slices(starts, kept)
        added = sorted(added)
        positions = map(bisect.bisect_left, itertools.repeat(staying), added)
        inserts = [
            (position, array.array(_ADDRESS_TYPE, map(_SECOND, group)))
            for position, group in itertools.groupby(zip(positions, added), _FIRST)
        ]
        new = _with_inserts(staying, inserts, lambda addresses: addresses)
        self._starts, self._order, self.edit, self.inserted = new, None, (kept, inserts), frozenset(added)

    def follow(self, marks, letters_of):
        """``marks`` (a bytearray, one byte per address in the old ``starts``) as the last update moved them.

        The inserted addresses get ``letters_of(addresses)`` (bytes); None when the update's edit is not known.
        """
        if self.edit is None:
            return None
        if not self.edit:
            return marks
        kept, inserts = self.edit
        return _with_inserts(_kept_slices(marks, kept), inserts, letters_of)

    @property
    def one_device(self):
        """All blocks on one device: ``order`` is ``starts``."""
        return len(self._devices) <= 1

    def _compare(self, blocks):
        values = list(blocks.values())
        if any(map(_STATE, values)):  # pending frees are not allocated
            values = [row for row in values if row[ROW_STATE] == 0]
        new = dict(zip(map(_ADDRESS, values), values))
        old = self.rows
        if old:
            get = old.get
            touched = new.keys() ^ old.keys()
            touched.update(a for a, row in new.items() if get(a, row) != row)
            self.replaced = {a: old[a] for a in touched if a in old}
        else:
            touched = set(new)
        self.rows = new
        self._devices = set(map(_DEVICE, values))
        if touched:
            self._starts = self._order = None
        return touched

    @property
    def order(self):
        """The addresses in (device, address) order: the order the frontend keeps a snapshot's blocks in."""
        if self._order is None:
            if not self.one_device:
                self._order = [a for _, a in sorted(zip(map(_DEVICE, self.rows.values()), self.rows))]
            else:
                self._order = self.starts
        return self._order

    @property
    def starts(self):
        """The addresses, sorted (built when first wanted after a change)."""
        if self._starts is None:
            self._starts = array.array(_ADDRESS_TYPE, sorted(self.rows))
        return self._starts

    def has_device(self, device):
        """Whether any block may lie on ``device`` (a CPU tensor needs no search)."""
        return device in self._devices

    def containing(self, device, address):
        """The address of the block ``address`` lies inside on ``device``, or None."""
        starts = self.starts
        i = bisect.bisect_right(starts, address) - 1
        if i < 0:
            return None
        row = self.rows[starts[i]]
        if row[ROW_DEVICE] != device or address >= row[ROW_ADDRESS] + row[ROW_SIZE]:
            return None
        return row[ROW_ADDRESS]


def _kept_slices(items, kept):
    """The (start, stop) slices ``kept`` of ``items`` (an array or a bytearray), one after another."""
    out = items[:0]
    for start, stop in kept:
        out += items[start:stop]
    return out


def _with_inserts(staying, inserts, fill):
    """``staying`` with ``fill(addresses)`` put in at each (position in ``staying``, addresses) of ``inserts``."""
    out, done = staying[:0], 0
    for position, addresses in inserts:
        out += staying[done:position]
        out += fill(addresses)
        done = position
    out += staying[done:]
    return out
