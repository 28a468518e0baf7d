"""Writes the hand-made snapshot shapes the jest tests read from fixtures/.

Real H200 recordings (recordings/) cover torch 2.11; these cover the shapes of
other torch versions and pickle protocols, built as those versions write them.
Run: python3 test-data/make_fixtures.py (standard library only).
"""
import collections
import gzip
import json
import os
import pickle

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
CELL = "/tmp/ipykernel_42/1313211645.py"
TORCH = "/usr/lib/python3/site-packages/torch/nn/modules/linear.py"


def frames(line):
    return [
        {"name": "forward", "filename": TORCH, "line": 125},
        {"name": "??", "filename": "??", "line": 0},
        {"name": "<module>", "filename": CELL, "line": line},
    ]


def torch_2_0():
    """torch 2.0: no block address, frames under 'history', no pool id, no traces."""
    return {
        "segments": [
            {
                "device": 0,
                "address": 1 << 30,
                "total_size": 2 << 20,
                "allocated_size": 1536 << 10,
                "active_size": 1536 << 10,
                "stream": 0,
                "segment_type": "large",
                "blocks": [
                    {"size": 1 << 20, "state": "active_allocated",
                     "history": [{"addr": 1 << 30, "real_size": 1000000, "frames": frames(1)}]},
                    {"size": 512 << 10, "state": "active_allocated",
                     "history": [{"addr": (1 << 30) + (1 << 20), "real_size": 500000, "frames": frames(2)}]},
                    {"size": 512 << 10, "state": "inactive"},
                ],
            },
            {
                "device": 1,
                "address": 1 << 31,
                "total_size": 2 << 20,
                "allocated_size": 0,
                "active_size": 0,
                "stream": 0,
                "segment_type": "large",
                "blocks": [{"size": 2 << 20, "state": "inactive"}],
            },
        ]
    }


def torch_2_11_traces():
    """torch 2.11 shapes that vary: pool id tuple, traces without frames, oom with device_free."""
    return {
        "segments": [
            {
                "device": 0, "address": 4096 << 20, "total_size": 2 << 20, "allocated_size": 2 << 20,
                "active_size": 2 << 20, "requested_size": 2 << 20, "stream": 0, "segment_type": "large",
                "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames(3),
                "blocks": [
                    {"address": 4096 << 20, "size": 1 << 20, "requested_size": 1 << 20,
                     "state": "active_allocated", "frames": frames(3)},
                    {"address": (4096 << 20) + (1 << 20), "size": 1 << 20, "requested_size": 1 << 20,
                     "state": "active_pending_free", "frames": frames(4)},
                ],
            }
        ],
        "device_traces": [[
            {"action": "segment_alloc", "addr": 4096 << 20, "size": 2 << 20, "stream": 0,
             "time_us": 1795997174923086, "compile_context": "N/A", "user_metadata": ""},
            {"action": "alloc", "addr": 4096 << 20, "size": 1 << 20, "stream": 0,
             "time_us": 1795997174923090, "frames": frames(3), "user_metadata": "cell-a"},
            {"action": "oom", "device_free": 12345, "size": 1 << 40, "stream": 0,
             "time_us": 1795997174923099, "compile_context": "N/A", "user_metadata": ""},
        ]],
        "allocator_settings": {"expandable_segments": False, "roundup_power2_divisions": {1: 0, 2: 0}},
        "external_annotations": [],
    }


def main():
    os.makedirs(HERE, exist_ok=True)
    old = torch_2_0()
    with open(os.path.join(HERE, "torch_2_0.proto2.pickle"), "wb") as f:
        pickle.dump(old, f, protocol=2)
    new = torch_2_11_traces()
    for proto in (2, 3, 4, 5):
        with open(os.path.join(HERE, f"torch_2_11.proto{proto}.pickle"), "wb") as f:
            pickle.dump(new, f, protocol=proto)
    with gzip.open(os.path.join(HERE, "torch_2_11.json.gz"), "wt") as f:
        json.dump(new, f)
    # Harmless constructors a plain-data pickle may use: OrderedDict, set, bytes under protocol 2.
    plain = {"segments": [], "od": collections.OrderedDict([("a", 1), ("b", 2)]),
             "tags": {"x"}, "raw": b"\x00\xff", "big": 1 << 70, "neg": -5, "f": 1.5}
    with open(os.path.join(HERE, "plain_data.proto2.pickle"), "wb") as f:
        pickle.dump(plain, f, protocol=2)


if __name__ == "__main__":
    main()
