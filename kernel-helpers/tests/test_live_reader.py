"""On a GPU: the log, which reads only what each cell can have changed, holds what reading every block holds.

Cells run in a real IPython shell with the helper installed; after each one,
the log's block table (addresses, sizes, states and each block's stack,
resolved to frames) must equal a full read of a fresh snapshot, through cells
that free and allocate at the same address from another cell, run a library
through the same innermost frame from two cells, make temporaries, replace
list items in place, and change nothing. Skipped without CUDA.
"""

import gc

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from cuda_memdiff_kernel import current, install  # noqa: E402
from cuda_memdiff_kernel.compact import FrameTable, read_state  # noqa: E402
from cuda_memdiff_kernel.reader import SnapshotReader  # noqa: E402

CELLS = [
    "import torch\na = torch.empty(4096, device='cuda')",
    "del a\nb = torch.empty(4096, device='cuda')",  # b lands where a was: a new block, of this cell
    "lin = torch.nn.Linear(256, 256).cuda()\nx = torch.randn(64, 256, device='cuda')",
    "y = lin(x)",
    "del y\nz = lin(x)",  # the same innermost frame (linear.py), from another cell
    "for _ in range(5):\n    w = (x @ x.T).relu().sum()",  # temporaries
    "keep = [torch.empty(256, device='cuda') for _ in range(2000)]",
    "keep[::2] = [torch.empty(256, device='cuda') for _ in range(1000)]",  # replaced in place
    "print('nothing on the GPU')",
    "keep.extend(torch.empty(512, device='cuda') for _ in range(300))",  # new blocks only
    "del keep[:1000]",  # frees only
]


def resolved(blocks, table):
    """{(device, address): (size, requested, state, stack as frames)} of a block table."""
    return {
        key: (row[2], row[3], row[4], tuple(tuple(table.frames[f]) for f in table.stacks[row[5]]))
        for key, row in blocks.items()
    }


def test_the_log_holds_what_reading_every_block_holds(shell, monkeypatch):
    full_reads = []
    read_all = SnapshotReader._read_all
    monkeypatch.setattr(SnapshotReader, "_read_all", lambda self, *a: full_reads.append(1) or read_all(self, *a))
    gc.collect()  # an earlier test's garbage, freed between a capture and the check, would differ from both
    install(shell)
    log = current(shell).log
    reads = []
    for k, source in enumerate(CELLS):
        result = shell.run_cell(source, store_history=True, cell_id=f"reader-{k}")
        assert result.success, source
        table = FrameTable()
        _, everything = read_state(torch.cuda.memory.memory_snapshot(include_traces=False), table)
        assert resolved(log.current, log.table) == resolved(everything, table), source
        entry = log.entries[-1]
        reads.append((k, len(entry.born), len(entry.freed), len(log.current)))
    print(f"cell, born, freed, live blocks: {reads}; {len(full_reads)} of {len(CELLS)} captures read every block")
    assert len(full_reads) < len(CELLS) // 2  # the others read only what changed
