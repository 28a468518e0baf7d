"""Per-cell cost of the kernel helper against a bare snapshot, on a CUDA machine.

    PYTHONPATH=kernel-helpers python3 bench/helper_cuda.py

Prints figures (median of 5) at 10,000, 40,000 and 100,000 live blocks with
history on: the bare ``memory_snapshot(include_traces=False)`` and
``_snapshot()``, the helper's whole per-cell work (snapshot, the log's
changes, the message for one attached frontend, JSON as the comm sends it)
for a cell that changed nothing and for one that changed 300 blocks, and the
bytes sent; the same with traces on (the ``includeTraces`` setting: the
cell's allocation history travels too). Then the cost of allocation history
on a GPU-bound and a CPU-bound training step. ``--profile`` adds the
helper's own hot spots at 100,000 blocks.
"""

import cProfile
import io
import json
import pstats
import statistics
import sys
import time

import torch
from cuda_memdiff_kernel import torch_probe
from cuda_memdiff_kernel.channel import Frontends
from cuda_memdiff_kernel.log import SnapshotLog

RUNS = 5


class SizeComm:
    """A comm that serialises as the real one does and keeps the size."""

    def __init__(self):
        self.bytes = 0

    def send(self, data):
        self.bytes = len(json.dumps(data))

    def on_msg(self, f):
        pass

    def on_close(self, f):
        pass


def median_ms(fn, runs=RUNS):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def helper_cell(log, frontends, traces=False):
    allocations = torch_probe.allocation_count()
    raw = torch_probe.raw_snapshot(include_traces=traces)
    entry = log.add(
        raw, allocations, reason="cell", cell_id="c", execution_count=1, error=None, devices=torch_probe.device_stats()
    )
    frontends.publish(entry)


def capture_ms(cell, capture, runs=RUNS):
    """Median time of ``capture`` after each run of ``cell`` (the cell's own work is not timed)."""
    times = []
    for _ in range(runs):
        cell()
        t = time.perf_counter()
        capture()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def capture_costs(profile=False):
    for n in (10_000, 40_000, 100_000):
        keep = [torch.empty(256, device="cuda") for _ in range(n)]
        bare = median_ms(lambda: torch.cuda.memory.memory_snapshot(include_traces=False))
        bare_traced = median_ms(torch.cuda.memory._snapshot)
        for traces in (False, True):
            log = SnapshotLog()
            frontends = Frontends(log)
            comm = SizeComm()
            frontends.attach(comm)
            helper_cell(log, frontends, traces)
            whole = comm.bytes
            same = median_ms(lambda: helper_cell(log, frontends, traces))

            def change_300():
                for i in range(300):
                    keep[i] = torch.empty(512, device="cuda")

            def change_300_with_temporaries():
                change_300()
                for _ in range(10):
                    (keep[0] * 2).sum()  # freed before the capture: more allocations than new blocks

            def capture():
                helper_cell(log, frontends, traces)

            changed = capture_ms(change_300, capture)
            temporaries = capture_ms(change_300_with_temporaries, capture)
            capture_ms(change_300, capture, runs=1)  # the message below: a cell that changed 300 blocks

            against = bare_traced if traces else bare
            print(
                f"{n:>7} live blocks, traces {'on ' if traces else 'off'}: "
                f"bare memory_snapshot(include_traces=False) "
                f"{bare:6.1f} ms, _snapshot() {bare_traced:6.1f} ms | helper per cell, nothing changed "
                f"{same:6.1f} ms ({same / against:.2f}x) | 300 blocks changed {changed:6.1f} ms "
                f"({changed / against:.2f}x) | 300 changed and temporaries {temporaries:6.1f} ms "
                f"({temporaries / against:.2f}x) | message: whole {whole / 2**20:.2f} MiB, 300 changed "
                f"{comm.bytes / 2**10:.1f} KiB ({comm.bytes / whole:.1%})"
            )
            if profile and n == 100_000 and not traces:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(3):
                    change_300()
                    capture()
                prof.disable()
                text = io.StringIO()
                pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(8)
                print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:2500])
        keep.clear()  # free the blocks before the next size
        torch.cuda.empty_cache()


def step_ms(model, opt, x, runs=50):
    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def history_costs():
    cases = {
        "GPU-bound (transformer layer, batch 32x512x1024)": (
            torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True).cuda(),
            torch.randn(32, 512, 1024, device="cuda"),
        ),
        "CPU-bound (3-layer MLP, batch 8x64)": (
            torch.nn.Sequential(
                torch.nn.Linear(64, 64),
                torch.nn.ReLU(),
                torch.nn.Linear(64, 64),
                torch.nn.ReLU(),
                torch.nn.Linear(64, 1),
            ).cuda(),
            torch.randn(8, 64, device="cuda"),
        ),
    }
    for name, (model, x) in cases.items():
        opt = torch.optim.AdamW(model.parameters())
        torch.cuda.memory._record_memory_history(enabled=None)
        off = step_ms(model, opt, x)
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
        on = step_ms(model, opt, x)
        torch.cuda.memory._record_memory_history(enabled="state", context="all", stacks="python")
        state = step_ms(model, opt, x)
        torch.cuda.memory._record_memory_history(enabled=None)
        print(
            f"{name}: step {off:.3f} ms without history, {on:.3f} ms with 'all' (+{(on / off - 1):.1%}), "
            f"{state:.3f} ms with 'state' (+{(state / off - 1):.1%})"
        )


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; median of {RUNS}")
    torch.empty(1, device="cuda")
    torch_probe.start_history("all", "python", 100000)
    t = time.perf_counter()
    torch_probe.warm_up()
    print(
        f"first snapshot with a live block (paid once, on a background thread by the helper): "
        f"{(time.perf_counter() - t) * 1000:.0f} ms"
    )
    capture_costs(profile="--profile" in sys.argv)
    if "--no-history-cost" not in sys.argv:
        history_costs()


if __name__ == "__main__":
    main()
