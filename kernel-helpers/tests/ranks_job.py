"""A two-rank data-parallel job on the CPU (gloo), captured with ranks.capture.

    python ranks_job.py OUT_DIR RECORDING0[#FIRST] RECORDING1[#FIRST] [--private]

Each rank trains a small DDP model for three optimizer steps, then marks one
point by hand. With no GPU here, each rank's "snapshot" replays the recorded
H200 snapshots of a session folder from its cell FIRST on (default 0), one
per capture point (the allocator is the only part replaced). With --private, rank 1 writes under its own
temporary folder and its files reach OUT_DIR only through torch.distributed.
"""

import gzip
import json
import os
import pickle
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from cuda_memdiff_kernel import ranks  # noqa: E402


def _replay(spec):
    recording, _, first = spec.partition("#")
    with open(os.path.join(recording, "manifest.json"), encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    snapshots = []
    for cell in cells[int(first or 0) :]:
        with gzip.open(os.path.join(recording, cell["snapshot_file"]), "rb") as f:
            snapshots.append(pickle.load(f))
    taken = iter(snapshots)
    return lambda: next(taken, snapshots[-1])


def _train(rank, world, out, recordings, private, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    folder = tempfile.mkdtemp(prefix="rank-private-") if private and rank == 1 else out
    ranks.capture(folder, snapshot=_replay(recordings[rank]), gather="files" if private else "auto")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    ranks.mark("after training")
    ranks.stop()
    # Rank 1's last gather (its file, in --private) may still be in flight when it finishes: tearing the group
    # down then aborted it once in CI ("terminate called without an active exception"). Both leave together.
    dist.barrier()
    dist.destroy_process_group()


def main(argv):
    out, rec0, rec1 = argv[:3]
    private = "--private" in argv
    port = 29500 + os.getpid() % 1000
    mp.spawn(_train, args=(2, out, [rec0, rec1], private, port), nprocs=2, join=True)


if __name__ == "__main__":
    main(sys.argv[1:])
