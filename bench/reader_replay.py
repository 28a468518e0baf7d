"""The helper's snapshot reader on real snapshots, without a GPU.

    PYTHONPATH=kernel-helpers python3 bench/reader_replay.py --record FILE [--depth=24 | --cells]  # with CUDA
    PYTHONPATH=kernel-helpers python3 bench/reader_replay.py FILE [--profile]                      # anywhere

``--record`` keeps 10,000 live blocks of 1 KiB and pickles nine
``torch_probe.counted_snapshot()`` results, one after each cell, whose cells
are bench/helper_cuda.py's: a cell replaces 300 of the blocks (each new block
lands where the one before it was freed), and every other cell also makes
temporaries. ``--depth=24`` allocates 24 frames deeper; ``--cells`` runs
each cell by IPython's ``run_cell``, so the blocks carry a notebook cell's
stacks. The reader's cost depends on how torch lays blocks and stacks out,
which a made-up snapshot would only guess.

Replaying feeds them to a fresh ``SnapshotLog.add`` in order, seven times,
and prints the median time of each read (the first reads every block; the
later ones read what the counts say can have changed); ``--profile`` adds
the hot spots of the later reads.
"""

import cProfile
import io
import pickle
import pstats
import statistics
import sys
import time

from cuda_memdiff_kernel.log import SnapshotLog

CELLS = 9
REPEATS = 7


def record(path, depth, cells):
    import torch
    from cuda_memdiff_kernel import torch_probe
    from helper_cuda import in_cells, nested

    run = in_cells() if cells else lambda fn: nested(depth, fn)

    torch.empty(1, device="cuda")
    torch_probe.start_history("all", "python", 100000)
    keep = run(lambda: [torch.empty(256, device="cuda") for _ in range(10_000)])

    def replace_300():  # as bench/helper_cuda.py's cell: each new block lands where the one before it was freed
        for i in range(300):
            keep[i] = torch.empty(512, device="cuda")

    snapshots = [torch_probe.counted_snapshot()[:2]]
    for cell in range(CELLS - 1):
        run(replace_300)
        if cell % 2:
            for _ in range(10):
                (keep[0] * 2).sum()  # freed before the snapshot
        snapshots.append(torch_probe.counted_snapshot()[:2])
    with open(path, "wb") as f:
        pickle.dump(snapshots, f)
    blocks = sum(len(s["blocks"]) for s in snapshots[-1][1]["segments"])
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}: {len(snapshots)} snapshots of {blocks} blocks")


def replay(snapshots):
    """The time of each read, in ms."""
    log = SnapshotLog()
    times = []
    for allocations, raw in snapshots:
        t = time.perf_counter()
        log.add(raw, allocations, reason="cell")
        times.append((time.perf_counter() - t) * 1000)
    return times


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--record" in sys.argv:
        depth = [int(a.partition("=")[2]) for a in sys.argv if a.startswith("--depth=")]
        record(args[0], depth[0] if depth else 0, "--cells" in sys.argv)
        return
    with open(args[0], "rb") as f:
        snapshots = pickle.load(f)
    runs = [replay(pickle.loads(pickle.dumps(snapshots))) for _ in range(REPEATS)]  # fresh dicts, as torch's are
    medians = [statistics.median(column) for column in zip(*runs)]
    print("median ms of each read (first reads every block): " + " ".join(f"{ms:.2f}" for ms in medians))
    print(f"later reads: median {statistics.median(medians[1:]):.2f} ms")
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        for _ in range(REPEATS):
            fresh = pickle.loads(pickle.dumps(snapshots))
            log = SnapshotLog()
            log.add(fresh[0][1], fresh[0][0], reason="cell")
            prof.enable()
            for allocations, raw in fresh[1:]:
                log.add(raw, allocations, reason="cell")
            prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(16)
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip()))


if __name__ == "__main__":
    main()
