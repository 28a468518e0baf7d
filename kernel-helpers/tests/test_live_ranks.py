"""Per-rank capture of a real DDP job on CUDA (ranks_cuda_job.py): rank 1
keeps 64 MiB more each step. Skipped without CUDA. Two GPUs give each rank
its own; on one GPU both ranks share it, each with its own allocator.

CUDA_MEMDIFF_RANKS_OUT keeps the folder (the device run copies it back so the
engine's reading of it is tested where Node is)."""

import gzip
import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
JOB = os.path.join(HERE, "ranks_cuda_job.py")


def _kept_line():
    with open(JOB, encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if "kept.append(" in line)


def _allocated_in(path):
    with gzip.open(path, "rb") as f:
        snap = pickle.load(f)
    return sum(b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated")


def test_each_rank_records_its_own_allocator_and_the_growing_rank_is_named(tmp_path):
    out = os.environ.get("CUDA_MEMDIFF_RANKS_OUT") or str(tmp_path / "ddp")
    shutil.rmtree(out, ignore_errors=True)
    result = subprocess.run([sys.executable, JOB, out], capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stderr[-3000:]
    for rank in (0, 1):
        folder = os.path.join(out, f"rank{rank}")
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            cells = json.load(f)["cells"]
        with open(os.path.join(out, f"rank{rank}.allocated.json"), encoding="utf-8") as f:
            own = json.load(f)
        assert [c["step"] for c in cells] == [1, 2, 3, 4, 5]
        # The rank's figures are its own torch.cuda.memory_allocated() at that step...
        assert [c["after"]["allocated"] for c in cells] == own
        # ...and so are its snapshots' allocated blocks.
        assert [_allocated_in(os.path.join(folder, c["snapshot_file"])) for c in cells] == own
        print(f"rank {rank}: memory_allocated after each step {own}")
    assert own[-1] - own[0] == 4 * 64 * 2**20  # rank 1 (the last) kept 64 MiB per step
    if shutil.which("node") and os.path.exists(os.path.join(ROOT, "dist", "node", "cli", "main.js")):
        report = json.loads(
            subprocess.run(
                ["node", os.path.join(ROOT, "bin", "cuda-memdiff.js"), "leaks", out, "--json"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        assert report["verdict"] == {"code": "rank-grows", "growing": [1], "flat": [0]}
        site = report["ranks"][1]["growth"]["sites"][0]
        assert (os.path.basename(site["filename"]), site["line"]) == ("ranks_cuda_job.py", _kept_line())
