"""Records a notebook's session folder (docs/session-format.md) on a CUDA machine.

    python -m cuda_memdiff_kernel.recorder NOTEBOOK.ipynb OUT_DIR [--holders]

Runs the notebook's code cells one by one in a real IPython shell, named as
ipykernel names them when ipykernel is importable, with allocation history
on, and after each cell writes the raw ``torch.cuda.memory._snapshot()`` as a
gzip pickle (what ``_dump_snapshot`` writes), the allocator statistics before
and after, and the snapshot taken at any out-of-memory error. The notebook's
``metadata.cuda_memdiff.expected`` (what an honest analysis must conclude) is
copied into the manifest. With ``--holders`` it also asks, after each cell,
who holds every live block (``holders.find_holders``) and writes the answer
as ``cellNN.holders.json``. Every cell's roles (roles.py: what each live
block is for) go into the manifest and, per block, ``cellNN.roles.json``;
the snapshot's ``alloc`` trace entries get them as MemoryViz's ``category``.
"""

import gzip
import json
import os
import pickle
import platform
import sys
import time

from . import holders, torch_probe
from .compact import FrameTable, block_addresses, read_state
from .roles import RolePass, roles_file, stamp_categories

# The figures a manifest keeps, under the wire's names (older manifests say max_*; readers take both).
STAT_NAMES = {
    "allocated": "allocated",
    "reserved": "reserved",
    "peak_allocated": "peak_allocated",
    "peak_reserved": "peak_reserved",
    "device_free": "device_free",
    "device_total": "device_total",
}


def _stats():
    per_device = [
        {"device": d["device"], **{new: d[old] for old, new in STAT_NAMES.items()}} for d in torch_probe.device_stats()
    ]
    total = {key: sum(d[key] for d in per_device) for key in STAT_NAMES.values()}
    total["per_device"] = per_device
    return total


def _dump(snapshot, path):
    with gzip.open(path, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)


def _shell():
    from IPython.core.interactiveshell import InteractiveShell  # noqa: PLC0415 - only when recording

    shell = InteractiveShell.instance()
    try:  # name cells /tmp/ipykernel_<pid>/<murmur2>.py, as in Jupyter
        from ipykernel.compiler import XCachingCompiler  # noqa: PLC0415 - optional

        shell.compile = XCachingCompiler()
    except ImportError:
        pass
    return shell


def _live_blocks(snapshot):
    """(device, address, size) of the snapshot's allocated blocks."""
    return [
        {"device": int(seg["device"]), "address": address, "size": int(blk["size"])}
        for seg in snapshot["segments"]
        for address, blk in block_addresses(seg)
        if blk["state"] == "active_allocated"
    ]


def record(notebook_path, out_dir, settings=None, with_holders=False):
    """Run the notebook's code cells and write the session folder; returns the manifest."""
    import torch  # noqa: PLC0415 - the recorder needs torch with CUDA

    settings = dict({"history": "all", "stacks": "python", "max_entries": 100000}, **(settings or {}))
    with open(notebook_path, encoding="utf-8") as f:
        notebook = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    torch_probe.start_history(settings["history"], settings["stacks"], settings["max_entries"])
    torch_probe.warm_up()
    oom_events = []

    def on_oom(device, alloc, device_alloc, device_free):
        name = f"oom{len(oom_events):02d}.pickle.gz"
        _dump(torch_probe.raw_snapshot(include_traces=True), os.path.join(out_dir, name))
        oom_events.append(
            {"file": name, "device": device, "alloc": alloc, "device_alloc": device_alloc, "device_free": device_free}
        )

    torch_probe.attach_oom_observer(on_oom)
    shell = _shell()
    cells, code_names = [], {}
    role_pass, frames = RolePass(), FrameTable()
    sources = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]
    for index, source in enumerate(sources):
        before = _stats()
        torch_probe.reset_peaks()
        first_oom = len(oom_events)
        started = time.perf_counter()
        result = shell.run_cell(source, store_history=True, cell_id=f"cell-{index}")
        cell_seconds = time.perf_counter() - started
        error = result.error_in_exec or result.error_before_exec
        started = time.perf_counter()
        snapshot = torch_probe.raw_snapshot(include_traces=True)
        snapshot_seconds = time.perf_counter() - started
        role_summary = role_pass.run(shell, read_state(snapshot, frames)[1])
        by_block = role_pass.by_block
        stamp_categories(snapshot, by_block)  # MemoryViz colours the allocations by role
        name = f"cell{index:02d}.pickle.gz"
        _dump(snapshot, os.path.join(out_dir, name))
        holders_file = None
        if with_holders:
            holders_file = f"cell{index:02d}.holders.json"
            with open(os.path.join(out_dir, holders_file), "w", encoding="utf-8") as f:
                json.dump(holders.find_holders(shell, _live_blocks(snapshot)), f)
        roles_name = f"cell{index:02d}.roles.json"
        with open(os.path.join(out_dir, roles_name), "w", encoding="utf-8") as f:
            json.dump(roles_file(by_block), f)
        count = result.execution_count
        code_names[str(count)] = (
            shell.compile.get_code_name(source, source, count) if hasattr(shell.compile, "get_code_name") else None
        )
        cells.append(
            {
                "index": index,
                "execution_count": count,
                "source": source,
                "error": None if error is None else f"{type(error).__name__}: {error}",
                "cell_seconds": cell_seconds,
                "snapshot_seconds": snapshot_seconds,
                "snapshot_file": name,
                "segments": len(snapshot["segments"]),
                "blocks": sum(len(s["blocks"]) for s in snapshot["segments"]),
                "trace_entries": sum(len(t) for t in snapshot.get("device_traces", [])),
                "oom_snapshots": [e["file"] for e in oom_events[first_oom:]],
                **({"holders_file": holders_file} if holders_file else {}),
                # Per-block roles live in the roles file; the manifest keeps the bytes per role.
                "roles": {k: v for k, v in role_summary.items() if k != "blocks"},
                "roles_file": roles_name,
                "before": before,
                "after": _stats(),
            }
        )
    props = torch.cuda.get_device_properties(0)
    manifest = {
        "scenario": os.path.splitext(os.path.basename(notebook_path))[0],
        "variant": "python",
        "record_memory_history": {
            "enabled": settings["history"],
            "context": "all",
            "stacks": settings["stacks"],
            "max_entries": settings["max_entries"],
        },
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": props.name,
        "device_count": torch.cuda.device_count(),
        "python": platform.python_version(),
        "ipython": __import__("IPython").__version__,
        "pid": os.getpid(),
        "cell_index_base": 0,
        "code_names_by_execution_count": code_names,
        "cells": cells,
        "oom": oom_events,
        "expected": notebook.get("metadata", {}).get("cuda_memdiff", {}).get("expected", {}),
    }
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with_holders = "--holders" in argv
    argv = [a for a in argv if a != "--holders"]
    if len(argv) != 2:
        print("usage: python -m cuda_memdiff_kernel.recorder NOTEBOOK.ipynb OUT_DIR [--holders]", file=sys.stderr)
        return 2
    torch = torch_probe.import_torch()
    if torch is None or not torch.cuda.is_available():
        print("recorder: cannot record here: it needs torch with a CUDA device", file=sys.stderr)
        return 1
    manifest = record(argv[0], argv[1], with_holders=with_holders)
    print(f"recorded {len(manifest['cells'])} cells into {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
