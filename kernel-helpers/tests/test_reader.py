"""The log reads only the segments that changed: it must give what reading every block gives."""

import copy
import random
import sys

import pytest
from cuda_memdiff_kernel.compact import FrameTable, read_state, segment_columns
from cuda_memdiff_kernel.log import SnapshotLog
from cuda_memdiff_kernel.reader import SnapshotReader

# The kernel's own frames, outermost last (torch lists the innermost frame first).
KERNEL = [
    {"filename": "/usr/lib/python3/site-packages/IPython/core/interactiveshell.py", "line": 3577, "name": "run_code"},
    {"filename": "/usr/lib/python3/site-packages/ipykernel/kernelapp.py", "line": 739, "name": "start"},
    {"filename": "<frozen runpy>", "line": 88, "name": "_run_code"},
]
LIBRARY = {"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}
SEGMENT = 2**21


def stack(cell, line, through_library=False):
    """A fresh list of fresh frame dicts, as each torch snapshot makes them."""
    frames = [{"filename": f"/tmp/ipykernel_1/{cell}.py", "line": line, "name": "<module>"}] + KERNEL
    if through_library:
        frames = [LIBRARY] + frames
    return [dict(f) for f in frames]


def free(address, size):
    return {"address": address, "size": size, "requested_size": 0, "state": "inactive", "frames": []}


def segment(address, blocks, device=0, total=SEGMENT, segment_type="small"):
    """blocks: [(offset, size, stack or None for inactive)]; the rest of the segment is free."""
    out, cursor = [], address
    for offset, size, frames in blocks:
        if address + offset > cursor:
            out.append(free(cursor, address + offset - cursor))
        state = "inactive" if frames is None else "active_allocated"
        out.append(
            {"address": address + offset, "size": size, "requested_size": size, "state": state, "frames": frames or []}
        )
        cursor = address + offset + size
    if cursor < address + total:
        out.append(free(cursor, address + total - cursor))
    return {
        "device": device,
        "address": address,
        "total_size": total,
        "stream": 0,
        "segment_type": segment_type,
        "segment_pool_id": (0, 0),
        "frames": [],
        "blocks": out,
    }


def snapshot(layout):
    """layout: {(device, segment address): [(offset, size, (cell, line, through_library) or None)]}."""
    return {
        "segments": [
            segment(address, [(o, s, stack(*who) if who else None) for o, s, who in blocks], device)
            for (device, address), blocks in layout.items()
        ],
        "device_traces": [],
    }


def read_every_block(raw, current, table):
    segments, blocks = read_state(copy.deepcopy(raw), table)
    born = {key: row for key, row in blocks.items() if current.get(key) != row}
    freed = {key for key in current if key not in blocks}
    return segments, blocks, born, freed


def check(reader, raw, current, allocations=None):
    """The reader's answer for raw, held to reading every block (with its own frame table)."""
    before = dict(current)  # the reader changes the table it made last in place
    segments, blocks, born, freed = reader.read(raw, current, allocations)
    want_segments, want_blocks, want_born, want_freed = read_every_block(raw, before, reader.table)
    assert segments == want_segments
    assert blocks == want_blocks
    assert {(r[0], r[1]): r for r in born} == want_born
    assert set(freed) == want_freed
    assert len(born) == len(want_born) and len(freed) == len(want_freed)
    return blocks


def test_no_allocation_and_the_same_totals_reads_no_block_and_keeps_the_table():
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (512, 1024, ("a", 2))]}
    first = check(reader, snapshot(layout), {}, allocations=2)
    raw = snapshot(layout)
    for blk in raw["segments"][0]["blocks"]:
        blk["state"] = "this block is not looked at"
    segments, blocks, born, freed = reader.read(raw, first, 2)
    assert blocks is first and born == [] and freed == []


def test_a_free_without_allocations_is_seen():
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (512, 1024, ("a", 2))]}
    current = check(reader, snapshot(layout), {}, allocations=2)
    layout[(0, SEGMENT)].pop()
    _, _, born, freed = reader.read(snapshot(layout), current, 2)
    assert born == [] and freed == [(0, SEGMENT + 512)]


def test_allocations_that_made_new_blocks_read_only_those():
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))], (0, 4 * SEGMENT): [(0, 512, ("a", 1))]}
    current = check(reader, snapshot(layout), {}, allocations=2)
    layout[(0, SEGMENT)].append((4096, 512, ("b", 1)))
    raw = snapshot(layout)
    raw["segments"][1]["blocks"][0]["frames"] = stack("not read", 9)  # what a read would see
    _, _, born, freed = reader.read(raw, current, 3)
    assert [r[1] for r in born] == [SEGMENT + 4096] and freed == []


def test_temporaries_alone_read_no_block_whose_stack_is_the_same():
    # a cell that computed and kept nothing: allocations, no new block; each block's stack is checked
    # by its depth and the cell's frame, not read again
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1, True)), (512, 512, ("b", 2))]}
    current = check(reader, snapshot(layout), {}, 2)
    raw = snapshot(layout)
    middle = {"filename": "/usr/lib/python3/site-packages/torch/nn/modules/module.py", "line": 1, "name": "_call_impl"}
    raw["segments"][0]["blocks"][0]["frames"][2] = middle  # neither the innermost frame nor the cell's
    _, blocks, born, freed = reader.read(raw, current, 7)
    assert blocks == current and born == [] and freed == []


def test_temporaries_in_one_pool_leave_the_other_pools_unread():
    # a forward pass's large temporaries: the small pool's segments (and the other device's) are not looked at
    reader = SnapshotReader(FrameTable())
    raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1))], (0, 8 * SEGMENT): [(0, 2**20, ("a", 2))]})
    raw["segments"][1]["segment_type"] = "large"
    counts = {(0, "small"): 1, (0, "large"): 1}
    current = check(reader, raw, {}, dict(counts))
    again = copy.deepcopy(raw)
    for blk in again["segments"][0]["blocks"]:
        blk["state"] = "this block is not looked at"
    counts[(0, "large")] += 5
    _, blocks, born, freed = reader.read(again, current, dict(counts))
    assert blocks == current and born == [] and freed == []
    counts[(0, "small")] += 1  # now the small pool had one too: its blocks are looked at (and seen as not allocated)
    _, _, born, freed = reader.read(again, blocks, dict(counts))
    assert born == [] and freed == [(0, SEGMENT)]


def test_blocks_replaced_in_one_segment_leave_the_pools_segments_with_the_same_totals_unread():
    # a cell that replaced two blocks by a larger one: the segment it changed shows every allocation of the
    # pool, so the pool's other segments, whose totals are the same, are not looked at
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 1))], (0, 4 * SEGMENT): [(0, 512, ("a", 2))]}
    current = check(reader, snapshot(layout), {}, {(0, "small"): (3, 0, 0)})
    layout[(0, SEGMENT)] = [(0, 1024, ("b", 1))]
    raw = snapshot(layout)
    for blk in raw["segments"][1]["blocks"]:
        blk["state"] = "this block is not looked at"
    _, blocks, born, freed = reader.read(raw, current, {(0, "small"): (4, 0, 2)})
    assert [(r[1], r[2]) for r in born] == [(SEGMENT, 1024)] and freed == [(0, SEGMENT + 512)]
    # one allocation more than the changed segments show (a temporary, or a block allocated again where one
    # was freed): the other segment is looked at (and its block seen as not allocated)
    _, _, born, freed = reader.read(copy.deepcopy(raw), blocks, {(0, "small"): (5, 0, 3)})
    assert born == [] and freed == [(0, 4 * SEGMENT)]


def test_another_cell_reusing_the_address_is_a_new_block():
    # cell a: x = torch.empty(...); cell b: del x; y = torch.empty(same size) lands where x was
    reader = SnapshotReader(FrameTable())
    current = check(reader, snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (4096, 512, ("a", 2))]}), {}, 2)
    _, blocks, born, freed = reader.read(
        snapshot({(0, SEGMENT): [(0, 512, ("b", 1)), (4096, 512, ("a", 2))]}), current, 3
    )
    assert [(r[1], reader.table.frames[reader.table.stacks[r[5]][0]][0]) for r in born] == [
        (SEGMENT, "/tmp/ipykernel_1/b.py")
    ]
    assert freed == []


def test_a_block_from_another_path_does_not_hide_the_cells():
    # a widget callback allocates outside any cell; the cells' frames are still told apart
    reader = SnapshotReader(FrameTable())
    callback = [dict(LIBRARY), {"filename": "/usr/lib/python3.12/asyncio/events.py", "line": 84, "name": "_run"}]
    layout = {(0, SEGMENT): [(0, 512, ("a", 1, True)), (512, 512, ("a", 5))]}
    raw = snapshot(layout)
    raw["segments"].append(segment(8 * SEGMENT, [(0, 512, callback)]))
    current = check(reader, raw, {}, 3)
    layout[(0, SEGMENT)][0] = (0, 512, ("b", 2, True))  # freed, and the same size allocated there by cell b
    raw = snapshot(layout)
    raw["segments"].append(segment(8 * SEGMENT, [(0, 512, [dict(f) for f in callback])]))
    _, _, born, freed = reader.read(raw, current, 4)
    assert [r[1] for r in born] == [SEGMENT] and freed == []


def test_a_segment_given_back_frees_its_blocks():
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))], (0, 4 * SEGMENT): [(0, 1024, ("a", 2))]}
    current = check(reader, snapshot(layout), {}, 2)
    del layout[(0, 4 * SEGMENT)]
    _, blocks, born, freed = reader.read(snapshot(layout), current, 2)
    assert freed == [(0, 4 * SEGMENT)] and born == [] and list(blocks) == [(0, SEGMENT)]


def test_a_table_it_did_not_make_is_compared_block_by_block():
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))]}
    table = check(reader, snapshot(layout), {}, 1)
    layout[(0, SEGMENT)].append((512, 512, ("a", 2)))
    check(reader, snapshot(layout), dict(table), 2)  # a copy: not the table the reader made
    check(reader, snapshot(layout), table, 2)


def test_an_interrupted_read_is_undone_and_the_next_one_reads_every_block():
    # an interrupt between the reader and the log: the log puts its table back and still holds the older snapshot
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (1024, 512, ("a", 2))]}
    table = check(reader, snapshot(layout), {}, 2)
    older = dict(table)
    layout[(0, SEGMENT)] = [(0, 512, ("b", 1)), (2048, 512, ("b", 2))]
    _, blocks, born, freed = reader.read(snapshot(layout), table, 4)
    assert blocks is table and table != older and born and freed
    reader.undo(table)
    assert table == older
    check(reader, snapshot(layout), table, 4)


def test_the_log_puts_its_table_back_when_an_add_is_interrupted():
    log = SnapshotLog()
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (1024, 512, ("a", 2))]}
    log.add(snapshot(layout), 2)
    older, version = dict(log.current), log.version
    layout[(0, SEGMENT)] = [(0, 512, ("b", 1)), (2048, 512, ("b", 2))]
    history = log._history

    def interrupted(raw):
        raise KeyboardInterrupt

    log._history = interrupted
    with pytest.raises(KeyboardInterrupt):
        log.add(snapshot(layout), 4)
    assert log.current == older and log.version == version and len(log.entries) == 1
    log._history = history
    entry = log.add(snapshot(layout), 4)
    _, want_blocks, want_born, want_freed = read_every_block(snapshot(layout), older, log.table)
    assert log.current == want_blocks
    assert {(r[0], r[1]): r for r in entry.born} == want_born and set(entry.freed) == want_freed


def test_a_torch_without_block_addresses_is_read_whole():
    reader = SnapshotReader(FrameTable())
    raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 2))]})
    for blk in raw["segments"][0]["blocks"]:
        del blk["address"]
    first = check(reader, raw, {}, 2)
    again = copy.deepcopy(raw)
    again["segments"][0]["blocks"][1]["size"] = 256
    check(reader, again, first, 3)


@pytest.mark.parametrize("seed", range(16))
def test_any_run_of_cells_gives_what_reading_every_block_gives(seed):
    # odd seeds count allocations per device and pool, as torch_probe.allocation_count does; even ones in one sum
    rnd = random.Random(seed)
    reader = SnapshotReader(FrameTable())
    layout, current = {}, {}
    by_pool = {(0, "small"): 0, (0, "large"): 0, (1, "small"): 0, (1, "large"): 0}
    frees = dict.fromkeys(by_pool, 0)  # seeds 1, 5, 9, 13 count frees too, as torch_probe.allocation_count does
    for _ in range(40):
        cell = f"c{rnd.randrange(4)}"
        for _ in range(rnd.randrange(0, 6)):
            move = rnd.random()
            if move < 0.1 or not layout:  # a new segment
                key = (rnd.randrange(2), SEGMENT * rnd.randrange(1, 40))
                layout.setdefault(key, [])
            elif move < 0.15:  # empty_cache gives one back
                key = rnd.choice(list(layout))
                frees[(key[0], "small")] += len(layout.pop(key))
            elif move < 0.2:  # a temporary: allocated and freed inside the cell
                pool = (rnd.randrange(2), "small")
                by_pool[pool] += 1
                frees[pool] += 1
            else:
                key = rnd.choice(list(layout))
                blocks = layout[key]
                slot = rnd.randrange(8)
                at = [k for k, b in enumerate(blocks) if b[0] == slot * 4096]
                who = None if rnd.random() < 0.2 else (cell, rnd.randrange(1, 4), rnd.random() < 0.5)
                if at and rnd.random() < 0.5:
                    blocks.pop(at[0])  # freed
                    frees[(key[0], "small")] += 1
                elif at:
                    blocks[at[0]] = (slot * 4096, rnd.choice((512, 1024)), who)  # freed and allocated again
                    by_pool[(key[0], "small")] += 1
                    frees[(key[0], "small")] += 1
                else:
                    blocks.append((slot * 4096, rnd.choice((512, 1024)), who))
                    blocks.sort()
                    by_pool[(key[0], "small")] += 1
        allocations = dict(by_pool) if seed % 2 else sum(by_pool.values())
        if seed % 4 == 1:
            allocations = {pool: (count, 0, frees[pool]) for pool, count in by_pool.items()}
        elif seed % 4 == 3:  # frees never counted: marks are made only when a check needs them; the same answer
            allocations = {pool: (count, 0, 0) for pool, count in by_pool.items()}
        known = None if rnd.random() < 0.1 else allocations
        current = check(reader, snapshot(layout), current, known)


def test_the_log_sends_the_same_changes_as_before():
    log = SnapshotLog()
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))]}
    log.add(snapshot(layout), 1, reason="cell")
    layout[(0, SEGMENT)] = [(0, 512, ("b", 1)), (1024, 512, ("b", 2))]
    entry = log.add(snapshot(layout), 3, reason="cell")
    assert sorted(r[1] for r in entry.born) == [SEGMENT, SEGMENT + 1024] and entry.freed == []
    layout[(0, SEGMENT)] = []
    entry = log.add(snapshot(layout), 3, reason="cell")
    assert entry.born == [] and sorted(entry.freed) == [(0, SEGMENT), (0, SEGMENT + 1024)]


# Found by review: each of these read a table a full read would not give.


def test_a_block_gone_pending_does_not_hide_a_reuse():
    # x freed while recorded on a side stream (new by state, no allocation behind it) and, in the same pool,
    # y from another cell lands where a block of the same size was freed (an allocation, new by nothing)
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (4096, 512, ("a", 2))]}
    current = check(reader, snapshot(layout), {}, {(0, "small"): 2, (0, "large"): 0})
    layout[(0, SEGMENT)][1] = (4096, 512, ("b", 7))
    raw = snapshot(layout)
    raw["segments"][0]["blocks"][0]["state"] = "active_pending_free"
    check(reader, raw, current, {(0, "small"): 3, (0, "large"): 0})


def test_a_segment_made_again_at_its_address_is_read_again():
    # torch.cuda.empty_cache(), then the same line allocates on another stream, or another cell at that address
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))]}
    raw = snapshot(layout)
    raw["segments"][0]["frames"] = stack("a", 1)
    current = check(reader, raw, {}, 1)
    raw = snapshot(layout)
    raw["segments"][0]["stream"] = 7
    raw["segments"][0]["frames"] = stack("a", 1)
    current = check(reader, raw, current, 2)
    raw = snapshot({(0, SEGMENT): [(0, 512, ("b", 1))]})
    raw["segments"][0]["stream"] = 7
    raw["segments"][0]["frames"] = stack("b", 1)
    check(reader, raw, current, 3)


def callback(line):
    """A widget's callback: no run_code frame, and an event loop's frame at the cells' anchor distance."""
    return [
        {"filename": "/tmp/ipykernel_1/cb.py", "line": line, "name": "on_click"},
        {"filename": "/usr/lib/python3.12/asyncio/events.py", "line": 84, "name": "_run"},
        {"filename": "/usr/lib/python3.12/asyncio/base_events.py", "line": 1936, "name": "_run_once"},
        {"filename": "/usr/lib/python3.12/asyncio/base_events.py", "line": 608, "name": "run_forever"},
        {"filename": "/usr/lib/python3/site-packages/ipykernel/kernelapp.py", "line": 739, "name": "start"},
    ]


def test_two_callbacks_of_the_same_depth_are_told_apart():
    reader = SnapshotReader(FrameTable())
    raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 2))]})
    raw["segments"].append(segment(8 * SEGMENT, [(0, 512, callback(10))]))
    current = check(reader, raw, {}, 3)
    for count, line in ((4, 20), (5, 30), (6, 40)):  # against the rows, then against the marks kept
        raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 2))]})
        raw["segments"].append(segment(8 * SEGMENT, [(0, 512, callback(line))]))
        current = check(reader, raw, current, count)


TORNADO = {"filename": "/usr/lib/python3/site-packages/tornado/platform/asyncio.py", "line": 205, "name": "start"}


def deeper_cell(name, line):
    """A cell's stack with one more outer frame: its cell frame lies one further from the outer end."""
    frames = [{"filename": f"/tmp/ipykernel_1/{name}.py", "line": line, "name": "<module>"}, *KERNEL, TORNADO]
    return [dict(f) for f in frames]


def test_marks_kept_from_an_anchor_distance_two_changes_ago_are_not_trusted():
    reader = SnapshotReader(FrameTable())
    counts = {(0, "small"): 1, (0, "large"): 1}

    def with_large(raw, frames):
        seg = segment(16 * SEGMENT, [(0, 2**20, frames)])
        seg["segment_type"] = "large"
        raw["segments"].append(seg)
        return raw

    def through_library():
        return [dict(LIBRARY)] + stack("a", 1)

    small = [(0, 512, ("a", 2))]
    current = check(reader, with_large(snapshot({(0, SEGMENT): small}), through_library()), {}, dict(counts))
    counts[(0, "large")] += 1  # a large temporary: the large pool's marks are made at this distance
    current = check(reader, with_large(snapshot({(0, SEGMENT): small}), through_library()), current, dict(counts))
    # many blocks from deeper cell stacks: the most common distance moves by one
    raw = snapshot({(0, SEGMENT): small + [(4096 * (i + 1), 512, ("tmp", i)) for i in range(6)]})
    for i, blk in enumerate(raw["segments"][0]["blocks"][2::2]):
        blk["frames"] = deeper_cell("c", 10 + i)
    counts[(0, "small")] += 6
    current = check(reader, with_large(raw, through_library()), current, dict(counts))
    counts[(0, "small")] += 1  # a small temporary: a check at the new distance; the large pool keeps its marks
    raw = copy.deepcopy(raw)
    current = check(reader, raw, current, dict(counts))
    assert reader.anchor_after() == 5
    # the large block freed, and cell a's line 1, run the deeper way, allocates the same size there
    raw = copy.deepcopy(raw)
    raw["segments"][1]["blocks"][0]["frames"] = deeper_cell("a", 1)
    counts[(0, "large")] += 1
    check(reader, raw, current, dict(counts))


def test_counters_reset_by_the_user_are_not_trusted():
    # torch.cuda.reset_accumulated_memory_stats() in a cell, then `del x; y = torch.empty(same size)`:
    # allocations 1 again, but the offset (live blocks less allocations plus frees) moved from 0 to 1
    reader = SnapshotReader(FrameTable())
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))]}
    current = check(reader, snapshot(layout), {}, {(0, "small"): (1, 0), (0, "large"): (0, 0)})
    layout[(0, SEGMENT)][0] = (0, 512, ("b", 1))
    check(reader, snapshot(layout), current, {(0, "small"): (1, 1), (0, "large"): (0, 0)})


# Found by a second review.


MB2 = 2**21


# torch reports an expandable segment (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) as one segment per
# mapped range: when a cell's allocation does not fit, the segment grows at its end, at the same address, so
# the blocks at its end are not where the old ones at its end were.


def large(blocks, total):
    """A snapshot of one large segment of ``total`` bytes: blocks [(offset, size, stack or None)]."""
    return {"segments": [segment(64 * MB2, blocks, total=total, segment_type="large")], "device_traces": []}


def test_an_expandable_segment_that_grew_is_not_read_by_its_common_end():
    # cell a: x = 2 MiB, y = 4 MiB; cell b: del x; z = 4 MiB (does not fit where x was: the segment grows)
    reader = SnapshotReader(FrameTable())
    counts = {(0, "small"): (0, 0, 0), (0, "large"): (2, 0, 0)}
    current = check(reader, large([(0, MB2, stack("a", 1)), (MB2, 2 * MB2, stack("a", 2))], 3 * MB2), {}, counts)
    # z (at 6 MiB) is the block the user wants to see; read by the common end, it would be taken for y (at 2 MiB)
    raw = large([(MB2, 2 * MB2, stack("a", 2)), (3 * MB2, 2 * MB2, stack("b", 1))], 5 * MB2)
    check(reader, raw, current, {(0, "small"): (0, 0, 0), (0, "large"): (3, 0, 1)})


def test_a_segment_says_whether_it_is_expandable_on_the_wire():
    # the OOM post-mortem's advice: expandable_segments:True cannot help where it is already on
    raw = large([(0, MB2, stack("a", 1))], 3 * MB2)
    plain, _ = read_state(copy.deepcopy(raw), FrameTable())
    raw["segments"][0]["is_expandable"] = True
    expandable, _ = read_state(raw, FrameTable())
    assert segment_columns(plain)["expandable"] == [0] and segment_columns(expandable)["expandable"] == [1]


def test_an_expandable_segment_growing_by_one_more_of_the_same_size_is_seen():
    # each cell appends one more 4 MiB tensor to a list, and frees a small one made earlier in the segment
    reader = SnapshotReader(FrameTable())
    current = check(reader, large([(0, MB2, stack("a", 1)), (MB2, 2 * MB2, stack("a", 2))], 3 * MB2), {}, 2)
    check(reader, large([(MB2, 2 * MB2, stack("a", 2)), (3 * MB2, 2 * MB2, stack("a", 2))], 5 * MB2), current, 3)


# Two callbacks that call the same library function from
# different lines have the same depth, the same frame at the anchor distance and the same innermost frame.


def test_two_callbacks_through_the_same_library_call_are_told_apart():
    reader = SnapshotReader(FrameTable())

    def through_library(line):
        return [dict(LIBRARY)] + callback(line)

    raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 2))]})
    raw["segments"].append(segment(8 * SEGMENT, [(0, 512, through_library(10))]))
    current = check(reader, raw, {}, 3)
    raw = snapshot({(0, SEGMENT): [(0, 512, ("a", 1)), (512, 512, ("a", 2))]})
    raw["segments"].append(segment(8 * SEGMENT, [(0, 512, through_library(20))]))  # freed; the other line's
    check(reader, raw, current, 4)


# Where most cell stacks have their cell frame one further out, the
# anchor of a cell stack at the usual depth that went through a library is the library's frame.


def test_cells_of_the_lesser_depth_through_a_library_are_told_apart():
    reader = SnapshotReader(FrameTable())
    layout = [(0, 512, ("a", 1, True))] + [(4096 * (i + 1), 512, ("tmp", i)) for i in range(6)]
    raw = snapshot({(0, SEGMENT): layout})
    for i, blk in enumerate(raw["segments"][0]["blocks"][2::2]):
        blk["frames"] = deeper_cell("c", 10 + i)  # most stacks: the cell frame 5 from the outer end
    current = check(reader, raw, {}, 7)
    assert reader.anchor_after() == 5
    raw = snapshot({(0, SEGMENT): [(0, 512, ("b", 2, True))] + layout[1:]})  # another cell, another line
    for i, blk in enumerate(raw["segments"][0]["blocks"][2::2]):
        blk["frames"] = deeper_cell("c", 10 + i)
    check(reader, raw, current, 8)


def test_the_anchor_is_where_most_live_blocks_have_their_cell_frame_not_most_stacks():
    reader = SnapshotReader(FrameTable())
    many = [(512 * i, 512, ("keep", 1)) for i in range(12)]  # one line's list: one stack, most of the memory
    current = check(reader, snapshot({(0, SEGMENT): many}), {}, 12)
    raw = snapshot({(0, SEGMENT): many + [(4096 * (i + 2), 512, ("tmp", i)) for i in range(3)]})
    for i, blk in enumerate(raw["segments"][0]["blocks"][-6::2]):
        blk["frames"] = deeper_cell("c", 10 + i)  # three lines of cells run one frame further out
    current = check(reader, raw, current, 15)
    current = check(reader, copy.deepcopy(raw), current, 16)  # a temporary: the stacks are checked
    assert reader.anchor_after() == 4  # the list's cell frame: its 12 blocks are not compared whole
    raw = snapshot({(0, SEGMENT): [(4096 * (i + 2), 512, ("tmp", i)) for i in range(3)]})
    for i, blk in enumerate(raw["segments"][0]["blocks"][1::2]):
        blk["frames"] = deeper_cell("c", 10 + i)
    current = check(reader, raw, current, 16)  # the list freed: the deeper cells hold every live block
    check(reader, copy.deepcopy(raw), current, 17)
    assert reader.anchor_after() == 5


# Before any stack came through run_code, the
# anchor is the frame just inside the frames all stacks share; with one stack seen, that is past its end, so
# every stack of that depth has no anchor (-1) and only depths are compared (a plain script's first cells, or
# a kernel whose first blocks came from a callback).


def test_a_second_stack_of_the_first_ones_depth_is_told_apart():
    reader = SnapshotReader(FrameTable())
    raw = snapshot({(0, SEGMENT): []})
    raw["segments"][0] = segment(SEGMENT, [(0, 512, callback(10))])
    current = check(reader, raw, {}, 1)
    raw = snapshot({(0, SEGMENT): []})
    raw["segments"][0] = segment(SEGMENT, [(0, 512, callback(20))])  # freed; another line's, same size
    check(reader, raw, current, 2)


def replayed(log):
    """The newest table as a frontend that followed every entry's changes from the oldest holds it."""
    table = {}
    for entry in log.entries:
        for key in entry.freed:
            table.pop(key, None)
        table.update(((row[0], row[1]), row) for row in entry.born)
    return table


def test_a_failed_add_leaves_the_add_before_it_kept():
    # the add before was read in place; this one fails before its read changes anything
    log = SnapshotLog()
    layout = {(0, SEGMENT): [(0, 512, ("a", 1)), (1024, 512, ("a", 2))]}
    log.add(snapshot(layout), 2)
    layout[(0, SEGMENT)] = [(0, 512, ("b", 1)), (2048, 512, ("b", 2))]
    log.add(snapshot(layout), 4)
    kept = dict(log.current)
    with pytest.raises(KeyError):
        log.add({"device_traces": []}, 5)  # no segments: a snapshot torch would not make
    assert log.current == kept == replayed(log)
    layout[(0, SEGMENT)] = [(4096, 512, ("c", 1))]
    log.add(snapshot(layout), 5)
    assert replayed(log) == read_every_block(snapshot(layout), {}, log.table)[1]


def interrupt_at_line(at, functions, lines):
    """A tracer that raises KeyboardInterrupt at the at-th line run in the named functions (lines: those run)."""

    def local(frame, event, arg):
        if event == "line" and len(lines) < at:
            lines.append(frame.f_lineno)
            if len(lines) == at:
                raise KeyboardInterrupt
        return local

    return lambda frame, event, arg: local if frame.f_code.co_name in functions else None


def test_a_second_interrupt_while_the_table_goes_back_is_settled_by_the_next_add():
    # Ctrl-C twice: the first lands after the read changed the table, the second at each line of the undo
    tried = 0
    for at in range(1, 40):
        log = SnapshotLog()
        layout = {(0, SEGMENT): [(i * 1024, 512, ("a", i)) for i in range(8)]}
        log.add(snapshot(layout), 8)
        kept = dict(log.current)
        layout[(0, SEGMENT)] = [(i * 1024 + 512, 512, ("b", i)) for i in range(8)]

        def interrupted(raw):
            raise KeyboardInterrupt

        log._history = interrupted
        lines = []
        sys.settrace(interrupt_at_line(at, ("undo", "_settle"), lines))
        try:
            with pytest.raises(KeyboardInterrupt):
                log.add(snapshot(layout), 16)
        finally:
            sys.settrace(None)
        if len(lines) < at:
            break  # every line of the undo was tried
        tried += 1
        assert log.current == kept == replayed(log), f"interrupted at line {lines[-1]}"
        del log._history
        entry = log.add(snapshot(layout), 16)
        assert log.current == read_every_block(snapshot(layout), {}, log.table)[1], f"line {lines[-1]}"
        table = dict(kept)
        for key in entry.freed:
            table.pop(key)
        table.update(((r[0], r[1]), r) for r in entry.born)
        assert table == log.current == replayed(log), f"interrupted at line {lines[-1]}"
    assert tried > 3


@pytest.mark.parametrize("seed", range(40))
def test_changed_marks_equal_each_blocks_own_comparison(seed):
    """_changed_marks compares two segments' stack marks in C where it can; it must name the blocks that
    comparing each block's (depth, anchor) one by one names, for spans at either end of their segments, with
    and without blocks that have no stack (before the span, too), and without an anchor distance."""
    from cuda_memdiff_kernel.reader import _changed_marks, _signatures

    rnd = random.Random(seed)

    def marks(depths, k):
        """Marks as _StackCheck.marks makes them: an anchor for each block with a stack."""
        anchors = [rnd.choice([1, 2, (3, (4, 5))]) for d in depths if d] if k else ()
        return depths, anchors, (k, False)

    def depths(n, k, empty):
        return [0 if rnd.random() < empty else rnd.randint(k or 1, k + 3) for _ in range(n)]

    for _ in range(50):
        k, empty = rnd.choice([0, 3]), rnd.choice([0, 0, 0.15])
        now = marks(depths(rnd.randint(1, 30), k, empty), k)
        if rnd.random() < 0.5:  # the same segment a cell later: a few blocks with another depth or anchor
            was_depths = list(now[0])
            for i in rnd.sample(range(len(was_depths)), min(len(was_depths), 3)):
                if was_depths[i] and rnd.random() < 0.5:
                    was_depths[i] += 1
            was = marks(was_depths, k)
            if rnd.random() < 0.7:  # most anchors kept
                was = (was[0], [a if rnd.random() < 0.2 else b for a, b in zip(was[1], now[1])], was[2])
        else:
            was = marks(depths(rnd.randint(1, 30), k, empty), k)
        n, m = len(now[0]), len(was[0])
        length = rnd.randint(0, min(n, m))
        start = 0 if rnd.random() < 0.5 else n - length
        was_start = 0 if start == 0 and rnd.random() < 0.8 else m - length
        expected = [
            i
            for i, a, b in zip(
                range(start, start + length),
                _signatures(now, start, start + length),
                _signatures(was, was_start, was_start + length),
            )
            if a != b
        ]
        assert _changed_marks(now, was, start, start + length, was_start) == expected, (now, was, start, was_start)


def test_cell_stacks_seen_with_no_live_cell_block_still_tell_two_callbacks_apart():
    # The only stack through run_code is a segment's (a cell's freed temporary made it); the live block is a
    # callback's. With no live block at a cell distance the anchor must still be one: with none (0) only
    # depths are compared, and another callback's block of the same depth and size there is missed.
    reader = SnapshotReader(FrameTable())
    raw = snapshot({(0, SEGMENT): []})
    raw["segments"][0] = segment(SEGMENT, [(0, 512, callback(10))])
    raw["segments"][0]["frames"] = stack("a", 1)
    current = check(reader, raw, {}, 1)
    raw = copy.deepcopy(raw)
    raw["segments"][0]["blocks"][0]["frames"] = callback(20)  # freed; another line's, same size
    check(reader, raw, current, 2)
    assert reader.anchor_after() != 0


def test_an_interrupt_while_the_anchor_takes_in_new_stacks_leaves_each_stack_its_own_distance():
    # Ctrl-C inside anchor_after, between the new stacks' distances: the next call must not add them again,
    # or every later stack id reads another stack's distance and the live blocks are counted at the wrong one
    tried = 0
    for at in range(1, 40):
        log = SnapshotLog()
        blocks = [(0, 512, None)] + [(1024 * (i + 1), 512, ("a", 2)) for i in range(10)]
        raw = snapshot({(0, SEGMENT): blocks})
        raw["segments"][0]["blocks"][0]["state"] = "active_allocated"
        raw["segments"][0]["blocks"][0]["frames"] = deeper_cell("c", 1)  # one block a cell run one frame out
        log.add(copy.deepcopy(raw), 11)
        lines = []
        sys.settrace(interrupt_at_line(at, ("anchor_after",), lines))
        try:
            log.add(copy.deepcopy(raw), 12)  # a temporary: the stacks are checked
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if len(lines) < at:
            break  # every line of anchor_after was tried
        tried += 1
        log.add(copy.deepcopy(raw), 12)  # the interrupted add was undone: every block is read
        log.add(copy.deepcopy(raw), 13)
        reader = log._reader
        assert len(reader._distances) == len(log.table.stacks), f"interrupted at line {lines[-1]}"
        assert reader.anchor_after() == 4, f"interrupted at line {lines[-1]}: 10 live blocks have distance 4"
    assert tried > 3
