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
  those blocks are read; each segment costs three lists made in C, compared
  with the ones kept;
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

from .compact import ROW_STACK, STATE_CODES, read_blocks, read_segment, read_segment_tuple, segment_order

_LAYOUT = operator.itemgetter("address", "size", "requested_size", "state")
_SIZE = operator.itemgetter("size")
_REQUESTED = operator.itemgetter("requested_size")
_STATE_NAME = operator.itemgetter("state")
_STATE = operator.itemgetter(3)
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

    __slots__ = ("meta", "columns", "segment", "marks", "_layout")

    def __init__(self, meta, columns, segment, marks=None, layout=None):
        self.meta, self.columns, self.segment, self.marks, self._layout = meta, columns, segment, marks, layout

    def layout(self):
        """(address, size, requested size, state) of each block, the blocks lying back to back."""
        if self._layout is None:
            sizes, requested, states = self.columns
            addresses = itertools.accumulate(sizes[:-1], initial=self.segment[1])
            self._layout = list(zip(addresses, sizes, requested, states))
        return self._layout


# A changed segment: its layout tuples (None: the old ones), which of them are new (fresh; None: none),
# the old ones that went, its stack marks.
_Plan = collections.namedtuple("_Plan", "key seg meta pool columns layout fresh went marks")


class SnapshotReader:
    """Reads raw snapshots into (segments, blocks) and the blocks born and freed since the previous read."""

    def __init__(self, table):
        self.table = table
        self._made = None  # the block table the last read returned
        self._segments = {}  # (device, address) -> _Kept
        self._allocations = None  # the allocator's counts at the last read
        self._stacks_seen = 1  # the table's stacks already folded into _shared
        self._shared = None  # the outermost frame ids all stacks so far share, outermost first
        self._cell_depths = {}  # distance of a cell's frame from the outer end -> how many stacks had it
        self._anchor_depth = 0  # the anchor is frames[-k] (innermost first); 0: none yet
        self.signatures = _Signatures(table)

    def read(self, raw, current, allocations=None):
        """(segments, blocks, born rows, freed keys) of ``raw`` against ``current``, the log's last table.

        ``allocations``: the allocator's counts of allocations so far, read
        just before ``raw`` was taken: {(device, "small" or "large"): count or
        (count, offset)} (torch_probe.counted_snapshot), or one count for all;
        None when unknown.
        """
        raw_segments = raw["segments"] if isinstance(raw, dict) else raw
        since = None
        if current is self._made and self._made is not None:
            since = _since(allocations, self._allocations)
        result = None
        if since is not None:
            try:
                pool = _one_pool if isinstance(allocations, int) else _pool
                result = self._read_changed(raw_segments, current, since, pool)
            except (KeyError, TypeError, AttributeError):  # a torch before 2.1, or a hand-made snapshot
                result = None
        if result is None:
            result = self._read_all(raw_segments, current)
        self._allocations = allocations if self._made is not None else None
        return result

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
        return segments, blocks, born, freed

    def _read_changed(self, raw_segments, current, since, pool_of):
        before = self._segments
        kept, changed = {}, []
        for seg in raw_segments:
            key = _segment_key(seg)
            old = before.get(key)
            meta = _segment_meta(seg)
            pool = pool_of(seg)
            allocated = since.get(pool)
            if allocated is None:
                return None  # a pool the counts do not cover
            if allocated == 0 and old is not None and old.meta == meta:
                kept[key] = old
            else:
                changed.append((key, seg, meta, old, pool))
        changed_keys = {key for key, _, _, _, _ in changed}
        if len(kept) + len(changed_keys) != len(raw_segments):
            return None  # one segment listed twice
        gone = [old for key, old in before.items() if key not in kept and key not in changed_keys]
        if not changed and not gone:
            self._segments = kept
            return sorted((k.segment for k in kept.values()), key=segment_order), current, [], []
        # Each changed segment: which of its blocks are new, and the old ones that went.
        plans, new_blocks = [], dict.fromkeys(since, 0)
        for key, seg, meta, old, pool in changed:
            raw_blocks = seg["blocks"]
            columns = _columns(raw_blocks)
            if old is not None and columns == old.columns:
                plans.append(_Plan(key, seg, meta, pool, columns, None, None, [], old.marks))
                continue
            layout = list(map(_LAYOUT, raw_blocks))
            old_layout = old.layout() if old is not None else []
            was, now = set(old_layout), set(layout)
            fresh = list(map(operator.not_, map(was.__contains__, layout)))
            # Only an allocation makes a block allocated; one that went pending (freed on another stream) is new
            # by state with no allocation behind it.
            new_blocks[pool] += list(map(_STATE, itertools.compress(layout, fresh))).count(_ALLOCATED)
            went = list(itertools.filterfalse(now.__contains__, old_layout))
            plans.append(_Plan(key, seg, meta, pool, columns, layout, fresh, went, None))
        doubtful = {pool for pool, count in since.items() if new_blocks[pool] != count}
        if doubtful:
            # More allocations than new blocks: some landed where a block of the same layout was
            # freed, maybe from other code. Read again each block whose stack is not its row's.
            stacks = _StackCheck(self, current)
            plans = [stacks.read_again(p, before.get(p.key)) if p.pool in doubtful else p for p in plans]
        blocks = dict(current)
        old_rows = {}  # rows taken out; those not read again were freed
        for old in gone:
            for block in _keys(old):
                old_rows[block] = blocks.pop(block)
        born, ids = [], {}
        for plan in plans:
            device = int(plan.seg.get("device", 0))
            for item in plan.went:
                if item[3] in STATE_CODES:
                    old_rows[(device, item[0])] = blocks.pop((device, item[0]))
        for plan in plans:
            old, seg = before.get(plan.key), plan.seg
            # The segment itself may have been given back and made again at its address (by another cell, on
            # another stream): its tuple is read again, one per segment.
            segment = read_segment_tuple(seg, self.table)
            if old is not None and old.segment == segment:
                segment = old.segment
            if old is not None and not plan.went and not (plan.fresh and any(plan.fresh)):
                kept[plan.key] = _Kept(plan.meta, plan.columns, segment, plan.marks, old._layout)  # the same blocks
                continue
            device, seg_address = int(seg.get("device", 0)), int(seg["address"])
            raw_blocks = itertools.compress(seg["blocks"], plan.fresh) if old is not None else seg["blocks"]
            for block in read_blocks(raw_blocks, device, seg_address, self.table, ids, blocks):
                row = blocks[block]
                previous = old_rows.pop(block, None)
                if row != (current.get(block) if previous is None else previous):
                    born.append(row)
            layout = plan.layout if plan.layout is not None else old._layout
            kept[plan.key] = _Kept(plan.meta, plan.columns, segment, plan.marks, layout)
        self._segments, self._made = kept, blocks
        return sorted((k.segment for k in kept.values()), key=segment_order), blocks, born, list(old_rows)

    def anchor_after(self):
        """How far from the outer end of a stack its cell's frame lies: the anchor is frames[-k].

        IPython runs every cell from ``InteractiveShell.run_code``, so in the
        stacks that pass through it the cell's frame is the one just inside it,
        at the same distance from the outer end for every cell (the most
        common distance wins: a callback or another path is not a cell). Where
        no stack does (a plain script), the frame just inside the frames every
        stack shares stands in.
        """
        stacks, frames = self.table.stacks, self.table.frames
        if len(stacks) != self._stacks_seen:
            shared, counts = self._shared, self._cell_depths
            for stack in stacks[self._stacks_seen :]:
                if not stack:
                    continue
                runner = next((i for i, f in enumerate(stack) if _is_cell_runner(frames[f])), None)
                if runner:  # the cell's frame is stack[runner - 1]
                    depth = len(stack) - runner + 1
                    counts[depth] = counts.get(depth, 0) + 1
                outer = stack[::-1]
                if shared is None:
                    shared = outer
                else:
                    n = next((k for k, (a, b) in enumerate(zip(shared, outer)) if a != b), min(len(shared), len(outer)))
                    shared = shared[:n]
            self._stacks_seen, self._shared = len(stacks), shared
            if counts:
                self._anchor_depth = max(counts, key=counts.get)
            elif shared is not None:
                self._anchor_depth = len(shared) + 1
        return self._anchor_depth

    def cells_seen(self):
        """Whether any stack so far came from IPython's run_code (as of the last anchor_after)."""
        return bool(self._cell_depths)


def _keys(old):
    """The keys of a kept segment's allocated blocks."""
    device = old.segment[0]
    return [(device, item[0]) for item in old.layout() if item[3] in STATE_CODES]


def _since(now, last):
    """Allocations per pool between two counts; None when either is unknown, they differ in pools, or one went back.

    A pool's count is a number, or (allocations, offset) as torch_probe.allocation_count gives it: the offset
    moves only when the user resets torch's counters, and then nothing can be told from the counts.
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
            if cells and k and depth and (anchor < 0 or not _is_cell_frame(frames[anchor])):
                anchor = (anchor, stack[0])
            by_stack[sid] = (depth, anchor)
        return by_stack.__getitem__


class _StackCheck:
    """Whether each block's stack is still its row's, told by the stack's depth and its anchor frame.

    The anchor is the cell's frame (see SnapshotReader.anchor_after): a block
    allocated again by another cell or line has another anchor, one allocated
    on another path (the autograd thread's empty stack) another depth. In a
    kernel, a stack that does not come from a cell (a widget's callback, a
    thread) has no cell frame there: its innermost frame is compared too.
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
        self.frame_ids = {id(None): -1}  # id of a frame dict in this snapshot -> frame id
        self._cell_frame = {-1: False}  # frame id -> whether it is a cell's code

    def marks(self, raw_blocks):
        """(each block's stack depth, the anchor of each block with a stack, the way they were made).

        An anchor is the frame id at the anchor's distance (-1 where the stack
        is shorter); with cells told apart, one that is no cell's frame is
        (that id, the innermost frame's id).
        """
        frames = list(map(_FRAMES, raw_blocks))
        depths = list(map(len, frames))
        if self.anchor is None:
            return depths, (), self.way
        deep = list(itertools.compress(frames, depths))
        try:
            dicts = list(map(self.anchor, deep))
        except IndexError:  # a stack shorter than the anchor's distance: not a cell's
            k = self.k
            dicts = [f[-k] if len(f) >= k else None for f in deep]
        anchors = self._frame_ids(dicts)
        if self.cells:
            odd = {a for a in set(anchors) if not self._is_cell(a)}
            if odd:
                at = list(itertools.compress(itertools.count(), map(odd.__contains__, anchors)))
                for i, inner in zip(at, self._frame_ids([deep[i][0] for i in at])):
                    anchors[i] = (anchors[i], inner)
        return depths, anchors, self.way

    def _is_cell(self, frame_id):
        known = self._cell_frame.get(frame_id)
        if known is None:
            known = self._cell_frame[frame_id] = _is_cell_frame(self.table.frames[frame_id])
        return known

    def read_again(self, plan, old):
        """plan with ``fresh`` also set for the blocks whose stack changed under the same layout, and its marks."""
        marks = self.marks(plan.seg["blocks"])
        if plan.fresh is not None and all(plan.fresh):
            return plan._replace(marks=marks)
        if plan.layout is None and old.marks is not None and old.marks[2] == self.way:
            if old.marks == marks:
                return plan._replace(marks=marks)
            depths, anchors, _ = marks
            if depths == old.marks[0]:  # the same blocks have stacks: anchors line up, compared in C
                fresh = list(plan.fresh) if plan.fresh is not None else [False] * len(depths)
                with_stack = itertools.compress(itertools.count(), depths)
                for i in itertools.compress(with_stack, map(operator.ne, anchors, old.marks[1])):
                    fresh[i] = True
                return plan._replace(fresh=fresh, marks=marks)
            changed = map(operator.ne, self._signatures(marks), self._signatures(old.marks))
        else:  # no marks kept for these blocks: each one against its row's stack
            device = int(plan.seg.get("device", 0))
            layout = plan.layout if plan.layout is not None else old.layout()
            keys = zip(itertools.repeat(device), map(_ADDRESS, layout))
            rows = map(self.current.get, keys, itertools.repeat(_NO_ROW))
            changed = map(operator.ne, self._signatures(marks), map(self.expected, map(_ROW_STACK, rows)))
        fresh = plan.fresh if plan.fresh is not None else itertools.repeat(False)
        return plan._replace(fresh=list(map(operator.or_, fresh, changed)), marks=marks)

    def _signatures(self, marks):
        """(depth, anchor) of each block, as _Signatures gives a row's: a loop in Python, only where marks differ."""
        depths, anchors, _ = marks
        if self.anchor is None:
            return [(d, -1) for d in depths]
        anchor = iter(anchors)
        return [(d, next(anchor)) if d else (0, -1) for d in depths]

    def _frame_ids(self, frames):
        """The frame id of each frame dict; the few dicts not seen yet are named by content."""
        known = self.frame_ids
        ids = list(map(id, frames))
        try:
            return list(map(known.__getitem__, ids))
        except KeyError:
            for frame_id, frame in dict(zip(ids, frames)).items():
                if frame_id not in known:
                    known[frame_id] = self.table.frame_id(frame)
            return list(map(known.__getitem__, ids))


_NO_STACK = (0, -1)
_NO_ROW = (None, None, None, None, None, -1, None)
_ADDRESS = operator.itemgetter(0)
_ROW_STACK = operator.itemgetter(ROW_STACK)


def _is_cell_frame(frame):
    """Whether a frame (filename, line, name) is a cell's own code: what IPython's run_code executes is a module."""
    return frame[2] == "<module>"


def _is_cell_runner(frame):
    """IPython's ``InteractiveShell.run_code``, which runs each cell's code."""
    return frame[2] == "run_code" and frame[0].endswith("interactiveshell.py")
