"""Per-cell cost of the kernel helper against a bare torch.cuda.memory._snapshot().

Run on a CUDA machine:  PYTHONPATH=kernel-helpers python3 bench/helper_cuda.py
Prints figures (median of 5) at 10,000 and 100,000 live blocks with history
recording on; the target is at most 1.25x the bare call at 100,000 blocks.
"""
import json
import statistics
import time

import torch

from cuda_memdiff_kernel import torch_probe
from cuda_memdiff_kernel.compact import WireEncoder

RUNS = 5


def median_ms(fn):
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def helper_cell(encoder):
    raw = torch_probe.raw_snapshot(include_traces=False)
    message = encoder.encode(raw, reason="cell", devices=torch_probe.device_stats(), cell_id="c", execution_count=1,
                             error=None)
    return json.dumps(message)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; median of {RUNS}")
    torch_probe.start_history("all", "python", 100000)
    t = time.perf_counter()
    torch_probe.warm_up()
    print(f"warm-up when the helper loads (first snapshot with a live block): {(time.perf_counter() - t) * 1000:.0f} ms")
    first = torch.empty(2**20, device="cuda")
    t = time.perf_counter()
    helper_cell(WireEncoder())
    print(f"first cell's capture after the warm-up: {(time.perf_counter() - t) * 1000:.1f} ms")
    del first
    for n in (10_000, 100_000):
        keep = [torch.empty(256, device="cuda") for _ in range(n)]
        bare = median_ms(torch.cuda.memory._snapshot)
        encoder = WireEncoder()
        first = median_ms(lambda: helper_cell(WireEncoder()))
        helper_cell(encoder)  # frames and stacks now interned, as after the first cell
        steady = median_ms(lambda: helper_cell(encoder))
        size = len(helper_cell(encoder)) / 2**20
        print(f"{n:>7} live blocks: bare _snapshot() {bare:7.1f} ms | helper per cell {steady:7.1f} ms "
              f"(ratio {steady / bare:.2f}, target <= 1.25) | helper with all frames new {first:7.1f} ms | "
              f"message {size:.1f} MiB")
        del keep
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
