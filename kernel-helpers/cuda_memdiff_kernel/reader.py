"""Each raw snapshot read against the one before, reading block by block only what changed.

Reading a block in Python costs about 1-2 µs (its fields, its stack, a row),
while torch's own snapshot costs about 1 µs a block, so reading every block
after every cell more than doubled a cell's capture. The allocator counts its
allocations per device and pool (``memory_stats()['allocation.small_pool.allocated']``
and ``large_pool``); with those counts read before each snapshot, the reader
knows how much can have changed in each pool:

- no allocation in a pool since the last snapshot: its blocks can only have
  been freed, and a free changes its segment's allocated, active or requested
  bytes, so a segment whose totals are the same is the same (no block is
  looked at);
- allocations, each one a block that is new by size, requested size or state
  (torch lists a segment's blocks back to back, so sizes give addresses): only
  those blocks are read; each segment whose totals changed costs three lists
  made in C, compared with the ones kept. The segments whose totals are the
  same are looked at only when the changed ones do not show every allocation
  of their pool: a cell that keeps or replaces a few blocks touches a few
  segments of many;
- more allocations than new blocks in a pool (temporaries, or a block freed
  and allocated again at the same address, maybe from another line): a
  block's stack may have changed where nothing else did, so the pool's blocks
  get a stack check (_StackCheck) and the blocks whose stack changed are read
  too.

Without a count (a replayed session, an OOM snapshot, a torch without the
counter) or after a snapshot the log did not keep, every block is read.
"""

import collections
import itertools
import operator

from .compact import (
    ROW_ADDRESS,
    ROW_DEVICE,
    ROW_STACK,
    STATE_CODES,
    read_blocks,
    read_segment,
    read_segment_tuple,
    segment_order,
)

_SIZE = operator.itemgetter("size")
_REQUESTED = operator.itemgetter("requested_size")
_STATE_NAME = operator.itemgetter("state")
_ALLOCATED = "active_allocated"
_FRAMES = operator.itemgetter("frames")


def _segment_key(seg):
    return seg.get("device", 0), seg["address"]


def _pool(seg):
    """The allocator's count a segment's allocations go to: its device's small or large pool."""
    return int(seg.get("device", 0)), seg["segment_type"]


def _one_pool(seg):
    return None


def _segment_meta(seg):
    """What a segment is, and the totals any free in it changes."""
    return (
        seg.get("total_size"),
        seg.get("stream"),
        seg.get("segment_type"),
        seg.get("segment_pool_id"),
        seg.get("allocated_size"),
        seg.get("active_size"),
        seg.get("requested_size"),
        len(seg["blocks"]),
    )


def _columns(raw_blocks):
    """Sizes, requested sizes and states of a segment's blocks: three lists made in C, no tuple per block."""
    return list(map(_SIZE, raw_blocks)), list(map(_REQUESTED, raw_blocks)), list(map(_STATE_NAME, raw_blocks))


class _Kept:
    """One segment as last read: its meta, its blocks' columns, its segment tuple, its blocks' stack marks
    (_StackCheck.marks; None until a stack check made them) and its layout tuples (made when needed)."""

    __slots__ = ("meta", "columns", "segment", "marks", "_layout", "runs")

    def __init__(self, meta, columns, segment, marks=None, layout=None, runs=None):
        self.meta, self.columns, self.segment, self.marks, self._layout = meta, columns, segment, marks, layout
        self.runs = runs  # _anchor_runs of the marks, made when _StackCheck._unchanged first needs them

    def layout(self):
        """(address, size, requested size, state) of each block, the blocks lying back to back."""
        if self._layout is None:
            self._layout = _layout_span(self.columns, 0, len(self.columns[0]), self.segment[1])
        return self._layout


# A changed segment: the indices of its blocks to read (fresh; None: all, a new segment), the old layout tuples
# that went, the span its layout changed in ((start, new end, old end); None: it did not), its stack marks.
_Plan = collections.namedtuple("_Plan", "key seg meta pool columns fresh went changed marks")


def _changed_layout(key, seg, meta, pool, columns, old, marks):
    """(plan, allocations it shows) for a segment whose columns differ from the kept ones.

    Only the span between the longest common start and end is compared by
    layout tuple: a cell changes a few blocks of a segment of thousands. The
    blocks around it lie at the same addresses (the sizes before them, and
    after them up to the segment's end, are the same).
    """
    start, new_end, old_end = _changed_span(columns, old.columns, meta[0] == old.meta[0])
    address = old.segment[1] + sum(columns[0][:start])
    now = _layout_span(columns, start, new_end, address)
    was = _layout_span(old.columns, start, old_end, address)
    was_set, now_set = set(was), set(now)
    fresh = list(itertools.compress(range(start, new_end), map(operator.not_, map(was_set.__contains__, now))))
    went = list(itertools.filterfalse(now_set.__contains__, was))
    # Only an allocation makes a block allocated; one that went pending (freed on another stream) is new
    # by state with no allocation behind it.
    allocated = list(map(columns[2].__getitem__, fresh)).count(_ALLOCATED)
    # The kept lists' numbers around the span stay (the same values): freeing them, thousands a segment, cost
    # more than the splice.
    columns = tuple(o[:start] + c[start:new_end] + o[old_end:] for c, o in zip(columns, old.columns))
    return _Plan(key, seg, meta, pool, columns, fresh, went, (start, new_end, old_end), marks), allocated


def _changed_span(now, was, same_total):
    """(start, end in now, end in was): the blocks outside [start, end) are the same in both column sets."""
    n, m = len(now[0]), len(was[0])
    start = _common(now, was, min(n, m), lambda column, k: column[:k], iter)
    # a common end lies at the same addresses only in a segment of the same size (an expandable one grows)
    end = (
        _common(now, was, min(n, m) - start, lambda column, k: column[len(column) - k :], reversed) if same_total else 0
    )
    return start, n - end, m - end


def _common(now, was, limit, part, order):
    """How many blocks, at most ``limit``, in the given order (iter: from the start; reversed: from the end) have
    the same columns. States first (an allocation or a free changes one): a lazy pass in C to the first
    difference; each other column is compared as one slice in C, and scanned only where that slice differs."""
    for k, (a, b) in enumerate(zip(reversed(now), reversed(was))):
        if k and part(a, limit) == part(b, limit):
            continue
        differs = itertools.compress(itertools.count(), map(operator.ne, itertools.islice(order(a), limit), order(b)))
        limit = next(differs, limit)
    return limit


def _layout_span(columns, start, end, address):
    """Layout tuples of blocks [start, end), the first at ``address``."""
    sizes, requested, states = (column[start:end] for column in columns)
    return list(zip(itertools.accumulate(sizes[:-1], initial=address), sizes, requested, states))


class SnapshotReader:
    """Reads raw snapshots into (segments, blocks) and the blocks born and freed since the previous read."""

    def __init__(self, table):
        self.table = table
        self._made = None  # the block table the last read returned (the log's, changed in place since)
        self._undo = None  # (keys to drop, {key: row} to put back): the last read's changes to the table it was given
        self._segments = {}  # (device, address) -> _Kept
        self._allocations = None  # the allocator's counts at the last read
        self._stacks_seen = 1  # the table's stacks already folded into _shared and _distances
        self._shared = None  # the outermost frame ids all stacks so far share, outermost first
        self._distances = [0]  # per stack id: its cell frame's distance from the outer end; 0: not a cell's
        self._cells_seen = False  # whether any stack came through IPython's run_code
        self._live = collections.Counter()  # a cell frame's distance -> how many live blocks have it there
        self._live_changes = []  # (+1 or -1, stack ids of rows born or gone) not yet counted in _live
        self._anchor_depth = 0  # the anchor is frames[-k] (innermost first); 0: none yet
        self.signatures = _Signatures(table)

    def read(self, raw, current, allocations=None):
        """(segments, blocks, born rows, freed keys) of ``raw`` against ``current``, the log's last table.

        ``allocations``: the allocator's counts of allocations so far, read
        just before ``raw`` was taken: {(device, "small" or "large"): count or
        (count, offset) or (count, offset, frees)} (torch_probe.counted_snapshot),
        or one count for all; None when unknown.

        ``blocks`` is ``current`` itself, changed in place, where ``current``
        is the table this reader returned last (a copy of 100,000 rows costs
        several ms a cell); else a new table. undo() puts ``current`` back.
        """
        raw_segments = raw["segments"] if isinstance(raw, dict) else raw
        self._undo = None
        since = None
        if current is self._made and self._made is not None:
            since = _since(allocations, self._allocations)
        result = None
        if since is not None:
            try:
                pool = _one_pool if isinstance(allocations, int) else _pool
                frees = _frees(allocations, self._allocations)
                result = self._read_changed(raw_segments, current, since, frees, pool)
            except (KeyError, TypeError, AttributeError):  # a torch before 2.1, or a hand-made snapshot
                result = None
        if result is None:
            result = self._read_all(raw_segments, current)
        self._allocations = allocations if self._made is not None else None
        return result

    def undo(self, current):
        """Put back the rows the last read changed in ``current`` (the log could not keep its snapshot: an
        interrupt); the next read reads every block. Idempotent: an interrupted undo can be run again."""
        self._segments, self._made, self._allocations = {}, None, None
        if self._undo:
            drop, rows = self._undo
            collections.deque(map(current.pop, drop, itertools.repeat(None)), 0)
            current.update(rows)
        self._undo = None

    def keep(self):
        """The log kept the last read: nothing of it is to be undone."""
        self._undo = None

    def _read_all(self, raw_segments, current):
        segments, blocks, kept, ids = [], {}, {}, {}
        for seg in raw_segments:
            segment, _ = read_segment(seg, self.table, ids, blocks)
            segments.append(segment)
            if kept is not None:
                try:
                    raw_blocks = seg["blocks"]
                    if raw_blocks and "address" not in raw_blocks[0]:
                        raise KeyError("address")  # a torch before 2.1: blocks may not lie back to back
                    kept[_segment_key(seg)] = _Kept(_segment_meta(seg), _columns(raw_blocks), segment)
                except (KeyError, TypeError, AttributeError):  # no layout to compare the next one with
                    kept = None
        segments.sort(key=segment_order)
        born = [row for key, row in blocks.items() if current.get(key) != row]
        freed = [key for key in current if key not in blocks]
        if kept is None or len(kept) != len(raw_segments):
            self._segments, self._made = {}, None  # nothing to compare the next one with
        else:
            self._segments, self._made = kept, blocks
        self._live.clear()
        self._live_changes = [(1, list(map(_ROW_STACK, blocks.values())))]
        return segments, blocks, born, freed

    def _read_changed(self, raw_segments, current, since, frees, pool_of):
        before = self._segments
        kept, changed, same_totals = {}, [], []
        for seg in raw_segments:
            key = _segment_key(seg)
            old = before.get(key)
            meta = _segment_meta(seg)
            pool = pool_of(seg)
            allocated = since.get(pool)
            if allocated is None:
                return None  # a pool the counts do not cover
            if old is not None and old.meta == meta:
                if allocated == 0:
                    kept[key] = old
                else:
                    same_totals.append((key, seg, meta, old, pool))
            else:
                changed.append((key, seg, meta, old, pool))
        changed_keys = {key for key, _, _, _, _ in itertools.chain(changed, same_totals)}
        if len(kept) + len(changed_keys) != len(raw_segments):
            return None  # one segment listed twice
        gone = [old for key, old in before.items() if key not in kept and key not in changed_keys]
        if not changed and not same_totals and not gone:
            self._segments = kept
            return sorted((k.segment for k in kept.values()), key=segment_order), current, [], []
        # Each changed segment: which of its blocks are new, the old ones that went, and its blocks' stack
        # marks. In a pool where blocks were freed and others allocated, the marks are made at once, while the
        # segment's block dicts are fresh in the CPU's cache (a pass over them costs several times more once
        # they are not): a block may have been allocated again where one was freed. Without a free, none was.
        stacks = _StackCheck(self, current)
        new_blocks = dict.fromkeys(since, 0)
        plans = [self._plan(changing, stacks, since, frees, new_blocks) for changing in changed]
        # A segment whose totals are the same in a pool that made allocations: it is read only where the pool's
        # changed segments do not hold them all. Every allocation since makes one new allocated block (only an
        # allocation makes a block allocated), and a segment with no allocation in it and the same totals had no
        # free either: its blocks are the same.
        short = {pool for pool, count in since.items() if new_blocks[pool] != count}
        for same in same_totals:
            if same[4] in short:
                plans.append(self._plan(same, stacks, since, frees, new_blocks))
            else:
                kept[same[0]] = same[3]
        doubtful = {pool for pool, count in since.items() if new_blocks[pool] != count}
        # More allocations than new blocks: some landed where a block of the same layout was freed, maybe from
        # other code. Read again each block whose stack is not its row's.
        plans = [
            stacks.read_again(p, before.get(p.key)) if p.pool in doubtful else stacks.kept(p, before.get(p.key))
            for p in plans
        ]
        went = {}  # keys of the rows whose blocks went; those not read again were freed
        for old in gone:
            went.update(dict.fromkeys(_keys(old)))
        for plan in plans:
            device = int(plan.seg.get("device", 0))
            went.update(dict.fromkeys((device, item[0]) for item in plan.went if item[3] in STATE_CODES))
        if not all(map(current.__contains__, went)):
            return None  # a table that is not this layout's: read every block
        born, ids, rows = [], {}, {}
        for plan in plans:
            old, seg = before.get(plan.key), plan.seg
            # The segment itself may have been given back and made again at its address (by another cell, on
            # another stream): its tuple is read again, one per segment.
            segment = read_segment_tuple(seg, self.table)
            if old is not None and old.segment == segment:
                segment = old.segment
            if old is not None and not plan.went and not plan.fresh:  # the same blocks
                runs = old.runs if plan.marks is old.marks else None
                kept[plan.key] = _Kept(plan.meta, plan.columns, segment, plan.marks, old._layout, runs)
                continue
            device, seg_address = int(seg.get("device", 0)), int(seg["address"])
            raw_blocks = seg["blocks"] if plan.fresh is None else map(seg["blocks"].__getitem__, plan.fresh)
            for block in read_blocks(raw_blocks, device, seg_address, self.table, ids, rows):
                went.pop(block, None)
                row = rows[block]
                if row != current.get(block):
                    born.append(row)
            layout = old._layout if plan.changed is None and old is not None else None  # made again when needed
            kept[plan.key] = _Kept(plan.meta, plan.columns, segment, plan.marks, layout)
        freed = list(went)
        born_keys = list(map(_ROW_KEY, born))
        drop = [key for key in born_keys if key not in current]
        self._undo = (drop, {key: current[key] for key in itertools.chain(born_keys, freed) if key in current})
        self._live_changes += ((1, list(map(_ROW_STACK, born))), (-1, list(map(_ROW_STACK, self._undo[1].values()))))
        collections.deque(map(current.__delitem__, freed), 0)
        current.update(zip(born_keys, born))
        self._segments, self._made = kept, current
        return sorted((k.segment for k in kept.values()), key=segment_order), current, born, freed

    @staticmethod
    def _plan(changing, stacks, since, frees, new_blocks):
        """The _Plan of a segment read against its kept self; adds the allocations its new blocks show to
        ``new_blocks``."""
        key, seg, meta, old, pool = changing
        raw_blocks = seg["blocks"]
        columns = _columns(raw_blocks)
        marks = stacks.marks(raw_blocks, old) if since[pool] and frees.get(pool) != 0 else None
        if old is None:  # a new segment: every block is read
            new_blocks[pool] += columns[2].count(_ALLOCATED)
            return _Plan(key, seg, meta, pool, columns, None, [], None, marks)
        if columns == old.columns:  # the kept lists stay: this snapshot's go with it, freed as a bare one's
            return _Plan(key, seg, meta, pool, old.columns, [], [], None, marks)
        plan, allocated = _changed_layout(key, seg, meta, pool, columns, old, marks)
        new_blocks[pool] += allocated
        return plan

    def anchor_after(self):
        """How far from the outer end of a stack its cell's frame lies: the anchor is frames[-k].

        IPython runs every cell from ``InteractiveShell.run_code``, so in the
        stacks that pass through it the cell's frame is the one just inside it,
        at the same distance from the outer end for every cell a kernel runs
        the same way. Where cells ran at several distances (a cell with a
        top-level ``await`` runs from the event loop), the distance of most
        live blocks wins: a block whose cell frame lies elsewhere has its whole
        stack compared, block by block, which costs 20 times more, so the most
        distinct stacks would make the wrong choice when one line holds most of
        the memory. A callback's or a thread's stack is no cell's. Where no
        stack passes through run_code (a plain script), the frame just inside
        the frames every stack shares stands in.
        """
        stacks, frames = self.table.stacks, self.table.frames
        if len(stacks) != self._stacks_seen:
            shared, distances = self._shared, self._distances
            first = self._stacks_seen
            del distances[first:]  # an interrupted call's: appended again below
            for stack in stacks[self._stacks_seen :]:
                runner = next((i for i, f in enumerate(stack) if _is_cell_runner(frames[f])), None)
                distances.append(len(stack) - runner + 1 if runner else 0)  # the cell's frame is stack[runner - 1]
                if not stack:
                    continue
                outer = stack[::-1]
                if shared is None:
                    shared = outer
                else:
                    n = next((k for k, (a, b) in enumerate(zip(shared, outer)) if a != b), min(len(shared), len(outer)))
                    shared = shared[:n]
            self._cells_seen = self._cells_seen or any(distances[first:])  # before the stacks count as seen
            self._stacks_seen, self._shared = len(stacks), shared
        if self._live_changes:
            live, distance = self._live, self._distances.__getitem__
            for sign, stack_ids in self._live_changes:
                counted = collections.Counter(map(distance, stack_ids))
                live.update(counted) if sign > 0 else live.subtract(counted)
            self._live_changes = []
        if self._cells_seen:
            cells = {d: n for d, n in self._live.items() if d and n > 0}
            if cells and cells.get(self._anchor_depth) != max(cells.values()):  # a tie keeps the anchor
                self._anchor_depth = max(cells, key=cells.get)
            elif not self._anchor_depth:  # no live block is a cell's yet: the distance most stacks have, never
                # none (with no anchor only depths are compared: another line's block of the same depth is missed)
                seen = collections.Counter(filter(None, self._distances))
                self._anchor_depth = max(seen, key=seen.get)
        elif self._shared is not None:
            self._anchor_depth = len(self._shared) + 1
        return self._anchor_depth

    def cells_seen(self):
        """Whether any stack so far came from IPython's run_code (as of the last anchor_after)."""
        return self._cells_seen


def _keys(old):
    """The keys of a kept segment's allocated blocks."""
    device = old.segment[0]
    return [(device, item[0]) for item in old.layout() if item[3] in STATE_CODES]


def _since(now, last):
    """Allocations per pool between two counts; None when either is unknown, they differ in pools, or one went back.

    A pool's count is a number, or (allocations, offset[, frees]) as torch_probe.allocation_count gives it: the
    offset moves only when the user resets torch's counters, and then nothing can be told from the counts.
    """
    if now is None or last is None:
        return None
    if isinstance(now, int) and isinstance(last, int):
        since = {None: now - last}
    elif isinstance(now, dict) and isinstance(last, dict) and now.keys() == last.keys():
        since = {}
        for pool, count in now.items():
            before = last[pool]
            if isinstance(count, tuple) or isinstance(before, tuple):
                if not (isinstance(count, tuple) and isinstance(before, tuple)) or count[1] != before[1]:
                    return None
                count, before = count[0], before[0]
            since[pool] = count - before
    else:
        return None
    return since if all(count >= 0 for count in since.values()) else None


def _frees(now, last):
    """Frees per pool between two counts that carry them ((allocations, offset, frees)); None where unknown."""
    if not (isinstance(now, dict) and isinstance(last, dict)):
        return {}
    frees = {}
    for pool, count in now.items():
        before = last.get(pool)
        if isinstance(count, tuple) and isinstance(before, tuple) and len(count) > 2 and len(before) > 2:
            frees[pool] = count[2] - before[2]
    return frees


class _Signatures:
    """Each stack's mark (as _StackCheck.marks makes a block's) under one way of marking, kept while it holds."""

    def __init__(self, table):
        self.table = table
        self.way = None
        self._by_stack = {}

    def at(self, way):
        """The lookup by stack id of the marks ``way`` ((anchor distance, cells told apart)) gives."""
        if self.way != way:
            self.way, self._by_stack = way, {-1: _NO_STACK}
        k, cells = way
        by_stack, stacks, frames = self._by_stack, self.table.stacks, self.table.frames
        for sid in range(len(by_stack) - 1, len(stacks)):
            stack = stacks[sid]
            depth = len(stack)
            anchor = stack[depth - k] if k and depth >= k else -1
            if k and depth and (anchor < 0 or (cells and not _is_cell_frame(frames[anchor]))):
                anchor = (anchor, tuple(stack))
            by_stack[sid] = (depth, anchor)
        return by_stack.__getitem__


class _StackCheck:
    """Whether each block's stack is still its row's, told by the stack's depth and its anchor frame.

    The anchor is the cell's frame (see SnapshotReader.anchor_after): a block
    allocated again by another cell or line has another anchor, one allocated
    on another path (the autograd thread's empty stack) another depth. In a
    kernel, a stack that does not come from a cell (a widget's callback, a
    thread) has no cell frame there, and a stack shorter than the anchor's
    distance has no anchor: those are compared whole (a library frame can be
    both the innermost and at the anchor's distance, so less would not do).
    Torch makes new frame dicts for each snapshot but shares one dict per
    distinct frame within it, so the few distinct dicts are named by content
    once and each block costs a few calls made in C. A segment's marks (each
    block's depth; the anchor of each block with a stack; the way they were
    made) are kept with it, so the next cell compares two lists, not each
    block with its row.
    """

    def __init__(self, reader, current):
        self.table, self.current = reader.table, current
        self.k = k = reader.anchor_after()
        self.cells = reader.cells_seen()  # IPython's run_code in the stacks: cell frames are told apart
        self.way = (k, self.cells)
        self.anchor = operator.itemgetter(-k) if k else None
        self.expected = reader.signatures.at(self.way)
        self.anchor_ids = {id(None): -1}  # id of an anchor's frame dict in this snapshot -> frame id
        self.frame_ids = {}  # the same for the frames of stacks compared whole
        self.odd = False  # whether this snapshot has an anchor that is no cell's frame (in a kernel), or none
        self._cell_frame = {-1: False}  # frame id -> whether it is a cell's code

    def marks(self, raw_blocks, old=None):
        """(each block's stack depth, the anchor of each block with a stack, the way they were made);
        ``old.marks`` itself where they are the same as the kept segment ``old``'s.

        An anchor is the frame id at the anchor's distance; where the stack is
        shorter, or (with cells told apart) that frame is no cell's, it is
        (that id or -1, the ids of the whole stack).
        """
        frames = list(map(_FRAMES, raw_blocks))
        depths = list(map(len, frames))
        if self.anchor is None:
            return depths, (), self.way
        deep = list(filter(None, frames)) if 0 in depths else frames  # a pass spared when every block has a stack
        try:
            dicts = list(map(self.anchor, deep))
        except IndexError:  # a stack shorter than the anchor's distance: not a cell's
            k = self.k
            dicts = [f[-k] if len(f) >= k else None for f in deep]
            self.odd = True
        else:
            if old is not None and self._unchanged(old, depths, dicts):
                return old.marks
        anchors = self._frame_ids(dicts, self.anchor_ids)
        if self.odd:  # else every anchor is a cell's frame: no pass to look
            odd = {a for a in set(anchors) if a == -1 or (self.cells and not self._is_cell(a))}
            if odd:
                at = list(itertools.compress(itertools.count(), map(odd.__contains__, anchors)))
                for i in at:  # the whole stack: a library frame can be both innermost and at the anchor distance
                    anchors[i] = (anchors[i], tuple(self._frame_ids(deep[i], self.frame_ids)))
        return depths, anchors, self.way

    def _unchanged(self, old, depths, dicts):
        """Whether a segment's anchor frame dicts are the frames of its kept marks, told without naming each one.

        The kept anchors come in runs (a line's blocks lie side by side) of a
        few distinct frames. Each run's first dict is named; the rest of the
        run must be that dict (torch shares one dict per distinct frame),
        counted in C. Where runs are short, each distinct frame is named by
        its first dict and the kept anchors, each put for its dict, are
        compared with this snapshot's as one list. Kept anchors that are no
        cell's frame, or none, are compared the long way.
        """
        marks = old.marks
        if marks is None or marks[2] != self.way or marks[0] != depths:
            return False
        if old.runs is None:
            old.runs = _anchor_runs(marks[1])
        if old.runs is False:
            return False
        runs, firsts = old.runs
        if len(runs) * _SHORT_RUN > len(dicts):  # many short runs: one lookup per block, in C
            by_frame = {}
            for frame_id, at in firsts.items():
                by_frame[frame_id] = candidate = dicts[at]
                if self._anchor_id(candidate) != frame_id:
                    return False
            return list(map(by_frame.__getitem__, marks[1])) == dicts
        for frame_id, start, stop in runs:
            candidate = dicts[start]
            if self._anchor_id(candidate) != frame_id:
                return False
            run = dicts if stop - start == len(dicts) else dicts[start:stop]
            if run.count(candidate) != stop - start:
                return False
        return True

    def _anchor_id(self, frame):
        """The frame id of an anchor's frame dict of this snapshot."""
        named = self.anchor_ids.get(id(frame))
        return self._frame_ids([frame], self.anchor_ids)[0] if named is None else named

    def _is_cell(self, frame_id):
        known = self._cell_frame.get(frame_id)
        if known is None:
            known = self._cell_frame[frame_id] = _is_cell_frame(self.table.frames[frame_id])
        return known

    def read_again(self, plan, old):
        """plan with ``fresh`` also naming the blocks whose stack changed under the same layout."""
        if plan.marks is None:
            plan = plan._replace(marks=self.marks(plan.seg["blocks"]))
        marks = plan.marks
        if plan.fresh is None:  # a new segment: every block is read
            return plan
        n = len(marks[0])
        if old.marks is not None and old.marks[2] == self.way:
            if plan.changed is None:
                if old.marks == marks:
                    return plan
                changed = _changed_marks(marks, old.marks, 0, n, 0)
            else:  # the common start and end against the kept marks; the span between against the rows
                start, end, old_end = plan.changed
                changed = _changed_marks(marks, old.marks, 0, start, 0)
                changed += _changed_marks(marks, old.marks, end, n, old_end)
                changed += self._against_rows(plan, marks, range(start, end))
        else:  # no marks kept for these blocks: each one against its row's stack
            changed = self._against_rows(plan, marks, range(n))
        return plan._replace(fresh=sorted(set(plan.fresh).union(changed))) if changed else plan

    def kept(self, plan, old):
        """plan with marks where its pool's blocks kept their stacks: a changed segment's kept ones around the
        span that changed, and the span's own (the blocks outside it were neither freed nor allocated)."""
        if plan.marks is not None or old is None:
            return plan
        if plan.changed is None:  # the same layout: the same blocks
            return plan._replace(marks=old.marks)
        if old.marks is None or old.marks[2] != self.way:
            return plan
        start, end, old_end = plan.changed
        depths, anchors, way = old.marks
        middle = self.marks(plan.seg["blocks"][start:end])
        n = len(depths)
        head = start - depths[:start].count(0)
        tail = (n - old_end) - depths[old_end:].count(0)
        if way[0]:  # an anchor distance: anchors for the blocks with a stack
            anchors = anchors[:head] + middle[1] + anchors[len(anchors) - tail :]
        return plan._replace(marks=(depths[:start] + middle[0] + depths[old_end:], anchors, way))

    def _against_rows(self, plan, marks, span):
        """The blocks of ``span`` (not fresh) whose stack mark is not their row's: a loop in Python."""
        if not span:
            return []
        seg = plan.seg
        device = int(seg.get("device", 0))
        sizes = plan.columns[0]
        address = int(seg["address"]) + sum(sizes[: span[0]])
        addresses = itertools.accumulate(sizes[span[0] : span[-1]], initial=address)
        rows = map(self.current.get, zip(itertools.repeat(device), addresses), itertools.repeat(_NO_ROW))
        expected = map(self.expected, map(_ROW_STACK, rows))
        fresh = set(plan.fresh)
        return [
            i
            for i, now, then in zip(span, _signatures(marks, span.start, span.stop), expected)
            if now != then and i not in fresh
        ]

    def _frame_ids(self, frames, known):
        """The frame id of each frame dict; the few dicts not seen yet are named by content (and an anchor
        that is no cell's frame noted)."""
        ids = list(map(id, frames))
        try:
            return list(map(known.__getitem__, ids))
        except KeyError:
            for dict_id in set(ids).difference(known):
                frame_id = known[dict_id] = self.table.frame_id(frames[ids.index(dict_id)])
                if known is self.anchor_ids and self.cells and not self._is_cell(frame_id):
                    self.odd = True
            return list(map(known.__getitem__, ids))


# Runs shorter than this on average are checked block by block (a run costs a few steps in Python).
_SHORT_RUN = 8


def _anchor_runs(anchors):
    """([(frame id, start, stop)] of the runs of equal anchors, {frame id: its first index}); False where an
    anchor is no cell frame's id (a stack compared whole, or none)."""
    distinct = set(anchors)
    if not all(type(a) is int and a >= 0 for a in distinct):
        return False
    if not anchors:
        return [], {}
    starts = [0, *itertools.compress(itertools.count(1), map(operator.ne, anchors, itertools.islice(anchors, 1, None)))]
    runs = list(zip(map(anchors.__getitem__, starts), starts, [*starts[1:], len(anchors)]))
    return runs, {a: anchors.index(a) for a in distinct}


def _changed_marks(now, was, start, end, was_start):
    """Indices in [start, end) whose mark in ``now`` differs from the one at the same offset from ``was_start``
    in ``was``; the span must start or end its segment (anchors are kept only for blocks with a stack)."""
    if start == end:
        return []
    depths, was_depths = now[0][start:end], was[0][was_start : was_start + end - start]
    if depths == was_depths:  # the same blocks have stacks: anchors line up, compared in C
        with_stack = len(depths) - depths.count(0)
        anchors, was_anchors = _anchor_span(now, start, with_stack), _anchor_span(was, was_start, with_stack)
        if anchors == was_anchors:
            return []
        at = list(itertools.compress(range(start, end), depths))
        return list(map(at.__getitem__, itertools.compress(itertools.count(), map(operator.ne, anchors, was_anchors))))
    if 0 not in depths and 0 not in was_depths:  # every block has a stack: anchors line up block by block, in C
        changed = map(operator.ne, depths, was_depths)
        if now[2][0]:  # an anchor distance: anchors for the blocks with a stack, those before the span counted out
            at, was_at = start - now[0][:start].count(0), was_start - was[0][:was_start].count(0)
            anchors, was_anchors = now[1][at : at + end - start], was[1][was_at : was_at + end - start]
            changed = map(operator.or_, changed, map(operator.ne, anchors, was_anchors))
        return list(itertools.compress(range(start, end), changed))
    # blocks without a stack have no anchor: each block's (depth, anchor) made in Python
    changed = map(operator.ne, _signatures(now, start, end), _signatures(was, was_start, was_start + end - start))
    return list(itertools.compress(range(start, end), changed))


def _anchor_span(marks, start, count):
    """The anchors of ``count`` blocks with a stack from block ``start``, which is 0 or ends them at the last."""
    anchors = marks[1]
    if not anchors:  # no anchor distance: depths alone
        return anchors
    return anchors[:count] if start == 0 else anchors[len(anchors) - count :]


def _signatures(marks, start, end):
    """(depth, anchor) of blocks [start, end), as _Signatures gives a row's: a loop in Python."""
    depths, anchors, (k, _) = marks
    if not k:
        return [(d, -1) for d in depths[start:end]]
    anchor = iter(anchors[start - depths[:start].count(0) :])
    return [(d, next(anchor)) if d else (0, -1) for d in depths[start:end]]


_NO_STACK = (0, -1)
_NO_ROW = (None, None, None, None, None, -1, None)
_ROW_STACK = operator.itemgetter(ROW_STACK)
_ROW_KEY = operator.itemgetter(ROW_DEVICE, ROW_ADDRESS)


def _is_cell_frame(frame):
    """Whether a frame (filename, line, name) is a cell's own code: what IPython's run_code executes is a module."""
    return frame[2] == "<module>"


def _is_cell_runner(frame):
    """IPython's ``InteractiveShell.run_code``, which runs each cell's code."""
    return frame[2] == "run_code" and frame[0].endswith("interactiveshell.py")
