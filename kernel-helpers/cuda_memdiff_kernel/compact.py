"""Raw allocator snapshot -> the compact wire message.

A raw ``_snapshot()`` repeats every frame dict for every block. The message
keeps segments and active blocks only (free space is what a segment has
left), as columns, with frames and stacks interned per kernel: each new frame
and each new stack is sent once, and later messages refer to it by id.
"""
from . import protocol

_STATE_CODES = {name: code for code, name in enumerate(protocol.BLOCK_STATES)}


class WireEncoder:
    """Interns frames and stacks across the snapshots of one kernel."""

    def __init__(self):
        self._frame_ids = {}
        self._stack_ids = {(): 0}
        self._frames_sent = 0
        self._stacks_sent = 1  # stack 0, the empty one, is implied

    def _stack_id(self, frames, new_frames, new_stacks):
        if not frames:
            return 0
        frame_ids = self._frame_ids
        ids = []
        for f in frames:
            key = (f.get("filename", "??"), f.get("line", 0), f.get("name", "??"))
            fid = frame_ids.get(key)
            if fid is None:
                fid = frame_ids[key] = len(frame_ids)
                new_frames.append(list(key))
            ids.append(fid)
        ids = tuple(ids)
        sid = self._stack_ids.get(ids)
        if sid is None:
            sid = self._stack_ids[ids] = len(self._stack_ids)
            new_stacks.append(list(ids))
        return sid

    def encode(self, raw, **fields):
        """The snapshot message for a raw snapshot dict (or bare segment list)."""
        segments = raw["segments"] if isinstance(raw, dict) else raw
        new_frames, new_stacks = [], []
        frame_base, stack_base = len(self._frame_ids), len(self._stack_ids)
        seg_cols = {k: [] for k in ("device", "address", "total_size", "stream", "pool", "type", "stack")}
        blk_cols = {k: [] for k in ("segment", "address", "size", "requested_size", "state", "stack")}
        states = _STATE_CODES
        for index, seg in enumerate(segments):
            seg_cols["device"].append(int(seg.get("device", 0)))
            seg_cols["address"].append(int(seg["address"]))
            seg_cols["total_size"].append(int(seg["total_size"]))
            seg_cols["stream"].append(int(seg.get("stream", 0)))
            pool = seg.get("segment_pool_id", "")
            seg_cols["pool"].append(",".join(str(p) for p in pool) if isinstance(pool, (tuple, list)) else str(pool))
            seg_cols["type"].append(str(seg.get("segment_type", "")))
            seg_cols["stack"].append(self._stack_id(seg.get("frames"), new_frames, new_stacks))
            for address, blk in block_addresses(seg):
                size = int(blk["size"])
                state = states.get(blk.get("state"))
                if state is None:  # free space: implied by the segment
                    continue
                blk_cols["segment"].append(index)
                blk_cols["address"].append(address)
                blk_cols["size"].append(size)
                blk_cols["requested_size"].append(int(blk.get("requested_size", size)))
                blk_cols["state"].append(state)
                blk_cols["stack"].append(self._stack_id(blk.get("frames"), new_frames, new_stacks))
        message = {
            "v": protocol.PROTOCOL_VERSION,
            "type": "snapshot",
            "frames": {"base": frame_base, "items": new_frames},
            "stacks": {"base": stack_base, "items": new_stacks},
            "segments": seg_cols,
            "blocks": blk_cols,
        }
        message.update(fields)
        return message


def block_addresses(segment):
    """(address, block) for each block of a raw segment; torch before 2.1 gives
    no block address, so it follows from the segment's and the sizes before it."""
    cursor = int(segment["address"])
    for blk in segment.get("blocks", ()):
        address = int(blk.get("address", cursor))
        cursor = address + int(blk["size"])
        yield address, blk
