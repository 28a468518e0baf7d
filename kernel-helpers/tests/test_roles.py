"""The per-cell role pass in a real IPython shell with real (CPU) torch tensors.

CPU storages stand in for CUDA blocks (device -1), one block per storage, as
the caching allocator gives one block per allocation. The oracles are torch's
own: ``model.parameters()`` and their ``.grad``, ``optimizer.state``, and
``saved_tensors_hooks`` for what autograd saves.
"""

import gc
import json
import sys
import weakref

import pytest
from conftest import ODD_OBJECTS, ROOT, read_as_recorded

torch = pytest.importorskip("torch")

from cuda_memdiff_kernel import (  # noqa: E402
    holders,
    protocol,
    roles,
    walk,  # noqa: E402
)
from cuda_memdiff_kernel.compact import FrameTable, read_state  # noqa: E402
from cuda_memdiff_kernel.roles import RolePass  # noqa: E402

NOTEBOOK = ROOT / "test-data" / "roles" / "training_roles.ipynb"


def storage_key(t):
    return -1, t.untyped_storage().data_ptr()


def row(key, size, requested=None):
    return (key[0], key[1], size, size if requested is None else requested, 0, 0, key[1])


def blocks_of(tensors, extra=()):
    """A block table with one block per distinct storage of ``tensors``, plus ``extra`` rows."""
    table = {}
    for t in tensors:
        key = storage_key(t)
        table[key] = row(key, t.untyped_storage().nbytes())
    for r in extra:
        table[(r[0], r[1])] = r
    return table


def storage_bytes(tensors, exclude=()):
    seen = {storage_key(t): t.untyped_storage().nbytes() for t in tensors}
    return sum(n for k, n in seen.items() if k not in exclude)


def cells():
    nb = json.loads(NOTEBOOK.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture
def trained(shell):
    """The training notebook run up to its eval pass; ``saved`` holds what the eval forward saved."""
    sources = cells()
    for source in sources[:4]:
        assert shell.run_cell(source).success
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        assert shell.run_cell(sources[4]).success
    return shell, saved


def everything(shell, saved):
    ns = shell.user_ns
    model, opt = ns["model"], ns["opt"]
    params = list(model.parameters())
    grads = [p.grad for p in params if p.grad is not None]
    state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    buffers = list(model.buffers())
    users = [v for v in ns.values() if isinstance(v, torch.Tensor)]
    return params, grads, state, buffers, users


def test_training_roles_match_the_model_the_optimizer_and_autograd(trained):
    shell, saved = trained
    params, grads, state, buffers, users = everything(shell, saved)
    stray = row((-1, 1 << 60), 4096)  # a block no tensor lies in
    blocks = blocks_of(params + grads + state + buffers + users + saved, [stray])
    answer = RolePass().run(shell, blocks)
    got = answer["bytes"]
    assert not answer["partial"] and not answer["reused"]
    assert set(got) == set(protocol.ROLES)
    assert got["parameter"] == storage_bytes(params) > 0
    assert got["gradient"] == storage_bytes(grads) > 0
    assert got["optimizer_state"] == storage_bytes(state) > 0
    assert got["buffer"] == storage_bytes(buffers, exclude={storage_key(t) for t in params}) > 0
    # activations: what the eval forward saved, less what is a parameter or buffer (the saved weights)
    stronger = {storage_key(t) for t in params + buffers + grads + state}
    assert got["activation"] == storage_bytes(saved, exclude=stronger) > 0
    assert got["unknown"] == 4096
    assert sum(got.values()) == sum(r[2] for r in blocks.values())


def test_a_slice_keeps_its_whole_base_storage(shell):
    shell.run_cell("import torch\nbig = torch.zeros(1000)\nhead = big[10:20]\ndel big")
    head = shell.user_ns["head"]
    base = storage_key(head)
    # the slice's data pointer lies inside the block, not at its start: joined by storage
    blocks = {base: row(base, 4000)}
    assert head.data_ptr() != base[1]
    assert RolePass().run(shell, blocks)["bytes"]["user"] == 4000


def test_a_storage_inside_a_larger_block_is_found_by_address(shell):
    shell.run_cell("import torch\nt = torch.zeros(256)")
    key = storage_key(shell.user_ns["t"])
    block = (-1, key[1] - 512)  # the block starts before the storage (allocator rounding, a split)
    blocks = {block: row(block, 512 + 1024 + 512)}
    assert RolePass().run(shell, blocks)["bytes"]["user"] == 2048


def test_output_cache_traceback_and_precedence(shell):
    shell.run_cell("import torch\nw = torch.nn.Linear(8, 8)\nkept = torch.ones(64)")
    shell.run_cell("kept * 2", store_history=True)  # Out[n] holds a tensor no name holds
    shell.run_cell("def f():\n    local = torch.ones(128)\n    raise ValueError('boom')\nf()")
    ns = shell.user_ns
    out = ns["_"]

    frame_local = [tb for tb in _tracebacks(sys.last_traceback) if "local" in tb.tb_frame.f_locals][0]
    local = frame_local.tb_frame.f_locals["local"]
    kept = ns["kept"]
    blocks = blocks_of([out, local, kept, ns["w"].weight, ns["w"].bias])
    rp = RolePass()
    got = rp.run(shell, blocks)["bytes"]
    assert got["output_cache"] == out.untyped_storage().nbytes()
    assert got["traceback"] == local.untyped_storage().nbytes()
    assert got["user"] == kept.untyped_storage().nbytes()
    # the weight is named by the user too (w.weight): a parameter wins
    assert got["parameter"] == storage_bytes([ns["w"].weight, ns["w"].bias])
    assert rp.by_block[storage_key(kept)] == protocol.ROLES.index("user")


def _tracebacks(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_a_cell_that_changes_no_role_reuses_the_answer_and_one_that_does_not_does_not(shell):
    shell.run_cell("import torch\na = torch.ones(10)")
    blocks = blocks_of([shell.user_ns["a"]])
    rp = RolePass()
    first = rp.run(shell, blocks)
    again = rp.run(shell, blocks)
    assert again["reused"] and again["bytes"] == first["bytes"]
    shell.run_cell("b = a")  # a new name for the same tensor: no block changes role
    assert rp.run(shell, blocks)["reused"]
    shell.run_cell("m = torch.nn.Module()\nm.register_buffer('kept', a)")  # the same block, now a buffer
    changed = rp.run(shell, blocks)
    assert not changed["reused"] and changed["bytes"]["buffer"] == first["bytes"]["user"] > 0


def test_a_spent_budget_gives_a_partial_answer(shell):
    shell.run_cell("import torch\nmany = [torch.ones(1) for _ in range(20000)]")
    many = shell.user_ns["many"]
    blocks = blocks_of(many)
    answer = RolePass(budget_s=0).run(shell, blocks)
    assert answer["partial"]
    # what the walk did not reach is unknown, never a workspace, and all bytes are accounted for
    assert answer["bytes"]["unknown"] > 0 and answer["bytes"]["workspace"] == 0
    assert sum(answer["bytes"].values()) == sum(r[2] for r in blocks.values())
    complete = RolePass().run(shell, blocks)
    assert not complete["partial"] and complete["bytes"]["user"] == sum(r[2] for r in blocks.values())


def test_a_block_of_cublas_workspace_size_no_tensor_holds_is_a_workspace(shell, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    shell.run_cell("import torch")
    size = 4096 * 8 * 1024
    blocks = {(-1, 1 << 50): row((-1, 1 << 50), size), (-1, 1 << 51): row((-1, 1 << 51), size + 512)}
    got = RolePass().run(shell, blocks)["bytes"]
    assert got["workspace"] == size and got["unknown"] == size + 512


def test_pending_frees_have_no_role(shell):
    shell.run_cell("import torch")
    pending = (-1, 1 << 50, 512, 512, 1, 0, 1 << 50)
    answer = RolePass().run(shell, {(-1, 1 << 50): pending})
    assert sum(answer["bytes"].values()) == 0


def test_roles_file_columns_name_each_block(shell, validate):
    shell.run_cell("import torch\nm = torch.nn.Linear(4, 4)")
    m = shell.user_ns["m"]
    rp = RolePass()
    summary = rp.run(shell, blocks_of([m.weight, m.bias]))
    validate(summary, "roles")
    columns = validate(roles.roles_file(rp.by_block), "rolesFile")
    assert columns["role"] == ["parameter", "parameter"]
    assert sorted(columns["address"]) == columns["address"]


def test_the_pass_reads_the_compact_block_table_of_a_real_snapshot(shell):
    """The rows capture.py gives the pass: read from an H200 snapshot, nothing on the CPU lies in them."""
    from cuda_memdiff_kernel.replay import load_snapshot_file

    shell.run_cell("import torch")
    raw = load_snapshot_file(ROOT / "test-data" / "recordings" / "clean_training--python" / "cell03.pickle.gz")
    _, blocks = read_state(raw, FrameTable())
    answer = RolePass().run(shell, blocks)
    allocated = sum(r[2] for r in blocks.values() if r[4] == 0)
    assert sum(answer["bytes"].values()) == allocated > 0
    assert answer["bytes"]["unknown"] + answer["bytes"]["workspace"] == allocated


def test_memoryviz_categories_go_on_the_last_alloc_of_each_live_block():
    """MemoryViz colours its timeline by the alloc entries' ``category`` (as profile_plot writes it)."""
    trace = [
        {"action": "alloc", "addr": 1},
        {"action": "free_completed", "addr": 1},
        {"action": "alloc", "addr": 2},
        {"action": "alloc", "addr": 1},
        {"action": "snapshot"},
    ]
    raw = {"segments": [], "device_traces": [trace]}
    by_block = {(0, 1): protocol.ROLES.index("gradient"), (0, 7): protocol.ROLES.index("parameter")}
    assert roles.stamp_categories(raw, by_block) == 1
    assert [t.get("category") for t in trace] == ["unknown", None, "unknown", "gradient", None]
    # MemoryViz needs 'unknown' among the categories whenever there are any
    assert "unknown" in {t.get("category") for t in trace}


def test_the_recorded_training_session_opens_in_memoryviz_coloured_by_role():
    from cuda_memdiff_kernel.replay import load_snapshot_file

    folder = ROOT / "test-data" / "roles" / "training_roles--python"
    manifest = json.loads((folder / "manifest.json").read_text())
    cell = manifest["cells"][4]
    raw = load_snapshot_file(folder / cell["snapshot_file"])
    columns = json.loads((folder / cell["roles_file"]).read_text())
    categories = {t["addr"]: t["category"] for t in raw["device_traces"][0] if t["action"] == "alloc"}
    # every live block's latest allocation carries its role
    assert all(categories[a] == r for a, r in zip(columns["address"], columns["role"]))


def test_the_recorded_manifest_follows_the_manifest_rule_and_its_roles_go_on_the_wire(validate):
    folder = ROOT / "test-data" / "roles" / "training_roles--python"
    manifest = read_as_recorded(folder / "manifest.json")
    for cell in manifest["cells"]:
        validate(cell["roles"], "roles")  # the replay kernel sends a recorded cell's roles as they are
        columns = validate(json.loads((folder / cell["roles_file"]).read_text()), "rolesFile")
        assert set(columns["role"]) <= set(protocol.ROLES)


def test_the_pass_runs_none_of_the_users_code(shell):
    # what test_holders checks of the search, for the pass that runs after every cell
    assert shell.run_cell(ODD_OBJECTS).success
    ns = shell.user_ns
    with torch._C.DisableTorchFunctionSubclass():
        kept = [ns["logged"], ns["graded"], ns["lazy"].t, ns["hook"].__dict__["outs"][0], ns["mixed"][40]]
        kept += [ns["posed"], ns["posed_graded"], *ns["posed_list"]]
        weight = ns["posed_lin"].weight  # a parameter of a tensor subclass's, its gradient and Adam's state
        trained = {
            "parameter": weight,
            "gradient": weight.grad,
            "optimizer_state": ns["posed_opt"].state[weight]["exp_avg"],
        }
        blocks = blocks_of(kept)
        model_blocks = blocks_of(trained.values())
    ns["CALLS"].clear()
    rp = RolePass()
    answer = rp.run(shell, {**blocks, **model_blocks})
    assert ns["CALLS"] == []
    assert not answer["partial"] and answer["bytes"]["user"] == sum(r[2] for r in blocks.values())
    for role, t in trained.items():
        assert answer["bytes"][role] == storage_bytes([t]), role


def test_a_tensor_that_refuses_to_be_read_leaves_the_pass_its_roles(strict):
    # Before: its first read raised out of the walk and the pass answered None for every cell.
    shell = strict
    assert shell.run_cell("plain = torch.ones(60)\nw = torch.nn.Linear(2, 2)").success
    ns = shell.user_ns
    with torch._C.DisableTorchFunctionSubclass():
        blocks = blocks_of([ns["plain"], ns["w"].weight, ns["strict"]])
        users = storage_bytes([ns["plain"], ns["strict"]])
    answer = RolePass().after_cell(shell, blocks)
    assert answer is not None and not answer["partial"]
    assert answer["bytes"]["user"] == users
    assert answer["bytes"]["parameter"] == ns["w"].weight.untyped_storage().nbytes()


def test_what_a_kept_or_last_error_keeps_is_the_tracebacks(shell):
    # its arguments, as its frames' locals: the memory goes with the error (del err; or a cell that succeeds)
    assert shell.run_cell(
        "import torch\ntry:\n    raise ValueError(torch.ones(45))\nexcept ValueError as e:\n    err = e"
    ).success
    assert not shell.run_cell("raise ValueError('nan in batch', torch.ones(49))").success

    kept, last = shell.user_ns["err"].args[0], sys.last_value.args[1]
    got = RolePass().run(shell, blocks_of([kept, last]))["bytes"]
    assert got["traceback"] == storage_bytes([kept, last]) and got["unknown"] == 0


def test_what_a_torch_module_or_its_hook_keeps_is_the_users(shell):
    assert shell.run_cell("""
import torch
def attach(m):
    outs = []
    m.register_forward_hook(lambda mod, i, o: outs.append(o.detach()))
lin = torch.nn.Linear(3, 3)
attach(lin)
lin.saved_input = torch.ones(5, 3)
with torch.no_grad():
    lin(lin.saved_input)
""").success
    lin = shell.user_ns["lin"]
    kept = [lin.saved_input, next(iter(lin._forward_hooks.values())).__closure__[0].cell_contents[0]]
    got = RolePass().run(shell, blocks_of(kept))["bytes"]
    assert got["user"] == storage_bytes(kept) and got["unknown"] == 0


def test_what_a_running_thread_keeps_is_the_users(shell):
    # Before: held only by a thread running the user's function (its arguments), the block was "unknown".
    assert shell.run_cell("""
import threading
import torch
ready, release = threading.Event(), threading.Event()
def train(h):
    ready.set()
    release.wait(30)
worker = threading.Thread(target=train, args=(torch.ones(46),))
worker.start()
assert ready.wait(10)
del train""").success
    ns = shell.user_ns
    try:
        kept = [ns["worker"]._args[0]]
        got = RolePass().run(shell, blocks_of(kept))["bytes"]
        assert got["user"] == storage_bytes(kept) and got["unknown"] == 0
    finally:
        ns["release"].set()
        ns["worker"].join(10)


def test_a_walk_is_gone_when_it_returns_without_the_collector(shell):
    # The walk's list of threads held its own frame, and so itself: a cycle that kept every object the walk had
    # seen (a paused generator's dropped batch, which the GPU counted) until the collector ran, which the pass
    # pauses. Without the collector, what the user's code let go of must be gone as it returns.
    assert shell.run_cell("""
import torch
def batches():
    while True:
        batch = torch.ones(2**10)
        yield batch
loader = batches()
b = next(loader)""").success
    collecting = gc.isenabled()
    gc.disable()
    try:
        first = weakref.ref(shell.user_ns["b"])
        RolePass().run(shell, blocks_of([shell.user_ns["b"]]))
        holders.find_holders(shell, [{"device": -1, **dict(zip(("address", "size"), storage(shell.user_ns["b"])))}])
        assert shell.run_cell("del b\nb = next(loader)").success
        assert first() is None, "a walk kept the generator's dropped batch alive"
        walks = [o for o in gc.get_objects() if issubclass(type(o), walk.ObjectWalk)]
        assert walks == []
    finally:
        if collecting:
            gc.enable()


def storage(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()
