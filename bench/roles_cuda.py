"""Cost of the per-cell role pass against the helper's per-cell capture, on a CUDA machine.

    PYTHONPATH=kernel-helpers python3 bench/roles_cuda.py

In a real IPython shell with allocation history on (the helper's default):
a 100M-parameter model trained one AdamW step (parameters, gradients,
optimizer state), an eval pass outside no_grad whose outputs keep their
graphs, and a list of small tensors that brings the live blocks to about
10,000 and then 40,000. Each cell replaces a list of 300 tensors the user
names (300 blocks freed, 300 born). Prints, median of 5: the helper's
capture of such a cell as capture.py takes it (the allocation count, the
snapshot, the log's changes, the message for one frontend as JSON), the
role pass after it as capture.py runs it (kept from the cell before, given
the capture's born and freed blocks), the pass from nothing (the first cell
after the helper starts), and the pass after a cell that changed nothing;
each as a share of the capture. The target is a pass of at most 20% of the
capture.
"""

import statistics
import time

import torch
from cuda_memdiff_kernel import torch_probe
from cuda_memdiff_kernel.block_index import Changes
from cuda_memdiff_kernel.channel import Frontends
from cuda_memdiff_kernel.log import SnapshotLog
from cuda_memdiff_kernel.roles import RolePass
from helper_cuda import SizeComm, helper_cell  # bench/ is the script's folder, so on sys.path
from IPython.core.interactiveshell import InteractiveShell

RUNS = 5
MODEL = """
import torch, torch.nn as nn
model = nn.Sequential(*[nn.Sequential(nn.Linear(2048, 4096), nn.GELU(), nn.Linear(4096, 2048), nn.LayerNorm(2048))
                        for _ in range(6)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(64, 2048, device='cuda')
model(x).square().mean().backward()
opt.step()
preds = [model(torch.randn(16, 2048, device='cuda')) for _ in range(8)]
"""


def median_ms(fn, before=None):
    times = []
    for _ in range(RUNS):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    torch_probe.start_history("all", "python", 100000)
    shell = InteractiveShell.instance()
    assert shell.run_cell(MODEL).success
    params = sum(p.numel() for p in shell.user_ns["model"].parameters())
    for target in (10_000, 40_000):
        blocks_now = sum(
            1
            for s in torch.cuda.memory.memory_snapshot(include_traces=False)
            for b in s["blocks"]
            if b["state"] == "active_allocated"
        )
        fill = f"small_{target} = [torch.empty(256, device='cuda') for _ in range({target - blocks_now})]"
        assert shell.run_cell(fill).success
        log = SnapshotLog()
        frontends = Frontends(log)
        frontends.attach(SizeComm())
        kept = RolePass()
        changes = []

        def capture():  # as capture.py takes a cell (helper_cell), less the role pass
            before = log.version
            helper_cell(log, frontends)
            entry = log.entries[-1]
            changes[:] = [Changes(before, entry.born, entry.freed, log.version)]

        def change_300_blocks():  # the user's list of 300 tensors, replaced
            shell.user_ns["churn"] = [torch.empty(512, device="cuda") for _ in range(300)]

        capture()
        kept.run(shell, log.current, changes[0])
        capture_times, pass_times, answers = [], [], []
        for _ in range(RUNS):
            change_300_blocks()
            t = time.perf_counter()
            capture()
            capture_times.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            answers.append(kept.run(shell, log.current, changes[0]))
            pass_times.append((time.perf_counter() - t) * 1000)
        capture_ms, pass_ms = statistics.median(capture_times), statistics.median(pass_times)
        live = sum(1 for r in log.current.values() if r[4] == 0)
        fresh = {}

        def from_nothing():
            fresh["answer"] = RolePass().run(shell, log.current)

        fresh_ms = median_ms(from_nothing)
        same_ms = median_ms(lambda: kept.run(shell, log.current, Changes(log.version, [], [], log.version)))
        answer = answers[-1]
        agree = answer["bytes"] == fresh["answer"]["bytes"] and answer["blocks"] == fresh["answer"]["blocks"]
        mib = {k: round(v / 2**20, 1) for k, v in answer["bytes"].items() if v}

        def share(ms):
            return f"{ms:.1f} ms ({100 * ms / capture_ms:.0f}%)"

        print(
            f"{live} live blocks, {params / 1e6:.0f}M parameters: capture {capture_ms:.1f} ms; role pass per cell "
            f"{share(pass_ms)}, from nothing {share(fresh_ms)}, nothing changed {share(same_ms)}; "
            f"partial={answer['partial']}; kept pass equals one from nothing: {agree}; MiB by role {mib}"
        )


if __name__ == "__main__":
    main()
