"""Raw allocator snapshot -> the compact state the wire carries.

A raw ``_snapshot()`` repeats every frame dict for every block. The helper
keeps segments and active blocks only (free space is what a segment has
left), with frames and stacks interned for the kernel's life in one
append-only table: a frontend is sent each frame once and refers to it by id.
"""

import operator

from . import protocol

# A frame's identity, read in C: one call per frame instead of three lookups.
_FRAME_KEY = operator.itemgetter("filename", "line", "name")
STATE_CODES = {name: code for code, name in enumerate(protocol.BLOCK_STATES)}

# A block row: (device, address, size, requested_size, state code, stack id, segment address).
ROW_DEVICE, ROW_ADDRESS, ROW_SIZE, ROW_REQUESTED, ROW_STATE, ROW_STACK, ROW_SEGMENT = range(7)


class NotExact(ValueError):
    """An integer a message would carry past what the frontend's numbers hold exactly (protocol.MAX_EXACT_INTEGER):
    sent on, it would arrive rounded. Only a damaged or hostile recording holds one."""


def check_exact(value, where):
    """Raise NotExact naming ``where`` (``segment 4 address``) when ``value`` is an integer past 2**53 - 1."""
    if type(value) is int and abs(value) > protocol.MAX_EXACT_INTEGER:
        # Python writes at most 4,300 digits of an integer: a larger one is told by its size
        shown = value if value.bit_length() < 1000 else f"a {value.bit_length():,}-bit integer"
        raise NotExact(f"{where} is out of range ({shown}): {protocol.PAST_EXACT}")


class FrameTable:
    """Frames and stacks of one kernel, interned; ids never change and the lists only grow."""

    def __init__(self):
        self.frames = []  # [filename, line, name]
        self.stacks = [[]]  # frame ids; stack 0 is the empty one
        self._frame_ids = {}
        self._stack_ids = {(): 0}
        self._by_frames = {}  # the frames' identities -> stack id: a stack seen before costs one lookup

    def stack_id(self, frames):
        if not frames:
            return 0
        try:
            keys = tuple(map(_FRAME_KEY, frames))
        except KeyError:  # an older torch's frame without one of the fields
            keys = tuple((f.get("filename", "??"), f.get("line", 0), f.get("name", "??")) for f in frames)
        sid = self._by_frames.get(keys)
        if sid is not None:
            return sid
        ids = tuple(map(self._frame_id, keys))
        sid = self._stack_ids.get(ids)
        if sid is None:
            self.stacks.append(list(ids))
            sid = self._stack_ids[ids] = len(self.stacks) - 1
        self._by_frames[keys] = sid
        return sid

    def frame_id(self, frame):
        """The id of one raw frame dict."""
        try:
            key = _FRAME_KEY(frame)
        except KeyError:
            key = (frame.get("filename", "??"), frame.get("line", 0), frame.get("name", "??"))
        return self._frame_id(key)

    def _frame_id(self, key):
        fid = self._frame_ids.get(key)
        if fid is None:
            # Checked once per distinct frame, before the table keeps it: every later message would carry it.
            check_exact(key[1], "a frame's line")
            # Append first: an interrupt between the two leaves a spare frame, never a wrong id.
            self.frames.append(list(key))
            fid = self._frame_ids[key] = len(self.frames) - 1
        return fid


def read_state(raw, table):
    """(segments, blocks) of a raw snapshot dict (or bare segment list).

    segments: tuples (device, address, total_size, stream, pool, type, stack id,
    expandable) sorted by device and address; blocks: {(device, address): row} of the
    active blocks (see ROW_*).
    """
    raw_segments = raw["segments"] if isinstance(raw, dict) else raw
    segments, blocks = [], {}
    ids = {}  # stack ids by the frame dicts' identities, for this one snapshot (see _SnapshotStacks)
    for seg in raw_segments:
        segments.append(read_segment(seg, table, ids, blocks)[0])
    segments.sort(key=segment_order)
    return segments, blocks


def segment_order(segment):
    """Segments sort by device, then address."""
    return segment[0], segment[1]


def read_segment(seg, table, ids, blocks):
    """(segment tuple, keys of its active blocks) of one raw segment; its rows go into ``blocks``.

    ``ids`` maps the identities of frame dicts to stack ids within one raw
    snapshot (see _SnapshotStacks): shared by all the segments of one read.
    """
    segment = read_segment_tuple(seg, table)
    raw_blocks = seg.get("blocks", ())
    if raw_blocks and "address" not in raw_blocks[0]:  # torch before 2.1: the sizes before a block give its address
        raw_blocks = [dict(blk, address=address) for address, blk in block_addresses(seg)]
    return segment, read_blocks(raw_blocks, segment[0], segment[1], table, ids, blocks)


def read_segment_tuple(seg, table):
    """(device, address, total_size, stream, pool, type, stack id, expandable 0 or 1) of one raw segment."""
    pool = seg.get("segment_pool_id", "")
    pool = ",".join(str(p) for p in pool) if isinstance(pool, (tuple, list)) else str(pool)
    return (
        int(seg.get("device", 0)),
        int(seg["address"]),
        int(seg["total_size"]),
        int(seg.get("stream", 0)),
        pool,
        str(seg.get("segment_type", "")),
        table.stack_id(seg.get("frames")),
        1 if seg.get("is_expandable") else 0,  # the OOM advice: expandable_segments may already be on
    )


def read_blocks(raw_blocks, device, seg_address, table, ids, blocks):
    """Rows of the active ones among ``raw_blocks`` (dicts with addresses) into ``blocks``; returns their keys."""
    keys = []
    states = STATE_CODES
    ids_get = ids.get
    # This loop runs once per block read: plain lookups, no int() on ints.
    for blk in raw_blocks:
        state = states.get(blk["state"])
        if state is None:  # free space: implied by the segment
            continue
        frames = blk.get("frames")
        if frames:
            key = tuple(map(id, frames))
            sid = ids_get(key)
            if sid is None:
                sid = ids[key] = table.stack_id(frames)
        else:
            sid = 0
        address, size = blk["address"], blk["size"]
        key = (device, address)
        blocks[key] = (device, address, size, blk.get("requested_size", size), state, sid, seg_address)
        keys.append(key)
    return keys


class _SnapshotStacks:
    """Stack ids for the frame lists of one raw snapshot.

    torch's snapshot shares one dict per distinct frame among all the lists
    that hold it (8 frame dicts for 10,000 blocks on an H200), so within one
    snapshot the dicts' identities name a stack: hashing a tuple of ints costs
    a fraction of reading three fields of every frame. Valid only while the
    raw snapshot is alive, which is why it lives for one read.
    """

    def __init__(self, table):
        self._table = table
        self._ids = {}

    def __call__(self, frames):
        if not frames:
            return 0
        key = tuple(map(id, frames))
        sid = self._ids.get(key)
        if sid is None:
            sid = self._ids[key] = self._table.stack_id(frames)
        return sid


def read_history(raw, table, marks, limit):
    """The trace entries of ``raw`` recorded after the previous capture.

    ``marks`` maps device -> identity (time, action, address, size) of the last
    entry the previous capture saw; the entries after it on that device are
    new. A device whose mark is gone from the ring buffer lost entries (it
    wrapped). Returns (columns, new marks, complete, dropped); at most
    ``limit`` entries are kept, the newest.
    """
    traces = raw.get("device_traces") if isinstance(raw, dict) else None
    cols = {k: [] for k in ("device", "action", "address", "size", "time_us", "stack")}
    actions = {}
    new_marks, complete, dropped = dict(marks), True, 0
    stack_of = _SnapshotStacks(table)
    for device, entries in enumerate(traces or ()):
        if not entries:
            continue
        start = 0
        mark = marks.get(device)
        if mark is not None:
            for k in range(len(entries) - 1, -1, -1):
                if _trace_key(entries[k]) == mark:
                    start = k + 1
                    break
            else:
                complete = False  # the ring buffer wrapped past the previous capture
        new_marks[device] = _trace_key(entries[-1])
        for e in entries[start:]:
            action = e.get("action", "")
            code = actions.get(action)
            if code is None:
                code = actions[action] = len(actions)
            cols["device"].append(device)
            cols["action"].append(code)
            cols["address"].append(e.get("addr", 0) or 0)
            cols["size"].append(e.get("size", 0) or 0)
            cols["time_us"].append(e.get("time_us", 0) or 0)
            cols["stack"].append(stack_of(e.get("frames")))
    if len(cols["device"]) > limit:
        dropped = len(cols["device"]) - limit
        cols = {k: v[-limit:] for k, v in cols.items()}
        complete = False
    cols["actions"] = sorted(actions, key=actions.get)
    return cols, new_marks, complete, dropped


def _trace_key(entry):
    return entry.get("time_us"), entry.get("action"), entry.get("addr"), entry.get("size")


def segment_columns(segments):
    keys = ("device", "address", "total_size", "stream", "pool", "type", "stack", "expandable")
    cols = {k: [] for k in keys}
    for seg in segments:
        for key, value in zip(keys, seg):
            cols[key].append(value)
    return cols


def block_columns(rows, segments):
    """Columns of block rows, each naming its segment by index in ``segments``."""
    index = {(s[0], s[1]): k for k, s in enumerate(segments)}
    cols = {k: [] for k in ("segment", "address", "size", "requested_size", "state", "stack")}
    for row in rows:
        cols["segment"].append(index[(row[ROW_DEVICE], row[ROW_SEGMENT])])
        cols["address"].append(row[ROW_ADDRESS])
        cols["size"].append(row[ROW_SIZE])
        cols["requested_size"].append(row[ROW_REQUESTED])
        cols["state"].append(row[ROW_STATE])
        cols["stack"].append(row[ROW_STACK])
    return cols


def block_addresses(segment):
    """(address, block) for each block of a raw segment; torch before 2.1 gives
    no block address, so it follows from the segment's and the sizes before it."""
    cursor = int(segment["address"])
    for blk in segment.get("blocks", ()):
        address = int(blk.get("address", cursor))
        cursor = address + int(blk["size"])
        yield address, blk
