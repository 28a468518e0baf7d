"""Each raw snapshot read against the one before, reading block by block only what changed.

Reading a block in Python costs about 1-2 µs (its fields, its stack, a row),
while torch's own snapshot costs about 1 µs a block, so reading every block
after every cell more than doubled a cell's capture. The allocator counts its
allocations (``memory_stats()['allocation.all.allocated']``); with that count
read before each snapshot, the reader knows how much can have changed:

- no allocation since the last snapshot: blocks can only have been freed, and
  a free changes its segment's allocated, active or requested bytes, so a
  segment whose totals are the same is the same (no block is looked at);
- allocations, each one a block that is new by address, size, requested size
  or state: only those blocks are read (each block costs one tuple made in C);
- more allocations than new blocks (temporaries, or a block freed and
  allocated again at the same address, maybe from another line): a block's
  stack may have changed where nothing else did, so each block's stack is
  checked (_StackCheck) and the blocks whose stack changed are read too.

Without a count (a replayed session, an OOM snapshot, a torch without the
counter) or after a snapshot the log did not keep, every block is read.
"""

import collections
import itertools
import operator

from .compact import ROW_STACK, STATE_CODES, read_blocks, read_segment, read_segment_tuple, segment_order

_BLOCKS = operator.itemgetter("blocks")
_LAYOUT = operator.itemgetter("address", "size", "requested_size", "state")
_STATE = operator.itemgetter(3)
_FRAMES = operator.itemgetter("frames")


def _segment_key(seg):
    return seg.get("device", 0), seg["address"]


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


class _Kept:
    """One segment as last read: its meta, its blocks' layout tuples, its segment tuple."""

    __slots__ = ("meta", "layout", "segment")

    def __init__(self, meta, layout, segment):
        self.meta, self.layout, self.segment = meta, layout, segment


# A changed segment: which of its layout tuples are new (fresh), and the old ones that went.
_Plan = collections.namedtuple("_Plan", "key seg meta layout fresh went")


class SnapshotReader:
    """Reads raw snapshots into (segments, blocks) and the blocks born and freed since the previous read."""

    def __init__(self, table):
        self.table = table
        self._made = None  # the block table the last read returned
        self._segments = {}  # (device, address) -> _Kept
        self._allocations = None  # the allocator's count at the last read
        self._stacks_seen = 1  # the table's stacks already folded into _shared
        self._shared = None  # the outermost frame ids all stacks so far share, outermost first
        self._cell_depths = {}  # distance of a cell's frame from the outer end -> how many stacks had it
        self._anchor_depth = 0  # the anchor is frames[-k] (innermost first); 0: none yet
        self._stack_signatures = {}  # stack id -> (depth, innermost frame id, anchor frame id), at _anchor_depth
        self._signed_depth = None

    def read(self, raw, current, allocations=None):
        """(segments, blocks, born rows, freed keys) of ``raw`` against ``current``, the log's last table.

        ``allocations``: the allocator's count of allocations so far, summed
        over devices, read just before ``raw`` was taken; None when unknown.
        """
        raw_segments = raw["segments"] if isinstance(raw, dict) else raw
        last, since = self._allocations, None
        if allocations is not None and last is not None and current is self._made and self._made is not None:
            since = allocations - last
        result = None
        if since is not None and since >= 0:
            try:
                result = self._read_changed(raw_segments, current, since)
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
                    kept[_segment_key(seg)] = _Kept(_segment_meta(seg), list(map(_LAYOUT, seg["blocks"])), segment)
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

    def _read_changed(self, raw_segments, current, since):
        before = self._segments
        kept, changed = {}, []
        for seg in raw_segments:
            key = _segment_key(seg)
            old = before.get(key)
            meta = _segment_meta(seg)
            if since == 0 and old is not None and old.meta == meta:
                kept[key] = old
            else:
                changed.append((key, seg, meta, old))
        changed_keys = {key for key, _, _, _ in changed}
        if len(kept) + len(changed_keys) != len(raw_segments):
            return None  # one segment listed twice
        gone = [old for key, old in before.items() if key not in kept and key not in changed_keys]
        if not changed and not gone:
            self._segments = kept
            return sorted((k.segment for k in kept.values()), key=segment_order), current, [], []
        # Each changed segment: its layout tuples, which of them are new, and the old ones that went.
        plans, new_blocks = [], 0
        for key, seg, meta, old in changed:
            layout = list(map(_LAYOUT, seg["blocks"]))
            old_layout = old.layout if old is not None else []
            if layout == old_layout:
                plans.append(_Plan(key, seg, meta, layout, [False] * len(layout), []))
                continue
            was, now = set(old_layout), set(layout)
            fresh = list(map(operator.not_, map(was.__contains__, layout)))
            new_blocks += sum(map(STATE_CODES.__contains__, map(_STATE, itertools.compress(layout, fresh))))
            went = list(itertools.filterfalse(now.__contains__, old_layout))
            plans.append(_Plan(key, seg, meta, layout, fresh, went))
        if new_blocks != since:
            # More allocations than new blocks: some landed where a block of the same layout was
            # freed, maybe from other code. Read again each block whose stack is not its row's.
            stacks = _StackCheck(self, current)
            plans = [plan._replace(fresh=stacks.read_again(plan)) for plan in plans]
        plans = [plan for plan in plans if plan.went or any(plan.fresh) or before.get(plan.key) is None]
        blocks = dict(current)
        old_rows = {}  # rows taken out; those not read again were freed
        for old in gone:
            for block in self._keys(old):
                old_rows[block] = blocks.pop(block)
        for plan in plans:
            device = int(plan.seg.get("device", 0))
            for item in plan.went:
                if item[3] in STATE_CODES:
                    old_rows[(device, item[0])] = blocks.pop((device, item[0]))
        born, ids = [], {}
        for plan in plans:
            old, seg = before.get(plan.key), plan.seg
            device, seg_address = int(seg.get("device", 0)), int(seg["address"])
            raw_blocks = itertools.compress(seg["blocks"], plan.fresh) if old is not None else seg["blocks"]
            for block in read_blocks(raw_blocks, device, seg_address, self.table, ids, blocks):
                row = blocks[block]
                previous = old_rows.pop(block, None)
                if row != (current.get(block) if previous is None else previous):
                    born.append(row)
            same_segment = old is not None and old.meta[:4] == plan.meta[:4]
            segment = old.segment if same_segment else read_segment_tuple(seg, self.table)
            kept[plan.key] = _Kept(plan.meta, plan.layout, segment)
        for key, _, meta, old in changed:
            if key not in kept:  # the same blocks
                kept[key] = _Kept(meta, old.layout, old.segment)
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

    def _keys(self, old):
        device = old.segment[0]
        return [(device, item[0]) for item in old.layout if item[3] in STATE_CODES]


class _StackCheck:
    """Whether each block's stack is still its row's, told by the stack's depth, innermost frame and anchor.

    The anchor is the frame just inside the frames every stack shares: for code
    run from a notebook, the cell's line. Torch makes new frame dicts for each
    snapshot but shares one dict per distinct frame within it, so the few
    distinct dicts are named by content once and each block costs calls made in C.
    """

    def __init__(self, reader, current):
        self.table, self.current = reader.table, current
        k = reader.anchor_after()
        self.anchor = operator.itemgetter(slice(-k, -k + 1 if k > 1 else None)) if k else _NOTHING
        signed = reader._stack_signatures
        if reader._signed_depth != k:
            signed.clear()
            reader._signed_depth = k
            signed[-1] = _NO_STACK
        for sid in range(len(signed) - 1, len(self.table.stacks)):
            stack = self.table.stacks[sid]
            depth = len(stack)
            signed[sid] = (depth, stack[0] if stack else -1, stack[depth - k] if k and depth >= k else -1)
        self.expected = signed.__getitem__
        self.frame_ids = {}  # id of a frame dict in this snapshot -> frame id

    def read_again(self, plan):
        """plan.fresh, plus the blocks whose stack changed under the same layout."""
        if not any(map(operator.not_, plan.fresh)):
            return plan.fresh
        device = int(plan.seg.get("device", 0))
        frames = list(map(_FRAMES, plan.seg["blocks"]))
        innermost = list(map(next, map(iter, frames), itertools.repeat(None)))
        anchors = list(map(next, map(iter, map(self.anchor, frames)), itertools.repeat(None)))
        actual = zip(map(len, frames), self._frame_ids(innermost), self._frame_ids(anchors))
        keys = zip(itertools.repeat(device), map(_ADDRESS, plan.layout))
        rows = map(self.current.get, keys, itertools.repeat(_NO_ROW))
        expected = map(self.expected, map(_ROW_STACK, rows))
        return list(map(operator.or_, plan.fresh, map(operator.ne, actual, expected)))

    def _frame_ids(self, frames):
        """The frame id of each frame dict (or -1 for None); the few dicts not seen yet are named by content."""
        known = self.frame_ids
        ids = list(map(id, frames))
        named = list(map(known.get, ids))
        if None in named:
            for frame_id, frame in dict(zip(ids, frames)).items():
                if frame_id not in known:
                    known[frame_id] = -1 if frame is None else self.table.frame_id(frame)
            named = list(map(known.__getitem__, ids))
        return named


_NOTHING = operator.itemgetter(slice(0, 0))
_NO_STACK = (0, -1, -1)
_NO_ROW = (None, None, None, None, None, -1, None)
_ADDRESS = operator.itemgetter(0)
_ROW_STACK = operator.itemgetter(ROW_STACK)


def _is_cell_runner(frame):
    """IPython's ``InteractiveShell.run_code``, which runs each cell's code."""
    return frame[2] == "run_code" and frame[0].endswith("interactiveshell.py")
