"""A two-rank DDP job on CUDA where rank 1 keeps 64 MiB more each step.

    python ranks_cuda_job.py OUT_DIR [DEVICES]

Both ranks use one GPU when the machine has one (gloo carries the
gradients), one GPU each when it has two. After every optimizer step each
rank writes the `torch.cuda.memory_allocated()` it reads right after the step
into OUT_DIR/rank<R>.allocated.json, for the test to compare with what the
capture recorded at that step.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cuda_memdiff_kernel import ranks  # noqa: E402

STEPS = 5


def _train(rank, world, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ranks.capture(out)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).cuda()
    )
    optimizer = torch.optim.AdamW(model.parameters())
    kept, allocated = [], []
    for _ in range(STEPS):
        model(torch.randn(512, 1024, device="cuda")).square().mean().backward()
        optimizer.step()
        allocated.append(torch.cuda.memory_allocated())
        optimizer.zero_grad(set_to_none=True)
        if rank == 1:
            kept.append(torch.randn(16, 1024, 1024, device="cuda"))
    with open(os.path.join(out, f"rank{rank}.allocated.json"), "w", encoding="utf-8") as f:
        json.dump(allocated, f)
    ranks.stop()
    dist.destroy_process_group()


def main(argv):
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    mp.spawn(_train, args=(2, out, 29700 + os.getpid() % 200), nprocs=2, join=True)


if __name__ == "__main__":
    main(sys.argv[1:])
