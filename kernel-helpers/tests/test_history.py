"""The log's allocation history: the trace entries each capture adds, cut at the previous capture."""

import json

from cuda_memdiff_kernel.channel import Frontends
from cuda_memdiff_kernel.compact import FrameTable, read_history
from cuda_memdiff_kernel.log import SnapshotLog

CELL = [{"filename": "/tmp/ipykernel_1/42.py", "line": 3, "name": "<module>"}]


def entry(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": CELL}


def raw(blocks, traces):
    segs = [
        {
            "device": 0,
            "address": 4096,
            "total_size": 2**30,
            "stream": 0,
            "segment_pool_id": (0, 0),
            "segment_type": "large",
            "frames": [],
            "blocks": [
                {"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": CELL}
                for a, s in blocks
            ],
        }
    ]
    return {"segments": segs, "device_traces": [traces]}


class Comm:
    def __init__(self):
        self.messages = []

    def send(self, data):
        self.messages.append(json.loads(json.dumps(data)))

    def on_msg(self, f):
        pass

    def on_close(self, f):
        pass


def test_each_capture_carries_the_entries_since_the_one_before():
    ring = [entry("alloc", 4096, 256, 1)]
    log = SnapshotLog()
    first = log.add(raw([(4096, 256)], list(ring)), reason="cell")
    # the re-run: free and allocate again at the same address and size
    ring += [
        entry("snapshot", 0, 256, 2),
        entry("free_requested", 4096, 256, 3),
        entry("free_completed", 4096, 256, 3),
        entry("alloc", 4096, 256, 4),
    ]
    second = log.add(raw([(4096, 256)], list(ring)), reason="cell")
    assert first.history[1] == {"since_us": None, "until_us": 1, "complete": True, "dropped": 0}
    cols, info = second.history
    assert [cols["actions"][a] for a in cols["action"]] == ["snapshot", "free_requested", "free_completed", "alloc"]
    assert cols["time_us"] == [2, 3, 3, 4] and info == {"since_us": 1, "until_us": 4, "complete": True, "dropped": 0}
    # the block table saw no change: only the history tells the re-run apart
    assert second.born == [] and second.freed == []


def test_a_wrapped_ring_buffer_says_entries_were_lost():
    log = SnapshotLog()
    log.add(raw([], [entry("alloc", 4096, 256, 1)]), reason="cell")
    later = log.add(raw([], [entry("alloc", 8192, 256, 7), entry("free_requested", 8192, 256, 8)]), reason="cell")
    assert later.history[1]["complete"] is False
    assert later.history[0]["time_us"] == [7, 8]


def test_a_capture_without_traces_breaks_the_chain():
    log = SnapshotLog()
    log.add(raw([], [entry("alloc", 4096, 256, 1)]), reason="cell")
    assert log.add({"segments": [], "device_traces": []}, reason="cell").history is None
    again = log.add(raw([], [entry("alloc", 4096, 256, 1), entry("alloc", 8192, 256, 2)]), reason="cell")
    assert again.history[1]["since_us"] is None and again.history[0]["time_us"] == [1, 2]


def test_history_is_bounded_keeping_the_newest():
    cols, _, complete, dropped = read_history(
        raw([], [entry("alloc", 4096 * k, 256, k) for k in range(1, 11)]), FrameTable(), {}, 4
    )
    assert cols["time_us"] == [7, 8, 9, 10] and not complete and dropped == 6


def test_messages_with_history_follow_the_schema_and_name_their_stacks(validate):
    log = SnapshotLog()
    frontends = Frontends(log)
    comm = Comm()
    frontends.attach(comm)
    frontends.publish(
        log.add(
            raw([(4096, 256)], [entry("alloc", 4096, 256, 1)]),
            reason="cell",
            cell_id="a",
            execution_count=1,
            error=None,
            devices=[],
        )
    )
    message = comm.messages[-1]
    validate(message)
    stack = message["traces"]["stack"][0]
    frames = message["stacks"]["items"][stack - message["stacks"]["base"]]
    assert [message["frames"]["items"][f][:2] for f in frames] == [["/tmp/ipykernel_1/42.py", 3]]
