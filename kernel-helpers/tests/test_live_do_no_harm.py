"""The helper's first law on a real GPU (skipped without CUDA): it costs
nothing before the user's code uses CUDA and changes nothing the user
measures. Each case runs in a fresh process, as a fresh kernel would."""

import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

PRELUDE = textwrap.dedent("""
    import gc, json, os, subprocess, sys, weakref
    from IPython.core.interactiveshell import InteractiveShell
    import cuda_memdiff_kernel
    from cuda_memdiff_kernel import current, install, unload_ipython_extension

    class Comm:
        def __init__(self): self.sent = []
        def send(self, m): self.sent.append(m)
        def on_msg(self, f): pass
        def on_close(self, f): pass
        def close(self): pass

    def on_gpu():
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if line.split(",")[0].strip() == str(os.getpid())]

    shell = InteractiveShell.instance()
    def run(source, k):
        return shell.run_cell(source, store_history=True, cell_id=f"c{k}")
    def snapshots(comm):
        return [m for m in comm.sent if m["type"] == "snapshot"]
    def statuses(comm):
        return [m["status"] for m in comm.sent if m["type"] == "status"]
""")


def run_case(code):
    out = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(result))
    return result


def test_a_kernel_that_never_uses_cuda_has_no_process_on_the_gpu():
    r = run_case("""
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("x = sum(range(10))", 0)
        run("import torch\\ny = torch.ones(3)", 1)
        print(json.dumps({"gpu": on_gpu(), "initialized": sys.modules["torch"].cuda.is_initialized(),
                          "statuses": statuses(comm), "snapshots": len(snapshots(comm))}))
    """)
    assert r["gpu"] == [] and r["initialized"] is False
    assert r["statuses"] == ["waiting-for-torch", "waiting-for-cuda"] and r["snapshots"] == 0


def test_badges_from_the_first_cuda_cell_with_its_stacks():
    r = run_case("""
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("import torch", 0)
        run("def make():\\n    return torch.empty(2**20, device='cuda')\\nx = make()", 1)
        run("y = torch.empty(2**21, device='cuda')", 2)
        s = snapshots(comm)
        stacks_with_frames = sum(1 for st in s[0]["stacks"]["items"] if st)
        print(json.dumps({"cells": [m["cell_id"] for m in s], "statuses": statuses(comm),
                          "allocated": [sum(d["allocated"] for d in m["devices"]) for m in s],
                          "before": [sum(d["allocated"] for d in m["before"]) for m in s],
                          "frames": stacks_with_frames, "history": comm.sent[-1].get("history"),
                          "capture_ms": [m["capture_ms"] for m in s]}))
    """)
    assert r["cells"] == ["c1", "c2"] and r["statuses"][-1] == "ready"
    assert r["allocated"] == [4 * 2**20, 12 * 2**20] and r["before"] == [0, 4 * 2**20]
    assert r["frames"] >= 1  # history started at CUDA's initialisation, before the first block


def test_the_users_history_metadata_and_peaks_survive_load_and_unload():
    r = run_case("""
        import torch
        torch.cuda.memory._record_memory_history(enabled="state", stacks="python", max_entries=1234)
        big = torch.empty(2**30, dtype=torch.uint8, device="cuda"); del big
        torch.cuda.memory._set_memory_metadata("users own tag")
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("import torch\\nz = torch.empty(2**20, device='cuda')", 0)
        run("w = torch.empty(2**20, device='cuda')", 1)
        peak = torch.cuda.max_memory_allocated()
        unload_ipython_extension(shell)
        print(json.dumps({"history_after_unload": torch._C._cuda_isHistoryEnabled(),
                          "metadata": torch.cuda.memory._get_memory_metadata(), "peak": peak,
                          "owner": [m.get("history") for m in comm.sent if m["type"] == "status"][-1],
                          "cell_peaks": [m["peak"] for m in snapshots(comm)]}))
    """)
    assert r["history_after_unload"] is True and r["owner"] == "user"
    assert r["metadata"] == "users own tag"
    assert r["peak"] >= 2**30  # the helper never reset the user's peak counter
    assert r["cell_peaks"][0]["exact"] is False and r["cell_peaks"][0]["bytes"] >= 2**30


def test_history_the_helper_started_stops_on_unload():
    r = run_case("""
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("import torch\\nz = torch.empty(2**20, device='cuda')", 0)
        on = torch_on = sys.modules["torch"]._C._cuda_isHistoryEnabled()
        unload_ipython_extension(shell)
        print(json.dumps({"on": on, "after": sys.modules["torch"]._C._cuda_isHistoryEnabled()}))
    """)
    assert r == {"on": True, "after": False}


def test_one_oom_snapshot_per_cell_and_nothing_kept_after_reinstall():
    r = run_case("""
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("import torch\\nx = torch.empty(2**20, device='cuda')", 0)
        first = weakref.ref(current(shell))
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("for _ in range(3):\\n    try:\\n        torch.empty(2**44, dtype=torch.uint8, device='cuda')\\n"
            "    except torch.OutOfMemoryError:\\n        pass", 1)
        gc.collect()
        capture = current(shell)
        oom = [m for m in snapshots(comm) if m["reason"] == "oom"]
        print(json.dumps({"first_alive": first() is not None, "oom_messages": len(oom),
                          "oom_count": oom[0]["oom"]["count"] if oom else None,
                          "kept_oom": capture._oom is not None, "installs": comm.sent[0]["installs"]}))
    """)
    assert r["first_alive"] is False
    assert r["oom_messages"] == 1 and r["oom_count"] == 3 and r["kept_oom"] is False


def test_a_paused_generator_lets_go_of_the_batch_it_drops():
    # The role pass after each cell reads a paused generator's locals. Before Python 3.13 that read kept them
    # (walk.frame_locals), so the batch the generator dropped at its next step was still alive, and counted, in
    # the next cell's snapshot: 8 MiB where the user's code kept 4.
    r = run_case("""
        install(shell); comm = Comm(); current(shell).frontends.attach(comm)
        run("import torch", 0)
        run("def batches():\\n    while True:\\n        batch = torch.empty(2**20, device='cuda')\\n"
            "        yield batch\\nloader = batches()\\nb = next(loader)", 1)
        run("del b\\nb = next(loader)", 2)
        run("b = next(loader)", 3)
        s = snapshots(comm)
        print(json.dumps({"allocated": [sum(d["allocated"] for d in m["devices"]) for m in s],
                          "roles": [bool(m.get("roles")) for m in s], "python": sys.version_info[:2]}))
    """)
    assert r["roles"] == [True, True, True]  # the pass that reads the generator ran after each cell
    assert r["allocated"] == [4 * 2**20] * 3
