"""Holder search cost on a GPU: who holds each of about 40,000 live blocks.

    PYTHONPATH=kernel-helpers python3 bench/holders_cuda.py

Builds the many_blocks state (40,500 tensors in three lists) plus a model
whose outputs keep their autograd graphs in a list, in a real IPython shell,
then times ``holders.find_holders`` over every allocated block (median of 5).
Prints figures; the search stops itself at its budget (2 s) and says so.
"""

import statistics
import time

import torch
from cuda_memdiff_kernel import holders
from cuda_memdiff_kernel.recorder import _live_blocks
from IPython.core.interactiveshell import InteractiveShell

CELLS = [
    "import torch, torch.nn as nn",
    "small = [torch.empty(256, device='cuda') for _ in range(20000)]",
    "more = [torch.empty(4096, device='cuda') for _ in range(20000)]",
    "big = [torch.empty(1 << 20, device='cuda') for _ in range(500)]",
    "model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()\n"
    "preds = [model(torch.randn(64, 1024, device='cuda')) for _ in range(50)]",
]


def main():
    shell = InteractiveShell.instance()
    for cell in CELLS:
        shell.run_cell(cell)
    blocks = _live_blocks(torch.cuda.memory._snapshot())
    times, answer = [], None
    for _ in range(5):
        started = time.perf_counter()
        answer = holders.find_holders(shell, blocks)
        times.append((time.perf_counter() - started) * 1000)
    kinds = {}
    for b in answer["blocks"]:
        for h in b["holders"][:1]:
            kinds[h["kind"]] = kinds.get(h["kind"], 0) + 1
    print(
        f"holder search over {len(blocks)} live blocks: median {statistics.median(times):.0f} ms of 5 "
        f"(min {min(times):.0f}, max {max(times):.0f}); partial={answer['partial']}; first holder kinds {kinds}"
    )


if __name__ == "__main__":
    main()
