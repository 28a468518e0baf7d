"""Roles live on a GPU (skipped without CUDA): the helper's per-cell pass against torch's own oracles.

The training notebook (a model, AdamW, three steps, an eval pass outside
no_grad, an output in the cache) runs in a real IPython shell with the helper
installed and a frontend attached. After the last cell, the roles the
helper sent must give parameters, gradients and optimizer state exactly the
bytes of the allocator blocks that ``model.parameters()``, their ``.grad``
and ``optimizer.state`` lie in, and activations within 1% of what a
``saved_tensors_hooks`` oracle saw autograd save during the eval pass. The
figures are printed (``pytest -s``).
"""

import bisect
import json

import pytest
from conftest import ROOT, attach

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from cuda_memdiff_kernel import current, install, protocol  # noqa: E402
from cuda_memdiff_kernel.compact import block_addresses  # noqa: E402

NOTEBOOK = ROOT / "test-data" / "roles" / "training_roles.ipynb"


class Blocks:
    """The allocated blocks of a raw snapshot, found by any address inside them."""

    def __init__(self, raw):
        rows = sorted(
            (int(seg["device"]), address, int(blk["size"]), int(blk.get("requested_size", blk["size"])))
            for seg in raw["segments"]
            for address, blk in block_addresses(seg)
            if blk["state"] == "active_allocated"
        )
        self.rows = rows
        self.starts = [(r[0], r[1]) for r in rows]

    def of(self, tensors):
        """{(device, address): (size, requested)} of the blocks the tensors' storages lie in."""
        found = {}
        for t in tensors:
            if not t.is_cuda:
                continue
            i = bisect.bisect_right(self.starts, (t.device.index, t.untyped_storage().data_ptr())) - 1
            device, address, size, requested = self.rows[i]
            assert address <= t.untyped_storage().data_ptr() < address + size
            found[(device, address)] = (size, requested)
        return found


def total(blocks, exclude=()):
    return sum(size for key, (size, _) in blocks.items() if key not in exclude)


def test_training_roles_match_torchs_own_oracles(shell, validate):
    sources = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    install(shell)
    comm = attach(shell)
    saved = []
    for k, source in enumerate(sources):
        if k == 4:  # the eval pass: every tensor autograd saves for backward
            with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
                assert shell.run_cell(source, store_history=True).success
        else:
            assert shell.run_cell(source, store_history=True).success
    messages = [validate(m) for m in comm.of_type("snapshot") if m["reason"] == "cell"]
    assert all("roles" in m for m in messages), "every captured cell carries its roles"
    roles = messages[-1]["roles"]
    got = roles["bytes"]

    ns = shell.user_ns
    model, opt = ns["model"], ns["opt"]
    blocks = Blocks(torch.cuda.memory._snapshot())
    params = list(model.parameters())
    p_blocks = blocks.of(params)
    g_blocks = blocks.of([p.grad for p in params if p.grad is not None])
    s_blocks = blocks.of([t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)])
    b_blocks = blocks.of(list(model.buffers()))
    stronger = set(p_blocks) | set(g_blocks) | set(s_blocks) | set(b_blocks)
    a_blocks = blocks.of(saved)
    oracle_activation = total(a_blocks, exclude=stronger)

    figures = {
        "parameter": (got["parameter"], total(p_blocks)),
        "gradient": (got["gradient"], total(g_blocks)),
        "optimizer_state": (got["optimizer_state"], total(s_blocks)),
        "buffer": (got["buffer"], total(b_blocks)),
        "activation": (got["activation"], oracle_activation),
    }

    def storage_bytes(tensors):
        return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())

    requested = {
        name: (sum(r for _, r in bl.values()), storage_bytes(ts))
        for name, bl, ts in (("parameter", p_blocks, params), ("gradient", g_blocks, [p.grad for p in params]))
    }
    print(
        f"\nroles after the last cell ({'partial' if roles['partial'] else 'complete'}, {roles['elapsed_ms']} ms): "
        + json.dumps(got)
    )
    for name, (pass_bytes, oracle) in figures.items():
        print(f"  {name}: pass {pass_bytes} B, oracle {oracle} B")
    for name, (req, nbytes) in requested.items():
        print(f"  {name}: requested bytes of its blocks {req}, storage nbytes {nbytes}")
    print(
        f"  allocated {torch.cuda.memory_allocated()} B, roles sum {sum(got.values())} B; "
        f"per cell elapsed_ms {[m['roles']['elapsed_ms'] for m in messages]}, "
        f"capture_ms {[m.get('capture_ms') for m in messages]}"
    )
    by_block = current(shell).roles.by_block
    sizes = {(r[0], r[1]): (r[2], r[3]) for r in blocks.rows}
    for role in ("workspace", "unknown"):
        code = protocol.ROLES.index(role)
        print(f"  {role} blocks (size, requested): {sorted(sizes[k] for k, c in by_block.items() if c == code)}")
    assert not roles["partial"]
    assert got["parameter"] == total(p_blocks) > 0
    assert got["gradient"] == total(g_blocks) > 0
    assert got["optimizer_state"] == total(s_blocks) > 0
    assert got["buffer"] == total(b_blocks) > 0
    for req, nbytes in requested.values():
        assert req == nbytes  # one block per storage: the blocks hold exactly what the tensors hold
    assert abs(got["activation"] - oracle_activation) <= 0.01 * oracle_activation
    assert got["output_cache"] > 0
    assert sum(got.values()) == torch.cuda.memory_allocated()
    assert set(got) == set(protocol.ROLES)
