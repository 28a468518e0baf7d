"""The live CUDA path, run on a GPU machine (skipped without CUDA).

The helper in a real IPython shell runs cells on the device; for every cell
the pushed message's allocated bytes equal torch.cuda.memory_allocated(), and
an out-of-memory cell yields an OOM-time snapshot. Set CUDA_MEMDIFF_LIVE_OUT to
keep the messages (JSON lines) for the engine's decoding test.
"""

import json
import os

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from conftest import attach  # noqa: E402
from cuda_memdiff_kernel import install  # noqa: E402

CELLS = [
    "import torch\nx = torch.empty(256 * 2**20, dtype=torch.uint8, device='cuda')",
    "keep = [torch.randn(1024, 1024, device='cuda') for _ in range(16)]",
    "del keep[:8]",
    "huge = torch.empty(4 * 2**40, dtype=torch.uint8, device='cuda')",  # 4 TiB: out of memory
    "y = x[: 2**20].clone()\ndel x",
    "print('nothing on the GPU')",
]


def whole_tables(messages):
    """Each snapshot message with its full block table rebuilt from the changes, as the frontend does."""
    table = {}
    for m in messages:
        if m["type"] != "snapshot":
            yield m
            continue
        if m["prev"] is None:
            table = {}
        else:
            for d, a in zip(m["freed"]["device"], m["freed"]["address"]):
                del table[(d, a)]
        seg, b = m["segments"], m["blocks"]
        for i, a in enumerate(b["address"]):
            table[(seg["device"][b["segment"][i]], a)] = (seg["device"][b["segment"][i]], b["size"][i], b["state"][i])
        rows = list(table.values())
        whole = dict(
            m,
            blocks={
                "device": [r[0] for r in rows],
                "address": [k[1] for k in table],
                "size": [r[1] for r in rows],
                "state": [r[2] for r in rows],
            },
        )
        yield whole


def ooms_source(snaps):
    """The source each OOM snapshot names: the run it interrupted."""
    return [m["source"] for m in snaps if m["reason"] == "oom"]


def test_live_cells_match_memory_allocated(shell):
    install(shell)  # waits for the user's torch and CUDA
    channel = attach(shell)
    measured = []
    for k, source in enumerate(CELLS):
        result = shell.run_cell(source, store_history=True, cell_id=f"live-{k}")
        assert result.success == (k != 3)
        measured.append(sum(torch.cuda.memory_allocated(d) for d in range(torch.cuda.device_count())))
    snaps = [m for m in whole_tables(channel.messages) if m["type"] == "snapshot"]
    cells = [m for m in snaps if m["reason"] == "cell"]
    assert [m["cell_id"] for m in cells] == [f"live-{k}" for k in range(len(CELLS))]
    # the code each run's frames count lines in, as ipykernel hashed it for their file name
    assert [m["source"] for m in cells] == CELLS
    assert ooms_source(snaps) == [CELLS[3]]
    for msg, allocated in zip(cells, measured):
        blocks = msg["blocks"]
        in_blocks = sum(s for s, st in zip(blocks["size"], blocks["state"]) if st == 0)
        assert in_blocks == allocated
        assert sum(d["allocated"] for d in msg["devices"]) == allocated
        print(
            f"{msg['cell_id']}: allocated {allocated} bytes, {len(blocks['size'])} active blocks, "
            f"capture {msg['capture_ms']} ms"
        )
    ooms = [m for m in snaps if m["reason"] == "oom"]
    assert len(ooms) == 1 and ooms[0]["cell_id"] == "live-3"
    assert "OutOfMemoryError" in cells[3]["error"]
    # who holds the last cell's blocks, asked as the frontend asks
    last = cells[-1]["blocks"]
    columns = zip(last["device"], last["address"], last["size"], last["state"])
    blocks = [[device, addr, size] for device, addr, size, st in columns if st == 0]
    reply = channel.request({"type": "holders-request", "id": 1, "blocks": blocks})
    assert not reply["partial"] and "error" not in reply
    paths = {h["path"] for b in reply["blocks"] for h in b["holders"]}
    assert "y" in paths and {f"keep[{i}]" for i in range(8)} <= paths
    print(f"holders of {len(blocks)} live blocks in {reply['elapsed_ms']} ms: {sorted(paths)}")
    out = os.environ.get("CUDA_MEMDIFF_LIVE_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            for m in channel.messages:
                f.write(
                    json.dumps(
                        dict(m, measured_allocated=measured[int(m["cell_id"].split("-")[1])])
                        if m["type"] == "snapshot"
                        else m
                    )
                    + "\n"
                )
