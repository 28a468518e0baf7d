"""Per-cell cost of the kernel helper against a bare snapshot, on a CUDA machine.

    PYTHONPATH=kernel-helpers python3 bench/helper_cuda.py

Prints figures (median of 5) at 10,000, 40,000 and 100,000 live blocks with
history on: the bare ``memory_snapshot(include_traces=False)`` and
``_snapshot()``, the helper's whole per-cell work (snapshot, the log's
changes, the message for one attached frontend, JSON as the comm sends it;
the cell's own work is not timed; each case prints the ratio of the two
medians, then the median of the runs' own ratios) for a cell that changed nothing, one that
kept 300 new blocks, one that replaced 300 blocks (the allocator puts each
where the one before was freed) and one that also made temporaries, and the
bytes sent; the same with the blocks allocated 24 frames deeper, as a
notebook cell's are; the same with traces on (the ``includeTraces`` setting: the
cell's allocation history travels too). Then the cost of allocation history
on a GPU-bound and a CPU-bound training step. ``--profile`` adds the
helper's own hot spots at 100,000 blocks (``--profile=10000`` at 10,000);
``--sizes=10000,40000`` measures only those numbers of live blocks;
``--phases`` adds, for each size, the median time of each step of the helper's
capture (without a profiler's overhead) against the bare snapshot's;
``--kernel`` adds the cases with each cell run by IPython's ``run_cell`` (it
needs IPython), so the blocks carry the stacks a notebook's cells give them.
"""

import cProfile
import io
import json
import operator
import pstats
import statistics
import sys
import time

import torch
from cuda_memdiff_kernel import torch_probe
from cuda_memdiff_kernel.channel import Frontends
from cuda_memdiff_kernel.log import SnapshotLog, collector_paused

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


def helper_cell(log, frontends, traces=False):
    with collector_paused():  # as capture.py takes it: until the raw snapshot is gone
        allocations, raw, devices = torch_probe.counted_snapshot(include_traces=traces)
        entry = log.add(
            raw,
            allocations,
            reason="cell",
            cell_id="c",
            execution_count=1,
            error=None,
            devices=devices,
        )
        frontends.publish(entry)
        del raw


def phase_ms(cell, log, frontends, bare, runs=15):
    """Medians of each step of helper_cell after runs of ``cell``, and of the bare snapshot (taken before or
    after it in turn, as capture_ms does), timed without a profiler (whose overhead grows with the calls made,
    which would misplace the cost)."""
    names = ("counts, snapshot and device stats", "read", "publish", "free", "bare")
    times = {name: [] for name in names}

    def helper():
        with collector_paused():
            t0 = time.perf_counter()
            allocations, raw, devices = torch_probe.counted_snapshot(include_traces=False)
            t1 = time.perf_counter()
            entry = log.add(
                raw, allocations, reason="cell", cell_id="c", execution_count=1, error=None, devices=devices
            )
            t2 = time.perf_counter()
            frontends.publish(entry)
            t3 = time.perf_counter()
            del raw
            t4 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, t4 - t3

    def bare_ms():
        t = time.perf_counter()
        bare()
        return time.perf_counter() - t

    for k in range(runs):
        cell()
        if k % 2:
            steps = helper()  # its objects go when it returns, outside every step's time
            bare_s = bare_ms()
        else:
            bare_s = bare_ms()
            steps = helper()
        for name, seconds in zip(names, (*steps, bare_s)):
            times[name].append(seconds * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def capture_ms(cell, capture, bare, runs=RUNS):
    """Medians of ``capture`` and of ``bare`` after each run of ``cell``, taken in turn, first one then
    the other (the cell's own work is not timed), and the median of the runs' ratios: the bare snapshot's
    time varies from minute to minute (2x within one run on an H100), so a run's pair of times, taken a
    few ms apart, says more than the two medians, which may come from different minutes."""
    times, bare_times = [], []
    for k in range(runs):
        cell()
        for fn, out in ((capture, times), (bare, bare_times))[:: 1 if k % 2 else -1]:
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1000)
    paired = statistics.median(map(operator.truediv, times, bare_times))
    return statistics.median(times), statistics.median(bare_times), paired


def nested(depth, fn):
    """fn() called ``depth`` frames deeper: a notebook cell's allocations carry about 25 frames of the kernel."""
    return fn() if depth == 0 else nested(depth - 1, fn)


def in_cells(kernel_depth=40):
    """Runs a function as a notebook cell's code would: called from a cell that IPython's run_cell runs, so its
    blocks carry a kernel's stacks (IPython's frames, then the cell's). A kernel runs every cell from the same
    depth (its event loop's frames), which the reader's stack check counts on (SnapshotReader.anchor_after):
    each cell is run ``kernel_depth`` frames from the outermost, wherever the bench asks for it."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()

    def run_cell(fn):
        result = []
        shell.user_ns["bench_cell"] = lambda: result.append(fn())
        shell.run_cell("bench_cell()").raise_error()
        return result[0]

    def run(fn):
        frame, depth = sys._getframe(), 0
        while frame is not None:
            frame, depth = frame.f_back, depth + 1
        return nested(kernel_depth - depth, lambda: run_cell(fn))

    return run


def capture_costs(profile=False, only=None, phases=False, kernel=False):
    depths = ((0, (10_000, 40_000, 100_000), (False, True)), (24, (10_000, 100_000), (False,)))
    if kernel:
        depths += (("in cells", (10_000, 100_000), (False,)),)
    for depth, sizes, trace_modes in depths:
        run = in_cells() if depth == "in cells" else lambda fn, depth=depth: nested(depth, fn)
        for n in sizes:
            if only and n not in only:
                continue
            keep = run(lambda n=n: [torch.empty(256, device="cuda") for _ in range(n)])
            for traces in trace_modes:
                capture_case(n, depth, run, keep, traces, profile == n and not traces, phases and not traces)
            keep.clear()  # free the blocks before the next size
            torch.cuda.empty_cache()


def capture_case(n, depth, run, keep, traces, profile, phases=False):
    log = SnapshotLog()
    frontends = Frontends(log)
    comm = SizeComm()
    frontends.attach(comm)
    helper_cell(log, frontends, traces)
    whole = comm.bytes
    added = []

    def add_300():  # new blocks, kept: allocations and nothing else
        run(lambda: added.extend(torch.empty(512, device="cuda") for _ in range(300)))

    def replace_300():  # each new block lands where the one it replaces was freed
        def cell():
            for i in range(300):
                keep[i] = torch.empty(512, device="cuda")

        run(cell)

    def replace_300_with_temporaries():
        replace_300()
        for _ in range(10):
            (keep[0] * 2).sum()  # freed before the capture

    def capture():
        helper_cell(log, frontends, traces)

    if traces:
        bare_name, bare = "_snapshot()", torch.cuda.memory._snapshot
    else:
        bare_name, bare = (
            "memory_snapshot(include_traces=False)",
            lambda: torch.cuda.memory.memory_snapshot(include_traces=False),
        )
    cases = [
        ("nothing changed", lambda: None),
        ("300 new blocks", add_300),
        ("300 replaced", replace_300),
        ("and temporaries", replace_300_with_temporaries),
    ]
    times = [(label, *capture_ms(cell, capture, bare)) for label, cell in cases]
    capture_ms(replace_300, capture, bare, runs=1)  # the message below: a cell that replaced 300 blocks
    where = depth if isinstance(depth, str) else f"{depth:>2} frames deeper"
    print(
        f"{n:>7} live blocks, {where}, traces {'on ' if traces else 'off'}, helper against "
        f"bare {bare_name}: "
        + " | ".join(f"{label} {ms:6.1f} / {b:6.1f} ms ({ms / b:.2f}x, paired {p:.2f}x)" for label, ms, b, p in times)
        + f" | message: whole {whole / 2**20:.2f} MiB, 300 replaced {comm.bytes / 2**10:.1f} KiB "
        f"({comm.bytes / whole:.1%})"
    )
    added.clear()
    if phases:
        phased = (("300 replaced", replace_300), ("300 replaced and temporaries", replace_300_with_temporaries))
        for label, cell in phased:
            steps = phase_ms(cell, log, frontends, bare)
            print(f"    steps (median of 15, {label}): " + ", ".join(f"{k} {v:.2f} ms" for k, v in steps.items()))
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(max(3, 300_000 // n)):
            replace_300_with_temporaries()
            capture()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(14)
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:3500])


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
    profile = [arg.partition("=")[2] or "100000" for arg in sys.argv if arg.startswith("--profile")]
    sizes = [arg.partition("=")[2] for arg in sys.argv if arg.startswith("--sizes=")]
    only = {int(n) for n in sizes[0].split(",")} if sizes else None
    capture_costs(
        profile=int(profile[0]) if profile else None,
        only=only,
        phases="--phases" in sys.argv,
        kernel="--kernel" in sys.argv,
    )
    if "--no-history-cost" not in sys.argv:
        history_costs()


if __name__ == "__main__":
    main()
