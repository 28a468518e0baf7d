"""The role pass reuses what the last cell found; these cells change roles behind its back.

Each test runs cells in a real IPython shell with real CPU torch, builds the
block table the allocator would have after each (one block per live
storage: every tensor the garbage collector tracks, and what the autograd
graphs of those tensors saved), and hands the pass the blocks born and freed
since the last table, as the capture does. After every cell the pass that
kept its state must give exactly what a new pass gives from nothing, and the
block the cell moved must have its new role.
"""

import gc

import pytest

torch = pytest.importorskip("torch")

from cuda_memdiff_kernel import protocol  # noqa: E402
from cuda_memdiff_kernel.block_index import Changes  # noqa: E402
from cuda_memdiff_kernel.roles import RolePass  # noqa: E402
from cuda_memdiff_kernel.walk import saved_names  # noqa: E402


def live_storages():
    """Every storage a tensor alive now lies in, with the gradients and what the graphs of those tensors saved."""
    tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
    tensors += [t.grad for t in tensors if t.is_leaf and t.grad is not None]  # a gradient no Python object wraps yet
    seen, stack = set(), [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for name in saved_names(fn):
            try:
                saved = getattr(fn, name)
            except Exception:
                continue
            tensors += [
                t for t in (saved if isinstance(saved, (list, tuple)) else (saved,)) if isinstance(t, torch.Tensor)
            ]
        stack += [child for child, _ in fn.next_functions]
    table = {}
    for t in tensors:
        try:
            storage = t.untyped_storage()
        except Exception:
            continue
        if storage.nbytes():
            key = (-1, storage.data_ptr())
            table[key] = (-1, key[1], storage.nbytes(), storage.nbytes(), 0, 0, key[1])
    return table


class Cells:
    """Runs cells and, after each, the kept pass (with the capture's changes) and a new one."""

    def __init__(self, shell):
        self.shell, self.kept, self.table, self.version = shell, RolePass(budget_s=30), {}, 0

    def run(self, source):
        assert self.shell.run_cell(source).success, source
        before, table = self.table, live_storages()
        born = [row for key, row in table.items() if before.get(key) != row]
        freed = [key for key in before if key not in table]
        answer = self.kept.run(self.shell, table, Changes(self.version, born, freed, self.version + 1))
        self.version += 1
        fresh_pass = RolePass(budget_s=30)
        fresh = fresh_pass.run(self.shell, table)
        assert not answer["partial"] and not fresh["partial"]
        assert answer["bytes"] == fresh["bytes"], source
        assert answer["blocks"] == fresh["blocks"], source
        assert self.kept.by_block == fresh_pass.by_block, source
        self.table = table
        return answer

    def role(self, tensor):
        return protocol.ROLES[self.kept.by_block[(-1, tensor.untyped_storage().data_ptr())]]


@pytest.fixture
def cells(shell):
    out = Cells(shell)
    out.run("import torch\nmodel = torch.nn.Linear(64, 64)\nopt = torch.optim.AdamW(model.parameters())")
    return out


def test_a_parameter_replaced_by_a_tensor_that_already_lived(cells):
    ns = cells.shell.user_ns
    cells.run("lin = torch.nn.Linear(64, 64)\nkept = torch.randn(64, 64)\nold = lin.weight")
    assert cells.role(ns["kept"]) == "user" and cells.role(ns["old"]) == "parameter"
    # no block is born or freed: only the roots say what changed (no optimizer keeps the old weight)
    answer = cells.run("lin.weight = torch.nn.Parameter(kept)")
    assert cells.role(ns["kept"]) == "parameter" and cells.role(ns["old"]) == "user"
    assert not answer["reused"]


def test_a_gradient_set_to_none_while_a_name_keeps_it(cells):
    ns = cells.shell.user_ns
    cells.run("model(torch.ones(2, 64)).sum().backward()\ng = model.weight.grad")
    assert cells.role(ns["g"]) == "gradient"
    cells.run("model.weight.grad = None")
    assert cells.role(ns["g"]) == "user"


def test_optimizer_state_made_by_the_first_step(cells):
    ns = cells.shell.user_ns
    cells.run("model(torch.ones(2, 64)).sum().backward()")
    cells.run("opt.step()")
    state = ns["opt"].state[ns["model"].weight]
    assert cells.role(state["exp_avg"]) == "optimizer_state" and cells.role(state["exp_avg_sq"]) == "optimizer_state"


def test_a_tensor_saved_for_backward_becomes_the_users_when_the_graph_goes(cells):
    ns = cells.shell.user_ns
    cells.run("x = torch.randn(8, 64)\ny = model(x).sum()")
    assert cells.role(ns["x"]) == "activation"
    answer = cells.run("del y")  # the graph dies; x's block stays, now only named
    assert cells.role(ns["x"]) == "user" and not answer["reused"]


def test_an_interrupted_role_pass_is_not_followed_as_if_it_had_ended(cells, monkeypatch):
    # the index took the capture's version before the walk was interrupted: the next cell must start afresh
    cells.run("xs = [torch.full((16,), float(i)) for i in range(100)]")
    assert cells.shell.run_cell("ys = [torch.zeros(8) for _ in range(50)]\ndel xs[3:40]").success
    table = live_storages()
    born = [row for key, row in table.items() if cells.table.get(key) != row]
    freed = [key for key in cells.table if key not in table]

    def interrupted(*args):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(RolePass, "_walk", interrupted)
        with pytest.raises(KeyboardInterrupt):
            cells.kept.after_cell(cells.shell, table, Changes(cells.version, born, freed, cells.version + 1))
    cells.version, cells.table = cells.version + 1, table
    cells.run("zs = [torch.ones(4) for _ in range(3)]")  # the kept pass answers as a fresh one


def test_a_list_of_tensors_is_reused_until_it_changes(cells):
    ns = cells.shell.user_ns
    cells.run("xs = [torch.full((16,), float(i)) for i in range(100)]")
    assert cells.kept.run(cells.shell, cells.table, Changes(cells.version, [], [], cells.version))["reused"]
    cells.run("xs[7] = torch.zeros(32)")  # a new tensor in the same list
    assert cells.role(ns["xs"][7]) == "user"
    cells.run("w = torch.nn.Module()\nw.register_buffer('b', xs[3])")  # a block of the list, now a buffer
    assert cells.role(ns["xs"][3]) == "buffer"
    cells.run("del w")
    assert cells.role(ns["xs"][3]) == "user"


def test_a_list_item_that_starts_to_need_a_gradient(cells):
    ns = cells.shell.user_ns
    cells.run("xs = [torch.randn(16) for i in range(100)]")
    cells.run("xs[5].requires_grad_()\npass")  # the same object: the list's ids do not change
    cells.run("(xs[5] * 2).sum().backward()")  # its gradient is born; only the list holds the tensor
    assert cells.role(ns["xs"][5].grad) == "gradient"


def test_a_list_item_given_a_new_storage_in_place(cells):
    ns = cells.shell.user_ns
    cells.run("xs = [torch.randn(16) for i in range(100)]")
    cells.run("xs[9].set_(torch.zeros(64).untyped_storage())\npass")  # same object, new storage, old one freed
    assert cells.role(ns["xs"][9]) == "user"


def test_a_list_left_only_to_the_output_cache(cells):
    ns = cells.shell.user_ns
    cells.run("xs = [torch.randn(16) for i in range(100)]")
    cells.shell.run_cell("xs", store_history=True)  # Out[n] holds the list too; the name is met first
    assert cells.run("pass") and cells.role(ns["xs"][1]) == "user"
    cells.run("first = xs[0]\ndel xs")  # the same list object, now reached from Out[n] only
    cached = ns["Out"][max(ns["Out"])]
    assert cells.role(cached[1]) == "output_cache" and cells.role(ns["first"]) == "output_cache"


def test_the_gradients_of_a_list_of_leaves_stay_gradients_on_a_cell_that_changes_nothing(cells):
    ns = cells.shell.user_ns
    cells.run("ps = [torch.randn(4, requires_grad=True) for _ in range(40)]")
    cells.run("sum(p.sum() for p in ps).backward()")
    cells.run("pass")  # the list is reused; its tensors that need a gradient are walked again
    assert {cells.role(p.grad) for p in ns["ps"]} == {"gradient"}
    cells.run("g = ps[3].grad\nps[3].grad = None")  # no block born or freed
    assert cells.role(ns["g"]) == "user"


def test_a_list_only_the_output_cache_holds_changed_in_place(cells):
    """Output cache beats user: a tensor the list now holds changes role though no block of the list changed."""
    ns = cells.shell.user_ns
    cells.shell.run_cell("[torch.randn(16) for i in range(100)]", store_history=True)
    cells.run("cached = Out[max(Out)]\nz = torch.zeros(64)\nkeep7 = cached[7]\ndel cached")
    assert cells.role(ns["z"]) == "user" and cells.role(ns["keep7"]) == "output_cache"
    cells.run("Out[max(Out)][7] = z")  # another tensor that already lived; the old one lives on
    assert cells.role(ns["z"]) == "output_cache" and cells.role(ns["keep7"]) == "user"
    cells.run("w = torch.zeros(64)\nOut[max(Out)][9].set_(w.untyped_storage())\npass")  # the old storage is freed
    assert cells.role(ns["w"]) == "output_cache"


def test_the_block_index_follows_a_captures_changes_as_a_fresh_read_would():
    """Born and freed rows, a row changed in place, a pending free, a second device: order, starts and marks."""
    from cuda_memdiff_kernel.block_index import BlockIndex

    def row(device, address, size=512, state=0):
        return (device, address, size, size, state, 0, address)

    before = {(0, a): row(0, a) for a in range(0, 512 * 40, 512)}
    index = BlockIndex()
    index.update(before, Changes(None, list(before.values()), [], 1))
    marks = bytearray(b"x" * len(index.order))
    after = dict(before)
    for a in (512 * 3, 512 * 17, 512 * 39):
        del after[(0, a)]
    after[(0, 512 * 5)] = row(0, 512 * 5, size=1024)  # the same address, another block
    after[(0, 512 * 8)] = row(0, 512 * 8, state=1)  # now a pending free: not allocated
    after[(0, 512 * 100)] = row(0, 512 * 100)
    after[(0, 512 * 3 + 256)] = row(0, 512 * 3 + 256, size=256)
    born = [r for k, r in after.items() if before.get(k) != r]
    freed = [k for k in before if k not in after]
    touched = index.update(after, Changes(1, born, freed, 2))
    fresh = BlockIndex()
    fresh.update(after)
    assert index.rows == fresh.rows and index.starts == fresh.starts == fresh.order == index.order
    assert touched == {512 * 3, 512 * 17, 512 * 39, 512 * 5, 512 * 8, 512 * 100, 512 * 3 + 256}
    moved = index.follow(marks, lambda added: b"?" * len(added))
    assert len(moved) == len(index.order)
    assert {a for a, m in zip(index.order, moved) if m == ord("?")} == {512 * 100, 512 * 3 + 256}
    assert index.replaced[512 * 5][2] == 512 and index.rows[512 * 5][2] == 1024
    # a block on a second device at a lower address: device order first
    later = dict(after)
    later[(1, 64)] = row(1, 64)
    index.update(later, Changes(2, [later[(1, 64)]], [], 3))
    assert index.order[-1] == 64 and list(index.starts[:2]) == [0, 64] and not index.one_device
    # changes from a version the index did not follow (a capture it missed): the rows are compared
    missed = dict(later)
    del missed[(0, 0)]
    latest = dict(missed)
    latest[(0, 512 * 200)] = row(0, 512 * 200)
    index.update(latest, Changes(4, [latest[(0, 512 * 200)]], [], 5))
    fresh = BlockIndex()
    fresh.update(latest)
    assert index.rows == fresh.rows and index.order == fresh.order and 0 not in index.rows


# Graph reuse: a kept output's autograd graph is not walked again while it cannot have changed.


def test_backward_through_a_kept_graph_frees_what_it_saved_though_no_block_goes(cells):
    """Only the probe sees this: x and the weight outlive the graph, and the gradient born is reached."""
    ns = cells.shell.user_ns
    cells.run("x = torch.randn(8, 64)\ny = model(x)")
    assert cells.role(ns["x"]) == "activation"
    cells.run("pass")  # the graph is reused
    cells.run("y.sum().backward()")
    assert cells.role(ns["x"]) == "user"


def test_a_kept_output_changed_in_place_saves_another_named_tensor(cells):
    """The root node changes for one of its own type (only the token tells) while no block is born or freed."""
    ns = cells.shell.user_ns
    cells.run("w = torch.randn(8, 64, requires_grad=True)\nb = torch.randn(8, 64)\ny = torch.randn(8, 64) * w")
    assert cells.role(ns["b"]) == "user"
    cells.run("y.mul_(b)")  # a new MulBackward0 saves b for y's gradient
    assert cells.role(ns["b"]) == "activation"


def test_a_graph_two_names_share_stays_whole_when_one_name_goes(cells):
    """Each name's graph is kept whole: the one left must still reach what the shared part saved."""
    ns = cells.shell.user_ns
    cells.run("x = torch.randn(8, 64)\nh = model(x)\nout = h.relu()")
    cells.run("pass")
    cells.run("del h")
    assert cells.role(ns["x"]) == "activation"


def test_item_ids_tell_lists_apart_by_the_objects_they_hold():
    from cuda_memdiff_kernel.item_ids import item_ids

    a, b = torch.zeros(1), torch.zeros(1)
    items = [a, b] * 20
    assert item_ids(items) == item_ids(list(items)) == item_ids(tuple(items))
    swapped = list(items)
    swapped[7] = a
    assert item_ids(swapped) != item_ids(items) and item_ids([]) == item_ids(())
