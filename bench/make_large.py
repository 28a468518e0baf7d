"""Builds large snapshots from the shape of real H200 recordings.

Block pairs: the real many_blocks cell03 snapshot (40,501 blocks) is
replicated segment by segment at fresh addresses, each block with its own
frame dicts as torch writes them, until it holds exactly N blocks ("before").
"after" frees a few hundred allocated blocks and allocates as many new ones
with another stack, as one notebook cell typically does.

Full allocation history of a given size: the trace of a real recording with
history on (clean_training cell04: 3,681 entries of alloc, free_requested,
free_completed, segment_alloc and snapshot, each with its Python stack) is
repeated, shifted to fresh addresses and later times, until the pickle
reaches SIZE_MB; its segments are repeated the same way, so the blocks are
what the trace left allocated. The trace is written chunk by chunk straight
to the file (a chunk is one pickled list whose items are appended to the
device's trace), so a 1 GB file needs the memory of one chunk, not of the
whole snapshot. Chunks use protocol 3 (explicit memo indices), so each is
self-contained; the rest of the file is what pickle.dump writes.
Standard library only.

usage: python3 bench/make_large.py SOURCE.pickle.gz OUT_DIR [N]
       python3 bench/make_large.py --history SOURCE.pickle.gz OUT.pickle SIZE_MB
"""

import copy
import gzip
import os
import pickle
import sys

CHANGED = 300
# Room between the copies' address ranges (the recording spans 2.4 GB).
ADDRESS_SHIFT = 1 << 32
EMPTY_LIST_PUT0 = b"]q\x00"


def build(source, count):
    with gzip.open(source, "rb") as f:
        snap = pickle.load(f)
    template = snap["segments"]
    top = max(s["address"] + s["total_size"] for s in template)
    segments, blocks, shift = [], 0, 0
    while blocks < count:
        for seg in template:
            if blocks >= count:
                break
            s = copy.deepcopy(seg)
            s["address"] += shift
            for b in s["blocks"]:
                b["address"] += shift
            keep = s["blocks"][: count - blocks]
            if len(keep) < len(s["blocks"]):
                s["blocks"] = keep
                s["total_size"] = sum(b["size"] for b in keep)
            blocks += len(s["blocks"])
            segments.append(s)
        shift += top
    return {"segments": segments, "device_traces": [[]], "allocator_settings": {}, "external_annotations": []}


def changed(before):
    after = copy.deepcopy(before)
    live = [b for s in after["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    step = max(1, len(live) // CHANGED)
    for b in live[::step][:CHANGED]:
        b["state"] = "inactive"
    for b in live[step // 2 :: step][:CHANGED]:
        if b["state"] == "active_allocated":
            b["frames"] = [{"name": "<module>", "filename": "/tmp/ipykernel_1/99.py", "line": 7}] + b["frames"]
    return after


def shifted(entry, shift, later):
    """A copy of a trace entry or segment at another address and time; frames are its own list."""
    e = dict(entry)
    if "addr" in e and e["addr"]:
        e["addr"] += shift
    if "address" in e:
        e["address"] += shift
    if "time_us" in e:
        e["time_us"] += later
    if "blocks" in e:
        e["blocks"] = [dict(b, address=b["address"] + shift) for b in e["blocks"]]
    return e


def chunk_bytes(items):
    """A pickled list's items, to be appended to the list on top of the unpickler's stack."""
    data = pickle.dumps(items, protocol=3)
    assert data[2:5] == EMPTY_LIST_PUT0 and data.endswith(b"."), "unexpected pickle layout"
    return data[5:-1]


def write_history(source, out, size_mb):
    """Write a snapshot with full allocation history of about SIZE_MB megabytes (10^6 bytes)."""
    with gzip.open(source, "rb") as f:
        snap = pickle.load(f)
    trace = snap["device_traces"][0]
    times = [e["time_us"] for e in trace]
    duration = max(times) - min(times) + 1000
    one = len(chunk_bytes(trace))
    copies = max(1, round(size_mb * 1e6 / one))
    with open(out, "wb") as f:
        # {"segments": [...], "device_traces": [[...]], "allocator_settings": {...}, "external_annotations": []}
        f.write(b"\x80\x03}")
        f.write(pickle.dumps("segments", protocol=3)[2:-1])
        f.write(b"]")
        for k in range(copies):
            f.write(chunk_bytes([shifted(s, k * ADDRESS_SHIFT, 0) for s in snap["segments"]]))
        f.write(b"s")  # SETITEM
        f.write(pickle.dumps("device_traces", protocol=3)[2:-1])
        f.write(b"]]")  # the device list, and device 0's trace
        for k in range(copies):
            f.write(chunk_bytes([shifted(e, k * ADDRESS_SHIFT, k * duration) for e in trace]))
        f.write(b"as")  # APPEND device 0's trace, SETITEM
        for key in ("allocator_settings", "external_annotations"):
            f.write(pickle.dumps(key, protocol=3)[2:-1])
            f.write(pickle.dumps(snap.get(key, {}), protocol=3)[2:-1])
            f.write(b"s")
        f.write(b".")
    return copies * len(trace)


def main():
    if sys.argv[1] == "--history":
        entries = write_history(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        print(f"{sys.argv[3]}: {os.path.getsize(sys.argv[3]) / 1e6:.0f} MB, {entries} trace entries")
        return
    source, out = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    os.makedirs(out, exist_ok=True)
    before = build(source, count)
    for name, snap in (("before", before), ("after", changed(before))):
        with gzip.open(os.path.join(out, f"large_{name}.pickle.gz"), "wb", compresslevel=6) as f:
            pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()
