"""A model of the caching allocator drives the reader through random sessions; each answer is held to reading
every block with a frame table of its own, as in a kernel.

The model does what the property test in test_reader.py does not: small and
large pools on one or two devices, requested sizes below sizes, blocks going
pending and finishing, temporaries, blocks freed and allocated again in
place, segments given back or made again at their address with another size
or stream, expandable segments growing and shrinking at their end, cell
stacks through libraries and one frame deeper, callbacks, short and empty
stacks, frame dicts shared per frame or fresh per block, and the counts in
each form the reader takes (frees right, never counted, or wrong).
A second review wrote it; it found the span of a grown segment read wrongly.
"""

import copy
import random
import traceback

import pytest
from cuda_memdiff_kernel.compact import FrameTable, read_state
from cuda_memdiff_kernel.reader import SnapshotReader
from test_reader import KERNEL, LIBRARY, TORNADO

SMALL, LARGE = 2**21, 20 * 2**20


def frames_of(spec):
    """spec -> list of (filename, line, name), innermost first."""
    kind = spec[0]
    if kind == "cell":  # (cell, line, lib depth, deeper)
        _, cell, line, lib, deeper = spec
        out = [(f"/tmp/ipykernel_1/{cell}.py", line, "<module>")] + [
            (f["filename"], f["line"], f["name"]) for f in KERNEL
        ]
        if deeper:
            out.append((TORNADO["filename"], TORNADO["line"], TORNADO["name"]))
        for i in range(lib):
            out.insert(0, (LIBRARY["filename"], LIBRARY["line"] + i, LIBRARY["name"]))
        return out
    if kind == "cb":  # a callback: (line, lib)
        _, line, lib = spec
        out = [
            ("/tmp/ipykernel_1/cb.py", line, "on_click"),
            ("/usr/lib/python3.12/asyncio/events.py", 84, "_run"),
            ("/usr/lib/python3.12/asyncio/base_events.py", 1936, "_run_once"),
            ("/usr/lib/python3.12/asyncio/base_events.py", 608, "run_forever"),
            ("/usr/lib/python3/site-packages/ipykernel/kernelapp.py", 739, "start"),
        ]
        for i in range(lib):
            out.insert(0, (LIBRARY["filename"], LIBRARY["line"] + i, LIBRARY["name"]))
        return out
    if kind == "short":  # a thread: one or two frames
        _, line, n = spec
        return [("/usr/lib/python3.12/threading.py", line + i, "run") for i in range(n)]
    if kind == "empty":
        return []
    raise ValueError(spec)


class Model:
    def __init__(self, rnd, cfg):
        self.rnd, self.cfg = rnd, cfg
        self.segs = {}  # (dev, addr) -> dict(type, total, stream, blocks=[[size, req, state, spec]])
        self.alloc = {}  # pool -> count
        self.frees = {}
        self.step_no = 0

    def pool(self, key):
        return (key[0], self.segs[key]["type"])

    def count(self, pool, a=0, f=0):
        self.alloc[pool] = self.alloc.get(pool, 0) + a
        self.frees[pool] = self.frees.get(pool, 0) + f

    def spec(self, cell):
        r, cfg = self.rnd.random(), self.cfg
        if self.step_no < cfg["empty_until"]:
            return ("empty",)
        if r < cfg["p_empty"]:
            return ("empty",)
        if r < cfg["p_empty"] + cfg["p_cb"]:
            return ("cb", self.rnd.randrange(1, 4), self.rnd.randrange(0, 2))
        if r < cfg["p_empty"] + cfg["p_cb"] + cfg["p_short"]:
            return ("short", self.rnd.randrange(1, 3), self.rnd.randrange(1, 3))
        deeper = self.rnd.random() < cfg["p_deeper"]
        return ("cell", cell, self.rnd.randrange(1, 4), self.rnd.choice((0, 0, 1, 2)), deeper)

    def new_segment(self, cell):
        rnd = self.rnd
        dev = rnd.randrange(self.cfg["devices"])
        kind = rnd.choice(("small", "large"))
        unit = SMALL if kind == "small" else LARGE
        addr = (16 * SMALL if kind == "small" else 4 * LARGE) * rnd.randrange(1, 12) + (0 if kind == "small" else 2**40)
        if (dev, addr) in self.segs:
            return
        total = unit if kind == "small" or rnd.random() < 0.5 else unit + SMALL * rnd.randrange(1, 4)
        size = self.block_size(kind)
        if size > total:
            size = total
        self.segs[(dev, addr)] = {"type": kind, "total": total, "stream": 0, "blocks": [[total, 0, "inactive", None]]}
        self.alloc_in((dev, addr), 0, size, cell)

    def block_size(self, kind):
        if kind == "small":
            return 512 * self.rnd.choice((1, 1, 2, 3))
        return SMALL * self.rnd.choice((1, 1, 2, 3))

    def req(self, size):
        return size if self.rnd.random() < 0.5 else size - self.rnd.choice((1, 8, 100))

    def alloc_in(self, key, i, size, cell, spec=None):
        blocks = self.segs[key]["blocks"]
        b = blocks[i]
        assert b[2] == "inactive" and b[0] >= size
        rest = b[0] - size
        blocks[i] = [size, self.req(size), "active_allocated", spec or self.spec(cell)]
        if rest:
            blocks.insert(i + 1, [rest, 0, "inactive", None])
        self.count(self.pool(key), a=1)

    def merge(self, key):
        out = []
        for b in self.segs[key]["blocks"]:
            if out and b[2] == "inactive" and out[-1][2] == "inactive":
                out[-1] = [out[-1][0] + b[0], 0, "inactive", None]
            else:
                out.append(b)
        self.segs[key]["blocks"] = out

    def step(self, cell):
        rnd = self.rnd
        move = rnd.random()
        keys = list(self.segs)
        if move < 0.08 or not keys:
            self.new_segment(cell)
            return
        key = rnd.choice(keys)
        seg = self.segs[key]
        blocks = seg["blocks"]
        pool = self.pool(key)
        if move < 0.13:  # empty_cache: give back segments with nothing active; maybe made again at once
            if all(b[2] == "inactive" for b in blocks):
                del self.segs[key]
                if rnd.random() < 0.5:  # made again at the same address, maybe another size or stream
                    unit = SMALL if seg["type"] == "small" else LARGE
                    total = unit if seg["type"] == "small" else rnd.choice((LARGE, LARGE + SMALL, LARGE - SMALL * 4))
                    self.segs[key] = {
                        "type": seg["type"],
                        "total": total,
                        "stream": rnd.randrange(2),
                        "blocks": [[total, 0, "inactive", None]],
                    }
                    for _ in range(rnd.randrange(1, 4)):
                        nb = self.segs[key]["blocks"]
                        free = [i for i, b in enumerate(nb) if b[2] == "inactive"]
                        if not free:
                            break
                        i = rnd.choice(free)
                        size = min(self.block_size(seg["type"]), nb[i][0])
                        if rnd.random() < 0.5 and nb[i][0] > size:  # at the end of the free block
                            nb[i] = [nb[i][0] - size, 0, "inactive", None]
                            nb.insert(i + 1, [size, 0, "inactive", None])
                            i += 1
                        self.alloc_in(key, i, size, cell)
            return
        if move < 0.16 and self.cfg["expandable"]:  # an expandable segment grows or shrinks at its end
            last = blocks[-1]
            grow = SMALL * rnd.randrange(1, 3)
            if rnd.random() < 0.5 and seg["total"] + grow <= 6 * SMALL + (0 if seg["type"] == "small" else 2 * LARGE):
                seg["total"] += grow
                if last[2] == "inactive":
                    last[0] += grow
                else:
                    blocks.append([grow, 0, "inactive", None])
                if rnd.random() < 0.7:  # the allocation that made it grow, at the new end
                    b = blocks[-1]
                    size = min(SMALL * rnd.choice((1, 2)), b[0])
                    if b[0] > size:
                        b[0] -= size
                        blocks.append([size, 0, "inactive", None])
                    self.alloc_in(key, len(blocks) - 1, size, cell)
            elif last[2] == "inactive" and last[0] > SMALL and seg["total"] > SMALL:
                cut = SMALL * (last[0] // SMALL) if last[0] % SMALL == 0 else SMALL
                cut = min(cut, last[0] - (0 if len(blocks) > 1 else 1))
                if cut > 0 and cut < seg["total"]:
                    seg["total"] -= cut
                    last[0] -= cut
                    if last[0] == 0:
                        blocks.pop()
            return
        if move < 0.2:  # a temporary
            self.count(pool, a=1, f=1)
            return
        if move < 0.25:  # pending ones finish
            for b in blocks:
                if b[2] == "active_pending_free":
                    b[:] = [b[0], 0, "inactive", None]
            self.merge(key)
            return
        active = [i for i, b in enumerate(blocks) if b[2] == "active_allocated"]
        free = [i for i, b in enumerate(blocks) if b[2] == "inactive"]
        r = rnd.random()
        if active and r < 0.3:  # freed (or pending)
            i = rnd.choice(active)
            if rnd.random() < 0.2:
                blocks[i][2] = "active_pending_free"
                self.count(pool, f=1)
            else:
                blocks[i] = [blocks[i][0], 0, "inactive", None]
                self.count(pool, f=1)
                self.merge(key)
        elif active and r < 0.6:  # freed and allocated again in place: same size, maybe another line
            i = rnd.choice(active)
            size = blocks[i][0]
            blocks[i] = [size, 0, "inactive", None]
            self.count(pool, f=1)
            self.alloc_in(key, i, size, cell)
        elif free:
            i = rnd.choice(free)
            size = min(self.block_size(seg["type"]), blocks[i][0])
            if rnd.random() < 0.3:  # at the end of the free block: leave space before
                rest = blocks[i][0] - size
                if rest:
                    blocks[i] = [rest, 0, "inactive", None]
                    blocks.insert(i + 1, [size, 0, "inactive", None])
                    i += 1
            self.alloc_in(key, i, size, cell)

    def raw(self, share):
        cache = {}

        def frame(t):
            if share == "fresh" or (share == "mixed" and self.rnd.random() < 0.5):
                return {"filename": t[0], "line": t[1], "name": t[2]}
            d = cache.get(t)
            if d is None:
                d = cache[t] = {"filename": t[0], "line": t[1], "name": t[2]}
            return d

        segments = []
        for (dev, addr), seg in self.segs.items():
            out, cursor = [], addr
            alloc = active = req = 0
            for size, rq, state, spec in seg["blocks"]:
                fr = [frame(t) for t in frames_of(spec)] if spec else []
                out.append({"address": cursor, "size": size, "requested_size": rq, "state": state, "frames": fr})
                if state == "active_allocated":
                    alloc += size
                if state != "inactive":
                    active += size
                    req += rq
                cursor += size
            assert cursor == addr + seg["total"]
            segments.append(
                {
                    "device": dev,
                    "address": addr,
                    "total_size": seg["total"],
                    "stream": seg["stream"],
                    "segment_type": seg["type"],
                    "segment_pool_id": (0, 0),
                    "allocated_size": alloc,
                    "active_size": active,
                    "requested_size": req,
                    "frames": [],
                    "blocks": out,
                }
            )
        self.rnd.shuffle(segments)
        return {"segments": segments, "device_traces": []}

    def counts(self, form):
        pools = {(d, t): None for d in range(self.cfg["devices"]) for t in ("small", "large")}
        a = {p: self.alloc.get(p, 0) for p in pools}
        f = {p: self.frees.get(p, 0) for p in pools}
        if form == "int":
            return sum(a.values())
        if form == "dict":
            return a
        if form == "t2":
            return {p: (a[p], 0) for p in pools}
        if form == "t3":
            return {p: (a[p], 0, f[p]) for p in pools}
        if form == "t3zero":
            return {p: (a[p], 0, 0) for p in pools}
        if form == "t3rand":
            return {p: (a[p], 0, self.rnd.randrange(0, 3) * f[p]) for p in pools}
        raise ValueError(form)


def names(table, row):
    return row[:5] + (tuple(tuple(table.frames[f]) for f in table.stacks[row[5]]),) + row[6:]


def seg_names(table, seg):
    return seg[:6] + (tuple(tuple(table.frames[f]) for f in table.stacks[seg[6]]),) + seg[7:]


def run(seed, cells=40):
    """(how it ended: ok, or how the reader differed, seed, cell, details, the session's knobs)."""
    rnd = random.Random(seed)
    cfg = {
        "devices": rnd.choice((1, 2)),
        "p_empty": rnd.choice((0, 0.05, 0.2)),
        "p_cb": rnd.choice((0, 0.1, 0.3)),
        "p_short": rnd.choice((0, 0.05, 0.2)),
        "p_deeper": rnd.choice((0, 0.1, 0.6)),
        "expandable": rnd.random() < 0.4,
        "empty_until": rnd.choice((0, 0, 3, 8)),
    }
    form = rnd.choice(("int", "dict", "t2", "t3", "t3", "t3zero", "t3rand"))
    share = rnd.choice(("shared", "shared", "fresh", "mixed"))
    model = Model(rnd, cfg)
    reader = SnapshotReader(FrameTable())
    ref_table = FrameTable()
    current = {}
    for step in range(cells):
        cell = f"c{rnd.randrange(5)}"
        model.step_no = step
        for _ in range(rnd.randrange(0, 7)):
            model.step(cell)
        raw = model.raw(share)
        counts = model.counts(form)
        if rnd.random() < 0.05:
            counts = None
        given = current
        if rnd.random() < 0.03 and current:
            given = dict(current)  # a table the log did not make
        pristine = copy.deepcopy(raw)
        given_named = {key: names(reader.table, row) for key, row in given.items()}  # read changes it in place
        try:
            segments, blocks, born, freed = reader.read(raw, given, counts)
        except Exception:
            return "CRASH", seed, step, traceback.format_exc(), cfg, form, share
        ref_segments, ref_blocks = read_state(pristine, ref_table)
        T, R = reader.table, ref_table
        got = {key: names(T, row) for key, row in blocks.items()}
        want = {key: names(R, row) for key, row in ref_blocks.items()}
        if [seg_names(T, s) for s in segments] != [seg_names(R, s) for s in ref_segments]:
            return "BUG-segments", seed, step, None, cfg, form, share
        if got != want:
            diffs = sorted(key for key in got.keys() | want.keys() if got.get(key) != want.get(key))
            detail = [(key, got.get(key), want.get(key)) for key in diffs[:4]]
            return "table", seed, step, detail, cfg, form, share
        want_born = {key: row for key, row in want.items() if given_named.get(key) != row}
        want_freed = {key for key in given_named if key not in want}
        got_born = {(r[0], r[1]): names(T, r) for r in born}
        if got_born != want_born or len(born) != len(want_born):
            return "BUG-born", seed, step, (got_born.keys() ^ want_born.keys()), cfg, form, share
        if set(freed) != want_freed or len(freed) != len(want_freed):
            return "BUG-freed", seed, step, set(freed) ^ want_freed, cfg, form, share
        current = blocks
    return "ok", seed, None, None, cfg, form, share


@pytest.mark.parametrize("seed", range(120))
def test_a_modelled_allocator_gives_what_reading_every_block_gives(seed):
    kind, _, step, detail, cfg, form, share = run(seed)
    assert kind == "ok", f"{kind} at cell {step}: {detail} ({cfg}, counts {form}, frames {share})"
