"""Builds a 100,000-block snapshot pair from the shape of a real H200 recording.

The real many_blocks cell03 snapshot (40,501 blocks) is replicated segment by
segment at fresh addresses, each block with its own frame dicts as torch
writes them, until it holds exactly N blocks ("before"). "after" frees a few
hundred allocated blocks and allocates as many new ones with another stack, as
one notebook cell typically does. Standard library only.

usage: python3 bench/make_large.py SOURCE.pickle.gz OUT_DIR [N]
"""
import copy
import gzip
import os
import pickle
import sys

CHANGED = 300


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


def main():
    source, out = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    os.makedirs(out, exist_ok=True)
    before = build(source, count)
    for name, snap in (("before", before), ("after", changed(before))):
        with gzip.open(os.path.join(out, f"large_{name}.pickle.gz"), "wb", compresslevel=6) as f:
            pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()
