"""Hostile recordings made by mutating real ones, run through every reader.

Takes the recordings in test-data/ (snapshot pickles plain and gzipped,
session folders with their manifest.json, a multi-rank folder), makes mutants
of them with a fixed seed (cut at many offsets, bytes flipped, opcodes
swapped, and, most useful, decoded with plain ``pickle`` and written back
with a value of the wrong type or shape), and runs each through:

- the CLI (``summary``, ``diff`` against the original, ``session``,
  ``leaks``, text and ``--json``), in one Node process through
  bench/fuzz_cli.js so a thousand runs take seconds;
- the kernel helper replaying each session folder in a real IPython shell
  (``ReplaySource``, then each cell run as a notebook runs it), and the
  snapshot messages it sends, checked against the message schema and decoded
  by the engine's WireDecoder as the panel does.

An outcome passes when it is a report with no NaN, ``undefined`` or
negative byte count in it, or a refusal (the engine's SnapshotError on the
TypeScript side, ReplayError on the Python side) whose one line names the
file. A mutant marked ``refuse`` must be refused by ``summary`` and ``diff``:
reported, its wrong value would be a wrong figure printed silently. Anything
else is a failure: a stack trace or TypeError reaching the user, a crash, a
hang (the Node process has a timeout), memory past the Node heap cap.

    python bench/fuzz_files.py [--seed N] [--rounds N] [--keep DIR]

prints one line per failure and a count per command; exits 1 on a failure.
tests/test_fuzz_files.py runs it with the default seed in CI.
"""

import argparse
import copy
import gzip
import json
import math
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "test-data")
HARNESS = os.path.join(ROOT, "bench", "fuzz_cli.js")
sys.path.insert(0, os.path.join(ROOT, "kernel-helpers"))

# Recordings mutated: small ones, so a round stays fast; one of each shape the readers take.
SESSIONS = [
    os.path.join(DATA, "recordings", "oom--python"),  # an OOM snapshot beside a cell
    os.path.join(DATA, "recordings", "traceback_pin--python"),
    os.path.join(DATA, "live", "traceback_pin--holders"),  # holders files
    os.path.join(DATA, "live", "lru_cache_tensor_arg--holders"),  # per-block roles files
    os.path.join(DATA, "exports", "gpu_memory_demo--restart"),  # kernel restarts, exported by the panel
    os.path.join(DATA, "recordings", "multi_gpu_split--python"),  # two devices
]
RANKS = os.path.join(DATA, "ranks", "ddp_one_gpu")
FILES = [
    os.path.join(DATA, "fixtures", "torch_2_11.proto2.pickle"),
    os.path.join(DATA, "fixtures", "torch_2_11.proto5.pickle"),
    os.path.join(DATA, "fixtures", "torch_2_0.proto2.pickle"),  # blocks without addresses
    os.path.join(DATA, "fixtures", "torch_2_11.json.gz"),
    os.path.join(DATA, "recordings", "traceback_pin--python", "cell01.pickle.gz"),
]

HUGE = 2**70
NAN = float("nan")


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:1] == b"{":
        return json.loads(data)
    return pickle.loads(data)


# -- structural mutations of a snapshot dict ---------------------------------
# Each takes (snapshot, rng), changes it in place, and returns what a reader
# must do: "refuse" (its figures would be wrong) or "either" (a report that
# reads around it, or a refusal). Mutators that find nothing to change
# return None and the mutant is not written.


def _segments(s):
    return s.get("segments") if isinstance(s, dict) else s


def _pick_segment(s, rng, with_blocks=False):
    segs = [g for g in _segments(s) or [] if isinstance(g, dict) and (g.get("blocks") or not with_blocks)]
    return rng.choice(segs) if segs else None


def _pick_block(s, rng):
    seg = _pick_segment(s, rng, with_blocks=True)
    return (seg, rng.choice(seg["blocks"])) if seg else (None, None)


def _pick_entry(s, rng, action=None):
    traces = s.get("device_traces") if isinstance(s, dict) else None
    entries = [e for t in traces or [] for e in t or [] if action is None or e.get("action") == action]
    return rng.choice(entries) if entries else None


def _frames(s, rng):
    holders = [b for g in _segments(s) or [] for b in g.get("blocks", []) if b.get("frames")]
    holders += [e for t in s.get("device_traces") or [] for e in t or [] if e.get("frames")]
    return rng.choice(holders)["frames"] if holders else None


# Values of the wrong type or out of range for a byte count or address.
BAD_NUMBERS = [-1, -(2**40), NAN, float("inf"), 1.5, HUGE, "4096", None, [], {}, True]


def set_field(target, field, value):
    if value is _MISSING:
        target.pop(field, None)
    else:
        target[field] = value


_MISSING = object()


def mut_segment_number(s, rng):
    seg = _pick_segment(s, rng)
    if seg is None:
        return None
    field = rng.choice(["address", "total_size", "device"])
    value = rng.choice(BAD_NUMBERS + [_MISSING])
    # A missing or None device is device 0, as torch before 2.1 wrote.
    if field == "device" and (value is None or value is _MISSING):
        return None
    set_field(seg, field, value)
    return "refuse"


def mut_block_number(s, rng):
    seg, blk = _pick_block(s, rng)
    if blk is None:
        return None
    field = rng.choice(["size", "address", "requested_size"])
    value = rng.choice(BAD_NUMBERS + [_MISSING])
    if field in ("address", "requested_size") and (value is None or value is _MISSING):
        return None  # 2.0-era blocks have neither: read from the sizes
    set_field(blk, field, value)
    return "refuse"


def mut_block_state(s, rng):
    _, blk = _pick_block(s, rng)
    if blk is None:
        return None
    set_field(blk, "state", rng.choice(["active", "", 3, None, _MISSING, ["inactive"]]))
    return "refuse"


def mut_block_grows(s, rng):
    """A block's size no longer fits its segment, or overlaps the next block."""
    seg, blk = _pick_block(s, rng)
    if blk is None or not isinstance(blk.get("size"), int):
        return None
    blk["size"] += rng.choice([1, 512, seg["total_size"]])
    return "refuse"


def mut_block_shrinks(s, rng):
    """Blocks that no longer sum to their segment: the rest is free space."""
    _, blk = _pick_block(s, rng)
    if blk is None or not isinstance(blk.get("size"), int) or blk["size"] < 2:
        return None
    blk["size"] //= 2
    return "either"


def mut_duplicate_block(s, rng):
    seg, blk = _pick_block(s, rng)
    if blk is None or "address" not in blk:
        return None
    seg["blocks"].append(copy.deepcopy(blk))
    return "refuse"


def mut_duplicate_segment(s, rng):
    seg = _pick_segment(s, rng)
    if seg is None:
        return None
    _segments(s).append(copy.deepcopy(seg))
    return "refuse"


def mut_overlap_segment(s, rng):
    seg = _pick_segment(s, rng)
    if seg is None or not isinstance(seg.get("total_size"), int) or seg["total_size"] < 2:
        return None
    other = copy.deepcopy(seg)
    shift = seg["total_size"] // 2
    other["address"] += shift
    for b in other.get("blocks", []):
        if "address" in b:
            b["address"] += shift
    _segments(s).append(other)
    return "refuse"


def mut_container_shape(s, rng):
    """A list where a dict is, a dict where a list is, a string or None for either."""
    choice = rng.randrange(5)
    if choice == 0 and isinstance(s, dict):
        s["segments"] = {"0": s.get("segments")}
    elif choice == 1:
        seg = _pick_segment(s, rng)
        if seg is None:
            return None
        seg["blocks"] = rng.choice([{"0": 1}, "blocks", 7])
    elif choice == 2 and isinstance(s, dict):
        s["device_traces"] = rng.choice([{"0": []}, "x", 5, [5], ["entries"]])
    elif choice == 3:
        segs = _segments(s)
        if not segs:
            return None
        segs[rng.randrange(len(segs))] = rng.choice([[1, 2], "segment", None, 7])
    elif choice == 4:
        seg, blk = _pick_block(s, rng)
        if blk is None:
            return None
        seg["blocks"][seg["blocks"].index(blk)] = rng.choice([[1, 2], "block", None])
    else:
        return None
    return "refuse"


def mut_top_level(s, rng):
    choice = rng.randrange(4)
    if choice == 0:
        s.pop("segments", None)
        return "refuse"
    if choice == 1:
        s.pop("device_traces", None)
        return "either"
    if choice == 2:
        s["device_traces"] = None
        return "either"
    s[rng.choice(["extra", 7, ("a", 1)])] = rng.choice([None, [1], {"x": NAN}])
    return "either"


def mut_frames(s, rng):
    """Frames with weird names, files, lines, or not frames at all: read around, never a crash."""
    frames = _frames(s, rng)
    if not frames:
        return None
    f = rng.choice(frames)
    choice = rng.randrange(6)
    if choice == 0:
        f["filename"] = rng.choice([None, 5, "", "\x1b[2J/tmp/x.py", "a" * 100_000, "/tmp/ipykernel_1/\u202e.py", b"x"])
    elif choice == 1:
        f["line"] = rng.choice([-1, NAN, HUGE, "12", None, 1.5, True])
    elif choice == 2:
        f["name"] = rng.choice([None, 5, "", "\x00", "<module>" * 1000])
    elif choice == 3:
        frames[frames.index(f)] = rng.choice(["frame", 5, None, [1, 2]])
    elif choice == 4:
        f.clear()
    else:
        frames.extend(frames * rng.choice([2, 50]))
    return "either"


def mut_frames_container(s, rng):
    _, blk = _pick_block(s, rng)
    if blk is None:
        return None
    blk["frames"] = rng.choice(["frames", 5, {"name": "x"}, [[]], None])
    return "either"


def mut_trace_number(s, rng):
    e = _pick_entry(s, rng)
    if e is None:
        return None
    field = rng.choice(["addr", "size", "time_us", "device_free", "stream"])
    value = rng.choice(BAD_NUMBERS)
    if value is None and field in ("addr", "time_us", "device_free", "size", "stream"):
        if field != "addr" or e.get("action") not in ("alloc", "free_requested", "free_completed"):
            return None  # read as absent
    if field == "time_us" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        set_field(e, field, value)
        return "either"  # a negative, fractional or huge time is still a time: only the order of entries is read
    if field == "stream" and isinstance(value, int) and not isinstance(value, bool) and value != HUGE:
        set_field(e, field, value)
        return "either"  # streams may be negative
    set_field(e, field, value)
    return "refuse"


def mut_trace_action(s, rng):
    e = _pick_entry(s, rng)
    if e is None:
        return None
    value = rng.choice(["teleport", "", "ALLOC", 7, None, _MISSING])
    set_field(e, "action", value)
    return "either" if isinstance(value, str) else "refuse"


def mut_trace_order(s, rng):
    """Entries shuffled, doubled, or a free with no alloc before it: replays must read around it."""
    traces = s.get("device_traces") if isinstance(s, dict) else None
    if not traces or not traces[0]:
        return None
    entries = traces[0]
    choice = rng.randrange(4)
    if choice == 0:
        rng.shuffle(entries)
    elif choice == 1:
        entries.extend(copy.deepcopy(entries))
    elif choice == 2:
        del entries[: len(entries) // 2]
    else:
        entries.reverse()
    return "either"


def mut_trace_entry_shape(s, rng):
    traces = s.get("device_traces") if isinstance(s, dict) else None
    if not traces or not traces[0]:
        return None
    traces[0][rng.randrange(len(traces[0]))] = rng.choice(["entry", 5, None, [1]])
    return "refuse"


def mut_oom_entry(s, rng):
    traces = s.get("device_traces") if isinstance(s, dict) else None
    if not traces or traces[0] is None:
        return None
    entry = {"action": "oom", "size": rng.choice([0, 2**40, HUGE, -1, "x"]), "stream": 0, "time_us": 1}
    if rng.random() < 0.5:
        entry["device_free"] = rng.choice([0, -1, HUGE, "x", None])
    traces[0].append(entry)
    bad = [v for v in (entry["size"], entry.get("device_free", 0)) if v is not None and not _good_int(v)]
    return "refuse" if bad else "either"


def _good_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**53


def mut_pool_and_flags(s, rng):
    seg = _pick_segment(s, rng)
    if seg is None:
        return None
    field = rng.choice(["segment_pool_id", "is_expandable", "segment_type", "stream"])
    value = rng.choice([(1, 2, 3), "pool", [HUGE], None, "yes", 5, NAN])
    seg[field] = value
    if field == "segment_pool_id":
        # One integer is read as a pool of one part, as the engine's reader does on purpose.
        ok = value is None or _good_int(value) or (isinstance(value, tuple) and all(_good_int(p) for p in value))
        return "either" if ok else "refuse"
    if field == "stream":
        return "either" if value is None or _good_int(value) else "refuse"
    return "either"


def mut_device_index(s, rng):
    """A segment (and its blocks' traces) moved to another device: one torch never listed, or past a limit."""
    seg = _pick_segment(s, rng)
    if seg is None:
        return None
    device = rng.choice([1, 7, 31, 32, 33, 1023, 1024, 2**31])
    seg["device"] = device
    return "either" if device < 1024 else "refuse"


def mut_bare_list(s, rng):
    """torch.cuda.memory_snapshot()'s form: the segment list alone, no traces."""
    if not isinstance(s, dict) or not isinstance(s.get("segments"), list):
        return None
    segments = s.pop("segments")
    s.clear()
    s["__list__"] = segments
    return "either"


def mut_whole_floats(s, rng):
    """Sizes and addresses written as floats of whole numbers (a JSON writer's 1024.0)."""
    seg, blk = _pick_block(s, rng)
    if blk is None or not isinstance(blk.get("size"), int):
        return None
    blk["size"] = float(blk["size"])
    seg["total_size"] = float(seg["total_size"])
    return "either"


def mut_near_limit(s, rng):
    """An address near 2**53, where a sum of address and size is no longer exact in JavaScript."""
    seg = _pick_segment(s, rng)
    if seg is None or not isinstance(seg.get("address"), int):
        return None
    shift = 2**53 - rng.choice([1, 2**20, 2**30]) - seg["address"]
    seg["address"] += shift
    for b in seg.get("blocks", []):
        if isinstance(b.get("address"), int):
            b["address"] += shift
    return "either"


SNAPSHOT_MUTATORS = [
    mut_device_index,
    mut_bare_list,
    mut_whole_floats,
    mut_near_limit,
    mut_segment_number,
    mut_block_number,
    mut_block_state,
    mut_block_grows,
    mut_block_shrinks,
    mut_duplicate_block,
    mut_duplicate_segment,
    mut_overlap_segment,
    mut_container_shape,
    mut_top_level,
    mut_frames,
    mut_frames_container,
    mut_trace_number,
    mut_trace_action,
    mut_trace_order,
    mut_trace_entry_shape,
    mut_oom_entry,
    mut_pool_and_flags,
]


# -- byte mutations -----------------------------------------------------------
# Pickle opcodes a swap puts in: containers, memo and the value kinds a snapshot uses.
OPCODES = b"().0abdehqrstu}]NI\x85\x86\x87\x88\x89\x8a\x8c\x94\x95KMJGX\x80"


def truncations(data, rng, count):
    cuts = sorted({rng.randrange(1, len(data)) for _ in range(count)} | {1, 2, len(data) - 1})
    return [data[:c] for c in cuts]


def flips(data, rng, count):
    out = []
    for _ in range(count):
        b = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 8])):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        out.append(bytes(b))
    return out


def opcode_swaps(data, rng, count):
    out = []
    for _ in range(count):
        b = bytearray(data)
        b[rng.randrange(2, len(b))] = rng.choice(OPCODES)
        out.append(bytes(b))
    return out


# -- manifest and index mutations ---------------------------------------------
def manifest_mutants(manifest, files, rng):
    """(name, manifest, expect) of a session folder's manifest."""
    cells = manifest["cells"]
    out = []

    def variant(name, expect, change):
        m = copy.deepcopy(manifest)
        if change(m) is not False:
            out.append((name, m, expect))

    out.append(("cells-not-list", dict(manifest, cells={"0": cells[0]}), "refuse"))
    out.append(("cells-missing", {k: v for k, v in manifest.items() if k != "cells"}, "refuse"))
    out.append(("cells-empty", dict(manifest, cells=[]), "refuse"))
    out.append(("not-object", [manifest], "refuse"))
    variant("reversed", "refuse", lambda m: m["cells"].reverse() if len(m["cells"]) > 1 else False)
    variant("duplicated-cell", "either", lambda m: m["cells"].append(copy.deepcopy(m["cells"][-1])))
    variant("dropped-cell", "either", lambda m: m["cells"].pop(0))
    variant("missing-pickle", "either", lambda m: m["cells"][-1].update(snapshot_file="nowhere.pickle.gz"))
    variant("all-missing", "refuse", lambda m: [c.update(snapshot_file="nowhere.pickle") for c in m["cells"]])
    variant("oom-missing", "either", lambda m: m["cells"][0].update(oom_snapshots=["nowhere.pickle.gz"]))
    variant("holders-missing", "either", lambda m: m["cells"][0].update(holders_file="nowhere.json"))
    variant("holders-is-pickle", "either", lambda m: m["cells"][0].update(holders_file=files[0]))
    variant("roles-file-missing", "either", lambda m: m["cells"][0].update(roles_file="nowhere.json"))
    variant("pickle-is-manifest", "refuse", lambda m: m["cells"][0].update(snapshot_file="manifest.json"))
    fields = {
        "snapshot_file": [None, 5, "", "../x.pickle", "/etc/passwd", ["a"]],
        "index": ["1", 1.5, -1, HUGE, True, [0]],
        "execution_count": ["3", -1, 1.5, True, {}, HUGE],
        "source": [5, [1, 2], {"a": 1}],
        "error": [5, ["x"], {"ename": "OOM"}, True],
        "label": [5, ["step"], {}],
        "oom_snapshots": ["oom00.pickle.gz", [5], [None], {"0": "x"}],
        "holders_file": [5, "../x.json", ["a"]],
        "roles_file": [5, "../x.json", ""],
        "roles": ["x", [1], {"parameter": 5}, {"bytes": {"parameter": -5}}, {"bytes": {"weights": 1}}],
        "kernel_session": ["1", 1.5, [], NAN],
        "history": ["x", {"since_us": "x", "until_us": 1, "complete": True}, {}],
        "before": ["x", 5, {"allocated": "x"}, {"allocated": -1}, {"per_device": "x"}, {"per_device": [5]}],
        "after": [
            "x",
            {"allocated": NAN},
            {"peak_allocated": "x"},
            {"peak_allocated": -5},
            {"peak_allocated": HUGE},
            {"per_device": [{"device": "x", "allocated": -1}]},
            {"peak_exact": "no"},
        ],
    }
    for field, values in fields.items():
        for value in values:
            k = rng.randrange(len(cells))
            expect = "either" if field == "error" else "refuse"
            variant(f"{field}={_short(value)}", expect, lambda m, f=field, v=value, k=k: m["cells"][k].update({f: v}))
    variant("cell-not-object", "refuse", lambda m: m["cells"].__setitem__(0, rng.choice(["cell", 5, None, [1]])))
    top = {"device_count": ["x", -1, HUGE, NAN], "code_names_by_execution_count": ["x", [1], {"1": 5}]}
    for field, values in top.items():
        for value in values:
            variant(f"{field}={_short(value)}", "either", lambda m, f=field, v=value: m.update({f: v}))
    return out


def _short(value):
    text = repr(value)
    return text if len(text) < 24 else text[:20] + "..."


def ranks_mutants(index):
    out = []

    def variant(name, change):
        m = copy.deepcopy(index)
        change(m)
        out.append((name, m))

    for value in ["2", -1, 0, NAN, None, 1.5, HUGE, True]:
        variant(f"world_size={_short(value)}", lambda m, v=value: m.update(world_size=v))
    for value in ["x", None, {"0": 1}, [5], [{"rank": "0"}], [{"rank": -1, "folder": "rank0"}]]:
        variant(f"ranks={_short(value)}", lambda m, v=value: m.update(ranks=v))
    variant("folder-escapes", lambda m: m["ranks"][0].update(folder="../rank0"))
    variant("folder-missing", lambda m: m["ranks"][1].update(folder="rank9"))
    variant("rank-duplicate", lambda m: m["ranks"][1].update(rank=0))
    variant("off-wrong", lambda m: m["ranks"][1].update(off="yes"))
    variant("version", lambda m: m.update(version="99"))
    variant("format", lambda m: m.update(format=5))
    return out


# -- writing mutants ------------------------------------------------------------
def dump(value, gz, protocol):
    if isinstance(value, dict) and "__list__" in value:  # mut_bare_list
        value = value["__list__"]
    data = pickle.dumps(value, protocol=protocol)
    return gzip.compress(data, mtime=0) if gz else data


class Corpus:
    """Mutant files and folders under ``root``, and the CLI runs and replays to make of them."""

    def __init__(self, root, rng):
        self.root = root
        self.rng = rng
        self.cases = []  # {"id", "argv", "expect", "file"}: CLI runs
        self.replays = []  # {"id", "folder", "expect"}: Python replays
        self._n = 0

    def path(self, name):
        self._n += 1
        return os.path.join(self.root, f"{self._n:05d}-{name}")

    def cli(self, case_id, argv, expect, names):
        for json_flag in ([], ["--json"]):
            self.cases.append({"id": case_id, "argv": argv + json_flag, "expect": expect, "names": names})

    def snapshot_file(self, name, data, original, expect):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        self.cli(p, ["summary", p], expect, [p])
        self.cli(p, ["diff", original, p], expect, [p])
        if self.rng.random() < 0.3:
            self.cli(p, ["diff", p, original], expect, [p])
        return p

    def session_with(self, source, cell_file, data, expect, label):
        """A copy of ``source`` whose ``cell_file`` is replaced by ``data``."""
        folder = self.path(label)
        shutil.copytree(source, folder)
        with open(os.path.join(folder, cell_file), "wb") as f:
            f.write(data)
        self.session_cases(folder, expect)
        return folder

    def session_cases(self, folder, expect):
        # A session reports around a cell it cannot read (and names it), so a bad cell is "either" here.
        for command in ("session", "leaks"):
            self.cli(folder, [command, folder], "either" if expect == "refuse" else expect, [folder])
        self.replays.append({"id": folder, "folder": folder, "expect": expect})


def build(root, seed, rounds):
    rng = random.Random(seed)
    corpus = Corpus(root, rng)
    # Plain snapshot files: byte mutations, then structural ones.
    for original in FILES:
        with open(original, "rb") as f:
            raw = f.read()
        gz = raw[:2] == b"\x1f\x8b"
        plain = gzip.decompress(raw) if gz else raw
        base = os.path.basename(original)
        for k, data in enumerate(truncations(plain, rng, 6 * rounds)):
            corpus.snapshot_file(f"cut{k}-{base}", gzip.compress(data, mtime=0) if gz else data, original, "either")
        for k, data in enumerate(truncations(raw, rng, rounds)):
            corpus.snapshot_file(f"rawcut{k}-{base}", data, original, "either")
        for k, data in enumerate(flips(plain, rng, 3 * rounds) + opcode_swaps(plain, rng, 3 * rounds)):
            corpus.snapshot_file(f"flip{k}-{base}", data, original, "either")
        snapshot = load(original)
        for mutator in SNAPSHOT_MUTATORS:
            for k in range(rounds):
                s = copy.deepcopy(snapshot)
                expect = mutator(s, rng)
                if expect is None:
                    continue
                data = dump(s, rng.random() < 0.5, rng.choice([2, 3, 4, 5]))
                corpus.snapshot_file(f"{mutator.__name__}{k}-{base}.pickle", data, original, expect)
    # Session folders: one cell's pickle mutated, then the manifest.
    for source in SESSIONS:
        with open(os.path.join(source, "manifest.json")) as f:
            manifest = json.load(f)
        files = [c["snapshot_file"] for c in manifest["cells"]]
        for mutator in SNAPSHOT_MUTATORS:
            cell_file = rng.choice(files)
            s = load(os.path.join(source, cell_file))
            expect = mutator(s, rng)
            if expect is not None:
                corpus.session_with(source, cell_file, dump(s, True, 4), expect, f"{mutator.__name__}-session")
        cell_file = rng.choice(files)
        with open(os.path.join(source, cell_file), "rb") as f:
            raw = f.read()
        for k, data in enumerate(truncations(gzip.decompress(raw), rng, rounds)):
            corpus.session_with(source, cell_file, gzip.compress(data, mtime=0), "refuse", f"cut{k}-session")
        for name, m, expect in manifest_mutants(manifest, files, rng):
            folder = corpus.path(f"manifest-{name}".replace("/", "_"))
            shutil.copytree(source, folder)
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                f.write(json.dumps(m, allow_nan=True))
            corpus.session_cases(folder, expect)
        # A manifest cut short or flipped is no JSON, or another JSON; one nested past any parser's stack.
        text = json.dumps(manifest).encode()
        deep = [b'{"cells": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"]
        deep.append(text.replace(b'"cells": [', b'"deep": ' + b"[" * 200_000 + b"]" * 200_000 + b', "cells": [', 1))
        for k, data in enumerate(truncations(text, rng, 3) + flips(text, rng, 3) + deep):
            folder = corpus.path(f"manifest-bytes{k}")
            shutil.copytree(source, folder)
            with open(os.path.join(folder, "manifest.json"), "wb") as f:
                f.write(data)
            corpus.session_cases(folder, "either")
        for roles in sorted(n for n in os.listdir(source) if n.endswith(".roles.json"))[:1]:
            with open(os.path.join(source, roles)) as f:
                columns = json.load(f)
            for k, bad in enumerate(roles_mutants(columns)):
                folder = corpus.path(f"roles{k}")
                shutil.copytree(source, folder)
                with open(os.path.join(folder, roles), "w") as f:
                    f.write(json.dumps(bad))
                corpus.session_cases(folder, "either")
        for holders in (n for n in os.listdir(source) if n.endswith(".holders.json")):
            with open(os.path.join(source, holders)) as f:
                answer = json.load(f)
            for k, bad in enumerate(holders_mutants(answer, rng)):
                folder = corpus.path(f"holders{k}")
                shutil.copytree(source, folder)
                with open(os.path.join(folder, holders), "w") as f:
                    f.write(json.dumps(bad))
                corpus.session_cases(folder, "either")
            break
    # The multi-rank folder: its index, and one rank's point.
    with open(os.path.join(RANKS, "ranks.json")) as f:
        index = json.load(f)
    for name, m in ranks_mutants(index):
        folder = corpus.path(f"ranks-{name}".replace("/", "_"))
        shutil.copytree(RANKS, folder)
        with open(os.path.join(folder, "ranks.json"), "w") as f:
            f.write(json.dumps(m, allow_nan=True))
        for command in ("session", "leaks"):
            corpus.cli(folder, [command, folder], "either", [folder])
        corpus.cli(folder, ["diff", folder, "--ranks", "0,1"], "either", [folder])
    for mutator in SNAPSHOT_MUTATORS:
        folder = corpus.path(f"ranks-{mutator.__name__}")
        shutil.copytree(RANKS, folder)
        point = os.path.join(folder, "rank1", "point0002.pickle.gz")
        s = load(point)
        if mutator(s, rng) is None:
            continue
        with open(point, "wb") as f:
            f.write(dump(s, True, 4))
        for argv in (["session", folder], ["leaks", folder], ["diff", folder, "--ranks", "0,1"]):
            corpus.cli(folder, argv, "either", [folder])
        corpus.cli(folder, ["session", folder, "--rank", "1"], "either", [folder])
    return corpus


def roles_mutants(columns):
    out = [[1], {"device": [0]}, dict(columns, role=["no such role"] * len(columns["role"]))]
    out.append(dict(columns, address=[str(a) for a in columns["address"]]))
    out.append(dict(columns, device=columns["device"][:-1]))
    out.append(dict(columns, address=[-a for a in columns["address"]]))
    return out


def holders_mutants(answer, rng):
    out = [[1, 2], {"blocks": "x"}, {"blocks": [5]}, {"blocks": [{"device": "0", "address": 1, "holders": []}]}]
    if answer.get("blocks"):
        bad = copy.deepcopy(answer)
        bad["blocks"][0]["holders"] = [{"kind": 5, "path": None}]
        out.append(bad)
    return out


# -- running ------------------------------------------------------------------
def run_cli(cases, timeout):
    """Each case's outcome from one Node process (bench/fuzz_cli.js); a hang or crash of it is a failure."""
    main = os.path.join(ROOT, "dist", "node", "cli", "main.js")
    if not os.path.exists(main):
        raise SystemExit("run `npm run build:cli` first: dist/node/cli/main.js is missing")
    # A heap cap turns a memory blow-up into a crash this sees, not a swapping machine.
    proc = subprocess.run(
        ["node", "--max-old-space-size=768", "--stack-size=984", HARNESS, main],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the harness died (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def judge_cli(case, result):
    """Why a CLI outcome fails, or None."""
    kind, text = result["kind"], result["text"]
    if kind == "crash":
        return f"crash: {text}"
    if kind == "refused":
        if "\n" in text.strip():
            return f"refusal of {text.count(chr(10)) + 1} lines: {text[:300]!r}"
        if not any(n in text for n in case["names"]):
            return f"refusal names no file: {text[:300]!r}"
        if "unexpected error" in text:
            return f"unexpected error: {text[:300]}"
        return None
    if kind == "usage":
        return f"usage error for a file: {text[:300]}"
    if result.get("bad"):
        return f"report with {result['bad']}"
    if case["expect"] == "refuse" and case["argv"][0] in ("summary", "diff"):
        return "reported a value it should have refused"
    return None


class _Frontend:
    """A frontend's comm as the helper sees it: keeps what the helper sends."""

    def __init__(self):
        self.messages = []

    def send(self, data):
        json.dumps(data)  # JSON-safe, as the real comm needs
        self.messages.append(data)

    def on_msg(self, callback):
        pass

    def on_close(self, callback):
        pass

    def close(self):
        pass


# Python's own words for a bug: a message that is only one of these names neither the file nor what is wrong.
BARE_EXCEPTIONS = ("AttributeError", "KeyError", "TypeError", "IndexError", "UnpicklingError", "EOFError", "ValueError")


def _unclear(message, folder):
    """Why a line the helper sends about a replayed folder is not a clear refusal, or None."""
    if "\n" in message.strip():
        return f"{message.count(chr(10)) + 1} lines: {message[:300]!r}"
    if os.path.basename(folder) not in message:
        return f"names no file of the folder: {message[:300]!r}"
    return None


def run_replays(replays):
    """Each folder replayed by the kernel helper in a real IPython shell, as a notebook runs it: every cell's
    snapshot served, or a status or cell note that names the folder's file. Returns (id, why) of the others,
    the panel's decodes of the messages its schema lets through, and how many folders the schema refused."""
    import jsonschema
    from cuda_memdiff_kernel import current, install, unload_ipython_extension
    from cuda_memdiff_kernel.replay import ReplayError, ReplaySource
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    schema = json.loads(_read(os.path.join(ROOT, "kernel-helpers", "cuda_memdiff_kernel", "protocol.schema.json")))
    snapshot_schema = jsonschema.Draft7Validator({**schema, "$ref": "#/definitions/snapshot"})
    failures, panel, schema_refused = [], [], 0
    # One shell for every folder (install replaces the capture), its history in memory: a shell per folder
    # left an exit handler each that wrote its history to disk, minutes at exit.
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    for r in replays:
        folder = r["folder"]
        try:
            with open(os.path.join(folder, "manifest.json"), "rb") as f:
                manifest = json.loads(f.read())
            cells = manifest.get("cells") if isinstance(manifest, dict) else None
            sources = []
            # The recorded code is not run: each cell gets a harmless source of its own, matched as recorded.
            for k, cell in enumerate(cells if isinstance(cells, list) else []):
                if isinstance(cell, dict) and isinstance(cell.get("source"), str):
                    cell["source"] = f"_fuzz_{k} = {k}"
                    sources.append(cell["source"])
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                f.write(json.dumps(manifest, allow_nan=True))
        except (ValueError, RecursionError):
            sources = []
        try:
            try:
                source = ReplaySource(folder)
            except ReplayError as exc:
                why = _unclear(str(exc), folder)
                if why:
                    failures.append((folder, f"replay refusal {why}"))
                continue
            install(shell, replay=source)
            comm = _Frontend()
            current(shell).frontends.attach(comm)
            for k, text in enumerate(sources):
                shell.run_cell(text, store_history=True, cell_id=f"cell-{k}")
            # What the panel would get: messages its schema check lets through go on to the engine's decoder.
            messages = [m for m in comm.messages if m["type"] == "snapshot"]
            # One the schema refuses, the panel shows as one line naming the recording (capture/validate.ts).
            valid = all(snapshot_schema.is_valid(m) for m in messages)
            schema_refused += not valid
            if messages and valid:
                panel.append(
                    {
                        "argv": ["panel", folder],
                        "messages": messages,
                        "expect": "either",
                        "names": [os.path.basename(folder)],
                    }
                )
            for m in comm.messages:
                if (
                    m["type"] == "cell-note"
                    and m["note"] == "capture-failed"
                    or m["type"] == "status"
                    and m["status"] not in ("ready", "waiting")
                ):
                    why = _unclear(m["message"], folder) or (
                        any(f"{name}:" in m["message"] for name in BARE_EXCEPTIONS) and f"bare {m['message'][:200]!r}"
                    )
                    if why:
                        failures.append((folder, f"replay {m['type']} {why}"))
        except Exception as exc:  # noqa: BLE001 - any exception out of the helper is the finding
            failures.append((folder, f"replay raised {type(exc).__name__}: {str(exc)[:200]}"))
        finally:
            unload_ipython_extension(shell)
    InteractiveShell.clear_instance()
    return failures, panel, schema_refused


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def fuzz(seed=1, rounds=2, keep=None, timeout=300, replays=True):
    """Build, run and judge the mutants; returns (failures, stats)."""
    root = keep or tempfile.mkdtemp(prefix="cuda-memdiff-fuzz-")
    os.makedirs(root, exist_ok=True)
    try:
        started = time.perf_counter()
        corpus = build(root, seed, rounds)
        built = time.perf_counter()
        results = run_cli(corpus.cases, timeout)
        ran = time.perf_counter()
        panel, schema_refused = [], 0
        failures = []
        for case, result in zip(corpus.cases, results):
            why = judge_cli(case, result)
            if why:
                failures.append((" ".join(case["argv"]), why))
        if replays:
            replayed, panel, schema_refused = run_replays(corpus.replays)
            failures += replayed
            for case, result in zip(panel, run_cli(panel, timeout)):
                why = judge_cli(case, result)
                if why:
                    failures.append((" ".join(case["argv"]), why))
        stats = {
            "cli_runs": len(corpus.cases),
            "replays": len(corpus.replays) if replays else 0,
            "panel_decodes": len(panel) if replays else 0,
            "panel_schema_refused": schema_refused,
            "outcomes": {k: sum(r["kind"] == k for r in results) for k in ("report", "refused", "usage", "crash")},
            "build_s": round(built - started, 1),
            "cli_s": round(ran - built, 1),
            "total_s": round(time.perf_counter() - started, 1),
        }
        return failures, stats
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="mutants per mutator and file")
    parser.add_argument("--keep", help="write the mutants here and keep them")
    args = parser.parse_args(argv)
    failures, stats = fuzz(args.seed, args.rounds, args.keep)
    for where, why in failures:
        print(f"FAIL {where}: {why}")
    print(json.dumps(stats))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
