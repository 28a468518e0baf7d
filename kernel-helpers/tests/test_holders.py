"""Holder search in a real IPython shell with real (CPU) torch tensors.

CPU storages stand in for CUDA blocks (device -1): the search is the same
walk over the user's namespace, the output cache, the last traceback,
autograd graphs, modules and optimizers. The scenario notebooks are the
ones recorded on the H200; they pick the CPU when there is no GPU.
"""

import gc
import json
import queue
import re
import sys
import threading
import time
import weakref

import pytest
from conftest import ODD_OBJECTS, ROOT, attach, names_holder

torch = pytest.importorskip("torch")

from cuda_memdiff_kernel import holders, install, protocol, walk  # noqa: E402
from cuda_memdiff_kernel.roles import RolePass  # noqa: E402

NOTEBOOKS = ROOT / "test-data" / "notebooks"


def block_of(t):
    s = t.untyped_storage()
    return {"device": t.device.index if t.is_cuda else -1, "address": s.data_ptr(), "size": s.nbytes()}


def key(t):
    """How the answer names the block of a tensor (CPU tensors stand in as device -1)."""
    b = block_of(t)
    return b["device"], b["address"]


def run_notebook(shell, name, saved=None):
    """Run a scenario notebook's cells; ``saved`` collects the storages autograd saves meanwhile."""
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())

    def pack(t):
        if saved is not None and t.untyped_storage().data_ptr():
            saved.append(block_of(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                shell.run_cell("".join(cell["source"]), store_history=True)
    return nb


def holders_of(shell, blocks, **kw):
    answer = holders.find_holders(shell, blocks, **kw)
    return answer, {(b["device"], b["address"]): b["holders"] for b in answer["blocks"]}


def run_hooked(shell, setup, hook_body, after=""):
    """Run ``setup``, a forward hook ``keep`` on a Linear ``lin`` whose body is ``hook_body``, one forward pass
    under no_grad (the hook's outputs keep no graph), then ``after``."""
    cell = (
        f"import collections, torch\n{setup}\ndef keep(m, i, o):\n    {hook_body}\n"
        "lin = torch.nn.Linear(3, 3)\nlin.register_forward_hook(keep)\nwith torch.no_grad():\n"
        f"    lin(torch.ones(2, 3))\n{after}"
    )
    assert shell.run_cell(cell).success


def hook_holders(names, via="forward hook on lin"):
    """The holders a hook's list names are, each with the list's reference: the fix clears that list."""
    return [
        {"kind": "hook", "path": f"{name}[0]", "via": via, "reference": {"type": "hook", "name": name}}
        for name in names
    ]


def test_rnn_hidden_state_holds_the_graph(shell):
    # The notebook detaches h at the end; stop before that cell to see the graph it holds.
    saved = []
    nb = json.loads((NOTEBOOKS / "rnn_hidden_no_detach.ipynb").read_text())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(block_of(t)) or t, lambda t: t):
        for cell in nb["cells"][:3]:
            shell.run_cell("".join(cell["source"]), store_history=True)
    answer, found = holders_of(shell, saved)
    assert not answer["partial"]
    paths = {(h["kind"], h["path"]) for hs in found.values() for h in hs}
    assert ("graph", "h") in paths
    # inputs of old steps are held by nothing but the graph
    only_graph = [hs for hs in found.values() if all(h["kind"] == "graph" for h in hs)]
    assert only_graph
    # every tensor autograd saved is reached through a graph, a variable or a parameter (cuDNN
    # saves the weights), none only via the garbage collector's list
    assert len(found) == len({(b["device"], b["address"]) for b in saved})
    unnamed = [hs for hs in found.values() if not any(h["kind"] in ("graph", "variable", "parameter") for h in hs)]
    assert not unnamed, unnamed


def test_forward_hook_list_names_the_hook(shell):
    nb = json.loads((NOTEBOOKS / "forward_hook_list.ipynb").read_text())
    for cell in nb["cells"][:3]:
        shell.run_cell("".join(cell["source"]), store_history=True)
    acts = shell.user_ns["acts"]
    assert len(acts) == 16
    _, found = holders_of(shell, [block_of(t) for t in acts])
    for i, t in enumerate(acts):
        (holder,) = found[key(t)]
        assert holder == {
            "kind": "hook",
            "path": f"acts[{i}]",
            "via": "forward hook on model.1",
            "reference": {"type": "hook", "name": "acts"},
        }


def test_a_hooks_container_is_named_where_it_lies(shell):
    # the list a hook appends to, inside a dict: its fix clears `state['acts']`, not `state`
    assert shell.run_cell("""
import torch
state = {'acts': [], 'step': 0}
def keeper(store):
    return lambda m, i, o: store.append(o.detach())
lin = torch.nn.Linear(3, 3)
lin.register_forward_hook(keeper(state['acts']))
with torch.no_grad():
    lin(torch.ones(2, 3))""").success
    out = shell.user_ns["state"]["acts"][0]
    _, found = holders_of(shell, [block_of(out)])
    assert found[key(out)] == [
        {
            "kind": "hook",
            "path": "state['acts'][0]",
            "via": "forward hook on lin",
            "reference": {"type": "hook", "name": "state['acts']"},
        }
    ]


@pytest.mark.parametrize(
    "hook_body, path, name",
    [
        ("state['acts'].append(o.detach())", "state['acts'][0]", "state['acts']"),
        ("state['acts'].append((0, o.detach()))", "state['acts'][0][1]", "state['acts']"),
        ("state['by_layer']['lin'] = o.detach()", "state['by_layer']['lin']", "state['by_layer']"),
        ("state['out'] = o.detach()", "state['out']", "state"),
        ("recent.append(o.detach())", "recent[0]", "recent"),
    ],
)
def test_a_hook_naming_a_global_dict_keeps_the_container_it_fills(shell, hook_body, path, name):
    # the hook names only the global `state`: its fix clears the list it appends to, or the dict it stores in
    run_hooked(
        shell, "state = {'acts': [], 'by_layer': {}, 'step': 0}\nrecent = collections.deque(maxlen=4)", hook_body
    )
    out = eval(path, {}, shell.user_ns)
    _, found = holders_of(shell, [block_of(out)])
    assert found[key(out)] == [
        {"kind": "hook", "path": path, "via": "forward hook on lin", "reference": {"type": "hook", "name": name}}
    ]


@pytest.mark.parametrize(
    "before, after, names",
    [
        ("", "state2 = state", ("state['acts']", "state2['acts']")),
        ("", "acts = state['acts']", ("state['acts']", "acts")),
        # the list named first, then put in the dict the hook names: still the hook's under its own name
        ("acts = []", "", ("acts", "state['acts']")),
        ("acts = []", "state2 = state", ("acts", "state['acts']", "state2['acts']")),
    ],
)
def test_other_names_of_the_list_a_hook_fills_in_a_dict_are_the_hooks(shell, before, after, names):
    # a variable would hide the hook's leak; each name is the list the fix clears
    state = f"{before}\nstate = {{'acts': {'acts' if before else '[]'}, 'step': 0}}"
    run_hooked(shell, state, "state['acts'].append(o.detach())", after)
    out = shell.user_ns["state"]["acts"][0]
    _, found = holders_of(shell, [block_of(out)])
    assert found[key(out)] == hook_holders(names)


@pytest.mark.parametrize(
    "setup, hook_body, names",
    [
        # a config dict the hook reads a flag from: its anchors are the user's, not the hook's
        (
            "cfg = {'verbose': True, 'anchors': [torch.ones(3)]}\nanchors = cfg['anchors']",
            "if cfg['verbose']:\n        acts.append(o.detach())",
            ("cfg['anchors']", "anchors"),
        ),
        # `o.data` puts "data" in the hook's co_names: the user's global `data` is not named by the hook at all
        (
            "data = {'train': [torch.ones(3)], 'val': []}\ntrain = data['train']",
            "acts.append(o.data.clone())",
            ("data['train']", "train"),
        ),
        # nor is a list of that name: the batches the user keeps are not what the hook appends to
        ("data = [torch.ones(3)]", "acts.append(o.data.clone())", ("data",)),
        # the hook fills state['acts'] only: the losses the user keeps beside it are the user's own list
        (
            "state = {'acts': [], 'losses': [torch.ones(3)]}\nlosses = state['losses']",
            "state['acts'].append(o.detach())",
            ("state['losses']", "losses"),
        ),
    ],
)
def test_a_list_in_a_dict_a_hook_does_not_fill_is_not_the_hooks(shell, setup, hook_body, names):
    # a hook holder is a leak the leak finder reports ("remove the hook, clear anchors"); a list the hook never
    # appends to is the user's, kept on purpose: a visible owner
    run_hooked(shell, f"acts = []\n{setup}", hook_body)
    t = eval(f"{names[-1]}[0]", {}, shell.user_ns)
    _, found = holders_of(shell, [block_of(t)])
    # (met under the dict the hook names, cfg['anchors'][0], the walk still calls it the hook's: it cannot tell)
    assert [h for h in found[key(t)] if h["path"] == f"{names[-1]}[0]"] == [
        {"kind": "variable", "path": f"{names[-1]}[0]"}
    ]


def test_each_list_of_a_dict_per_layer_hooks_fill_names_its_own_hook(shell):
    # acts[name].append(o) from a hook made per layer: acts['1'] is filled by model.1's hook, not by the first hook
    # that names acts
    assert shell.run_cell("""
import torch
model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))
acts = {}
def make(name):
    def hook(m, i, o):
        acts[name].append(o.detach())
    return hook
for n, m in model.named_children():
    acts[n] = []
    m.register_forward_hook(make(n))
with torch.no_grad():
    model(torch.ones(1, 3))
a1 = acts['1']""").success
    t = shell.user_ns["a1"][0]
    _, found = holders_of(shell, [block_of(t)])
    assert found[key(t)] == hook_holders(("acts['1']", "a1"), "forward hook on model.1")


def test_a_hooks_list_in_a_dict_under_an_output_way_is_the_output_caches(shell):
    # as the hook's own list shown (Out[n][0] is the output cache's): Out[n]['acts'][0] is, and its names are one
    # group, leaving room for `acts`, which a hook holder named Out[n]['acts'], _['acts'] and _n['acts'] crowded out
    run_hooked(shell, "state = {'acts': [], 'step': 0}", "state['acts'].append(o.detach())")
    assert shell.run_cell("state", store_history=True).success
    n = shell.execution_count - 1
    assert shell.run_cell("acts = state['acts']").success
    t = shell.user_ns["acts"][0]
    answer, found = holders_of(shell, [block_of(t)])
    hook = {"via": "forward hook on lin"}
    assert found[key(t)] == [
        {"kind": "hook", "path": "state['acts'][0]", **hook, "reference": {"type": "hook", "name": "state['acts']"}},
        {"kind": "hook", "path": "acts[0]", **hook, "reference": {"type": "hook", "name": "acts"}},
        {
            "kind": "output-cache",
            "path": f"Out[{n}]['acts'][0]",
            "reference": {"type": "output", "name": f"Out[{n}]", "count": n},
        },
        {
            "kind": "output-cache",
            "path": "_['acts'][0]",
            "reference": {"type": "output-name", "name": "_", "displays": 3},
        },
        {
            "kind": "output-cache",
            "path": f"_{n}['acts'][0]",
            "reference": {"type": "output-name", "name": f"_{n}", "count": n},
        },
    ]
    assert answer["blocks"][0]["more"] is False


@pytest.mark.parametrize("shared", ["state", "cfg = {'acts': acts}\nstate = cfg"])
def test_a_hooks_list_in_a_dict_a_failed_cell_kept_is_the_tracebacks(shell, shared):
    # as the hook's own list passed to a failed function: a reference names what a user types, and no one types
    # "sys.last_traceback: fail() local s['acts']"
    hook = "acts.append(o.detach())" if "cfg" in shared else "state['acts'].append(o.detach())"
    run_hooked(shell, f"acts = []\nstate = {{'acts': acts}}\n{shared}", hook)
    assert not shell.run_cell("def fail(s):\n    raise ValueError\nfail(state)").success
    t = shell.user_ns["acts"][0]
    _, found = holders_of(shell, [block_of(t)])
    assert {
        "kind": "traceback",
        "path": "sys.last_traceback: fail() local s['acts'][0]",
        "reference": {"type": "last-traceback"},
    } in found[key(t)]
    assert all(h["kind"] in ("hook", "traceback") for h in found[key(t)])


def test_hooks_naming_one_dict_look_into_it_once_a_walk(shell):
    # a hook per layer naming one shared dict (activations[name] = o): each walk looked at its values once per hook,
    # 2000 hooks x 256 values, and kept each list once per hook (hook_kept), on every holder search
    assert shell.run_cell("""
import torch
shared = {f'k{i}': [] for i in range(300)}
model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(500)])
def keep(m, i, o):
    shared['k1'].append(o)
for m in model:
    m.register_forward_hook(keep)""").success
    walked = holders._Walk(torch, [], 5.0)
    walked.note_hooks(shell.user_ns["model"], "model")
    assert id(shell.user_ns["shared"]["k1"]) in walked.hook_lists
    assert len(walked.hook_kept) <= 2 * len(walked.hook_lists), len(walked.hook_kept)


def test_output_cache_holds_a_deleted_variable(shell):
    run_notebook(shell, "out_cache")
    assert "x" not in shell.user_ns
    cached = shell.user_ns["Out"][2]
    _, found = holders_of(shell, [block_of(cached)])
    paths = [h["path"] for h in found[key(cached)]]
    assert paths[0] == "Out[2]"
    assert all(h["kind"] == "output-cache" for h in found[key(cached)])


def test_last_traceback_holds_a_failed_cells_locals(shell):
    run_notebook(shell, "traceback_pin")
    tb = sys.last_traceback
    while tb.tb_frame.f_code.co_name != "step":
        tb = tb.tb_next
    buf = tb.tb_frame.f_locals["buf"]
    _, found = holders_of(shell, [block_of(buf)])
    assert found[key(buf)] == [
        {"kind": "traceback", "path": "sys.last_traceback: step() local buf", "reference": {"type": "last-traceback"}}
    ]


def test_losses_list_and_expected_state(shell):
    run_notebook(shell, "losses_without_item")
    shell.run_cell("adam = torch.optim.Adam(model.parameters())\nmodel(data).sum().backward()\nadam.step()")
    ns = shell.user_ns
    losses, model, adam = ns["losses"], ns["model"], ns["adam"]
    state = [t for t in adam.state[model.weight].values() if t.dim()]
    blocks = [block_of(t) for t in [*losses[:3], model.weight, model.weight.grad, *state]]
    _, found = holders_of(shell, blocks)
    first = [found[(b["device"], b["address"])][0] for b in blocks]
    assert first[:3] == [{"kind": "variable", "path": f"losses[{i}]"} for i in range(3)]
    assert first[3] == {"kind": "parameter", "path": "model.weight"}
    assert first[4] == {"kind": "gradient", "path": "model.weight.grad"}
    assert [h["kind"] for h in first[5:]] == ["optimizer", "optimizer"]
    assert first[5]["path"] == "adam.state[0]['exp_avg']"


def test_containers_and_unreached_blocks(shell):
    shell.run_cell("import torch\ncache = {'x': [torch.ones(8)]}\nclass Box: pass\nbox = Box(); box.t = torch.zeros(9)")
    x, t = shell.user_ns["cache"]["x"][0], shell.user_ns["box"].t
    nowhere = {"device": -1, "address": 16, "size": 8}
    _, found = holders_of(shell, [block_of(x), block_of(t), nowhere])
    assert found[key(x)] == [{"kind": "variable", "path": "cache['x'][0]"}]
    assert found[key(t)] == [{"kind": "variable", "path": "box.t"}]
    assert found[(-1, 16)] == [{"kind": "native", "path": ""}]
    # a tensor only garbage keeps (a reference cycle not collected yet): found, but reached by no root
    shell.run_cell("loop = [torch.full((7,), 3.0)]\nloop.append(loop)\nlost = loop[0]\ndel loop")
    lost = shell.user_ns.pop("lost")
    _, found = holders_of(shell, [block_of(lost)])
    (holder,) = found[key(lost)]
    assert holder["kind"] == "unreachable" and "(7,) float32" in holder["path"]


def test_a_container_reached_by_two_names_is_named_by_each(shell, tmp_path, monkeypatch):
    # `keep = acts`: `del acts` frees nothing, so each way to the list is a holder, the first found first
    (tmp_path / "mylog2.py").write_text("class Tracker:\n    items = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert shell.run_cell("""
import torch, mylog2
acts = [torch.ones(5)]
keep = acts
by_name = {'a': acts}
acts.append(acts)  # a list that holds itself: acts[1][0] is no other way to it
layers = [torch.nn.Linear(2, 2)]
stack = layers
m = mylog2.Tracker()
mylog2.Tracker.items.append(torch.ones(3))
trackers = [m]  # the class's list is reached from m, but by its own name: no alias of `m` names it
class Node: pass
node = Node()
pending = set()
node.owner = pending
pending.add((node, torch.ones(4)))""").success
    ns = shell.user_ns
    t, weight, tracked = ns["acts"][0], ns["layers"][0].weight, ns["mylog2"].Tracker.items[0]
    queued = next(iter(ns["pending"]))[1]
    _, found = holders_of(shell, [block_of(x) for x in (t, weight, tracked, queued)])
    assert found[key(t)] == [
        {"kind": "variable", "path": "acts[0]"},
        {"kind": "variable", "path": "keep[0]"},
        {"kind": "variable", "path": "by_name['a'][0]"},
    ]
    # a parameter stays a parameter under each name of the list its module is in
    assert found[key(weight)] == [
        {"kind": "parameter", "path": "layers[0].weight"},
        {"kind": "parameter", "path": "stack[0].weight"},
    ]
    assert found[key(tracked)] == [{"kind": "variable", "path": "mylog2.Tracker.items[0]"}]
    # the set is node.owner and pending; the tuple in it leads back to node, which is no third way
    assert found[key(queued)] == [
        {"kind": "variable", "path": "node.owner{...}[1]"},
        {"kind": "variable", "path": "pending{...}[1]"},
    ]


def test_a_container_is_named_by_the_other_ways_to_what_holds_it(shell):
    # `cfg2 = cfg`: the walk goes into neither cfg2 nor cfg['acts'] (each met again), yet `del acts, cfg` frees
    # nothing while cfg2['acts'][0] holds it; a way that first goes through the list itself is a cycle
    assert shell.run_cell("""
import torch
acts = [torch.ones(5)]
cfg = {'acts': acts}
cfg2 = cfg
runs = [cfg]
a = [torch.ones(3)]
b = [a]
a.append(b)
w = torch.ones(2, requires_grad=True)
y = [(w * 2).sin()]  # its graph saves w * 2
state = {'y': y}
def make(s):
    return lambda: s
cb = make(state)""").success
    ns = shell.user_ns
    t, t2, saved = ns["acts"][0], ns["a"][0], ns["y"][0].grad_fn._saved_self
    _, found = holders_of(shell, [block_of(t), block_of(t2), block_of(saved)])
    assert [h["path"] for h in found[key(t)]] == [
        "acts[0]",
        "cfg['acts'][0]",
        "cfg2['acts'][0]",
        "runs[0]['acts'][0]",
    ]
    # a holds b holds a: b[0] is another way to a, a[1][0] is a itself
    assert [h["path"] for h in found[key(t2)]] == ["a[0]", "b[0][0]"]
    # a graph stays a graph under each way, and takes a closure's reference under the closure's way
    assert found[key(saved)] == [
        {"kind": "graph", "path": "y[0]"},
        {"kind": "graph", "path": "state['y'][0]"},
        {
            "kind": "graph",
            "path": "cb: closure variable s['y'][0]",
            "reference": {"type": "closure", "name": "cb", "place": "s['y'][0]"},
        },
    ]


def test_a_way_that_starts_inside_a_cycle_names_its_own_root(shell):
    # i2['x'] is a way to x through i2 alone: that x['r'][1]['x'] was met inside x['r'] does not make it a cycle
    assert shell.run_cell("import torch\nx = {}\nx['r'] = [torch.ones(3), {'x': x}]\ni2 = x['r'][1]").success
    t = shell.user_ns["x"]["r"][0]
    _, found = holders_of(shell, [block_of(t)])
    assert [h["path"] for h in found[key(t)]] == ["x['r'][0]", "i2['x']['r'][0]"]


def test_the_ways_to_a_container_do_not_depend_on_which_was_worked_out_first(shell):
    # x['a'] holds x: its ways, first needed while x's were worked out, must still include those through x
    assert shell.run_cell("import torch\nx = {}\nx['a'] = [torch.ones(3), x]\nx['b'] = x['a']\nx2 = x").success
    t = shell.user_ns["x"]["a"][0]
    answer, found = holders_of(shell, [block_of(t)])
    assert [h["path"] for h in found[key(t)]] == ["x['a'][0]", "x2['a'][0]", "x2['b'][0]", "x['b'][0]"]
    assert answer["blocks"][0]["more"] is False


@pytest.mark.parametrize(
    "cell, tensor, paths",
    [
        # y keeps t after `del x, x2`: over the limits it comes before x2's second way
        (
            "x = {}\ny = [torch.ones(3)]\nx['a'] = y\nx['b'] = y\nx2 = x",
            "y[0]",
            ["x['a'][0]", "x2['a'][0]", "y[0]", "x2['b'][0]"],
        ),
        # each record keeps the one before: best comes before the chain's ways back from history
        (
            "history = []\nfor i in range(20):\n"
            "    history.append({'loss': torch.ones(1), 'prev': history[-1] if history else None})\n"
            "best = history[0]",
            "best['loss']",
            [
                "history[0]['loss']",
                "best['loss']",
                "history[1]['prev']['loss']",
                "history[2]['prev']['prev']['loss']",
            ],
        ),
    ],
)
def test_over_the_limits_a_root_not_named_yet_comes_first(shell, cell, tensor, paths):
    assert shell.run_cell("import torch\n" + cell).success
    t = eval(tensor, shell.user_ns)
    answer, found = holders_of(shell, [block_of(t)])
    assert [h["path"] for h in found[key(t)]] == paths
    assert answer["blocks"][0]["more"] is True


def test_a_long_chain_of_ways_is_named_within_its_hops(shell):
    # each record keeps the one before: the ways back go at most MAX_HOPS containers deep, not once a record
    assert shell.run_cell(
        "import torch\nhistory = []\nfor i in range(1500):\n"
        "    history.append({'loss': torch.ones(1), 'prev': history[-1] if history else None})"
    ).success
    t = shell.user_ns["history"][0]["loss"]
    answer, found = holders_of(shell, [block_of(t)])
    assert "error" not in answer and not answer["partial"]
    assert [h["path"] for h in found[key(t)]][:2] == ["history[0]['loss']", "history[1]['prev']['loss']"]


def test_what_a_hook_object_keeps_is_the_outputs_under_an_outputs_way(shell):
    # a hook object's list is hidden under a variable (no name shows it) and the output cache's under Out[n],
    # as the walk names it; a hook on the module itself is named by the module's path
    assert shell.run_cell("""
import torch
class Rec:
    def __init__(self): self.outs = []
    def hook(self, m, i, o): self.outs.append(o.detach() + 1)
rec = Rec()
cfg = {'model': torch.nn.Linear(2, 2)}
cfg['model'].register_forward_hook(rec.hook)
y = cfg['model'](torch.ones(1, 2))""").success
    assert shell.run_cell("cfg", store_history=True).success
    count = shell.execution_count - 1
    t = shell.user_ns["rec"].outs[0]
    _, found = holders_of(shell, [block_of(t)])
    place = "['model']: forward hook hook.__self__.outs[0]"
    assert found[key(t)] == [
        {"kind": "variable", "path": "rec.outs[0]"},
        {"kind": "hidden", "path": "cfg" + place},
        {
            "kind": "output-cache",
            "path": f"Out[{count}]" + place,
            "reference": {"type": "output", "name": f"Out[{count}]", "count": count},
        },
        {"kind": "output-cache", "path": "_" + place, "reference": {"type": "output-name", "name": "_", "displays": 3}},
        {
            "kind": "output-cache",
            "path": f"_{count}" + place,
            "reference": {"type": "output-name", "name": f"_{count}", "count": count},
        },
    ]


@pytest.mark.parametrize(
    "names, others",
    [
        ("keep = acts", ("keep",)),
        # through a dict with two names: each way to it gets a reference of its own, made where it is met
        ("cfg = {'acts': acts}\ncfg2 = cfg", ("cfg['acts']", "cfg2['acts']")),
    ],
)
def test_a_name_of_the_list_a_hook_fills_is_the_hooks_holder(shell, names, others):
    # `keep = acts` where a hook appends to acts: keep is that hook's list too (a variable would hide the leak)
    assert shell.run_cell(
        """
import torch
lin = torch.nn.Linear(2, 2)
acts = []
lin.register_forward_hook(lambda m, i, o: acts.append(o.detach()))
lin(torch.ones(1, 2))
"""
        + names
    ).success
    out = shell.user_ns["acts"][0]
    _, found = holders_of(shell, [block_of(out)])
    assert found[key(out)] == hook_holders(("acts", *others))


def test_a_holders_reference_names_the_way_to_it(shell):
    # Under another path a holder takes that path's reference, or is left out where its reference was made inside
    # the container (a kept exception's, a closure's): a reference always names the start of its holder's path, and
    # a place its end, which is what the frontend reads.
    assert shell.run_cell(
        """
import torch
def fail():
    buf = torch.ones(11)
    raise ValueError('x')
try:
    fail()
except ValueError as e:
    errs = [e]
keep_errs = errs
last = errs[0]
def make(items):
    return lambda: items
w = torch.ones(3, requires_grad=True)
outs = [(w * 2).sin()]  # its graph saves w * 2, which nothing else keeps
cb, cb2 = make(outs), make(outs)
del outs
shown = [w * 3]
more, more2, more3 = shown, shown, shown""",
        store_history=True,
    ).success
    assert shell.run_cell("shown", store_history=True).success
    ns = shell.user_ns
    buf = _local(ns["errs"][0].__traceback__, "buf")
    saved = ns["cb"]()[0].grad_fn._saved_self
    _, found = holders_of(shell, [block_of(buf), block_of(ns["cb"]()[0]), block_of(saved), block_of(ns["shown"][0])])
    holders = [h for hs in found.values() for h in hs]
    assert {
        "kind": "traceback",
        "path": "errs[0].__traceback__: fail() local buf",
        "reference": {"type": "exception", "name": "errs[0]"},
    } in holders
    for h in holders:
        reference = h.get("reference", {})
        if reference.get("type") in ("exception", "closure", "output", "output-name", "default-argument"):
            assert h["path"].startswith(reference["name"]), h
        if "place" in reference:
            assert h["path"].endswith(" " + reference["place"]), h
    graphs = [(h["path"], h["reference"]["name"]) for h in found[key(saved)] if h["kind"] == "graph"]
    assert graphs == [("cb: closure variable items[0]", "cb"), ("cb2: closure variable items[0]", "cb2")]
    paths = {h["path"] for h in holders}
    count = shell.execution_count - 1
    assert {"cb: closure variable items[0]", "cb2: closure variable items[0]", f"Out[{count}][0]"} <= paths
    # over the limit of groups, the output history's names (one group) are listed before other variables
    assert [h["path"] for h in found[key(ns["shown"][0])]] == [
        "shown[0]",
        f"Out[{count}][0]",
        "_[0]",
        f"_{count}[0]",
        "more[0]",
        "more2[0]",
    ]


def test_a_container_shown_as_output_is_held_by_the_output_cache_too(shell):
    # the output cache keeps the list once the cell shows it: `del acts` frees nothing while Out[n] holds it.
    # Out[n], _n and _ are the output history's names, one group: before, they took three of a block's four, and
    # `keep[0]`, the name that keeps the list after `del acts` and the output's names, was cut to "and more"
    shell.run_cell("import torch\nacts = [torch.ones(6)]\nkeep = acts\nby_name = {'a': acts}", store_history=True)
    shell.run_cell("acts", store_history=True)
    count = shell.execution_count - 1
    t = shell.user_ns["acts"][0]
    answer, found = holders_of(shell, [block_of(t)])
    assert [h["path"] for h in found[key(t)]] == [
        "acts[0]",
        f"Out[{count}][0]",
        "_[0]",
        f"_{count}[0]",
        "keep[0]",
        "by_name['a'][0]",
    ]
    assert answer["blocks"][0]["more"] is False
    assert {
        "kind": "output-cache",
        "path": f"Out[{count}][0]",
        "reference": {"type": "output", "name": f"Out[{count}]", "count": count},
    } in found[key(t)]


HIDDEN_CELLS = [
    "import collections, dataclasses, functools, torch",
    """
def score(x, _seen=[]):
    _seen.append(x * 2)
    return len(_seen)
n = score(torch.ones(3))""",
    "def opts(*, keep=torch.ones(4)):\n    return keep",
    """
def make():
    buf = torch.ones(5)
    return lambda: buf.sum()
callbacks = [make()]""",
    "scale = functools.partial(torch.mul, other=torch.ones(6))",
    """
@functools.lru_cache(maxsize=8)
def standardize(x):
    return x * 3
arg = torch.ones(7)
n = standardize(arg).numel()""",
    """
def batches():
    batch = torch.ones(8)
    yield batch
    yield batch
train_iter = batches()
n = next(train_iter).numel()""",
    "recent = collections.deque([torch.ones(9)], maxlen=2)",
    """
def step():
    buf = torch.ones(10)
    raise ValueError('boom')
try:
    step()
except ValueError as e:
    err = e""",
    """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.cache = {}
net = Net()
net.cache[0] = torch.ones(11)""",
    """
@dataclasses.dataclass(slots=True)
class Batch:
    x: object
held = Batch(torch.ones(12))""",
    """
shared = [torch.ones(13)]
def make2(items):
    return lambda: items
cb = make2(shared)""",
]


def test_holders_no_name_shows_are_named_by_the_way_to_them(shell):
    # a default argument, a closure, a partial's arguments, an lru_cache, a paused generator: kind "hidden"; a kept
    # exception's traceback: "traceback"; a deque, a module's own attribute, a slots object: plain variables
    for cell in HIDDEN_CELLS:
        assert shell.run_cell(cell).success, cell
    ns = shell.user_ns
    cached = ns["standardize"](ns["arg"])  # the cached result (a hit: the cache does not change)
    tensors = {
        "default": ns["score"].__defaults__[0][0],
        "kwdefault": ns["opts"].__kwdefaults__["keep"],
        "closure": ns["callbacks"][0].__closure__[0].cell_contents,
        "partial": ns["scale"].keywords["other"],
        "lru result": cached,
        "generator": ns["train_iter"].gi_frame.f_locals["batch"],
        "deque": ns["recent"][0],
        "exception": next(
            tb.tb_frame.f_locals["buf"] for tb in _frames(ns["err"].__traceback__) if "buf" in tb.tb_frame.f_locals
        ),
        "module attribute": ns["net"].cache[0],
        "weight": ns["net"].lin.weight,
        "slots": ns["held"].x,
        "shared": ns["shared"][0],
    }
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])
    named = {name: found[key(t)] for name, t in tensors.items()}

    # each says what keeps it in its reference (the owner, and a closure's or a generator's variable), which the
    # frontend reads instead of the path
    def hidden(path, type_, owner, **place):
        return [{"kind": "hidden", "path": path, "reference": {"type": type_, "name": owner, **place}}]

    assert named["default"] == hidden("score.__defaults__[0][0]", "default-argument", "score")
    assert named["kwdefault"] == hidden("opts.__kwdefaults__['keep']", "default-argument", "opts")
    assert named["closure"] == hidden("callbacks[0]: closure variable buf", "closure", "callbacks[0]", place="buf")
    assert named["partial"] == hidden("scale.keywords['other']", "partial", "scale")
    assert named["lru result"] == hidden("standardize: lru_cache entry", "lru-cache", "standardize")
    assert named["generator"] == hidden(
        "train_iter: generator frame local batch", "generator", "train_iter", place="batch"
    )
    assert named["deque"] == [{"kind": "variable", "path": "recent[0]"}]
    assert named["exception"] == [
        {
            "kind": "traceback",
            "path": "err.__traceback__: step() local buf",
            "reference": {"type": "exception", "name": "err"},
        }
    ]
    assert named["module attribute"] == [{"kind": "variable", "path": "net.cache[0]"}]
    assert named["weight"] == [{"kind": "parameter", "path": "net.lin.weight"}]
    assert named["slots"] == [{"kind": "variable", "path": "held.x"}]
    # what a name also reaches is named by it first, then by the closure that keeps the same list: `del shared`
    # alone frees nothing
    assert named["shared"] == [
        {"kind": "variable", "path": "shared[0]"},
        *hidden("cb: closure variable items[0]", "closure", "cb", place="items[0]"),
    ]
    # the cache's key keeps the argument too: found under its name and through the cache
    _, found = holders_of(shell, [block_of(ns["arg"])])
    assert found[key(ns["arg"])] == [
        {"kind": "variable", "path": "arg"},
        {
            "kind": "hidden",
            "path": "standardize: lru_cache entry[0]",
            "reference": {"type": "lru-cache", "name": "standardize"},
        },
    ]


def test_output_history_names_are_holders(shell):
    shell.run_cell("import torch", store_history=True)
    shell.run_cell("torch.ones(14)", store_history=True)
    count = shell.execution_count - 1
    shell.run_cell(f"del Out[{count}]", store_history=True)
    t = shell.user_ns[f"_{count}"]
    _, found = holders_of(shell, [block_of(t)])
    # the names that still hold it, each with what a fix needs: `_N` can be deleted, `_` goes after 3 more results
    assert found[key(t)] == [
        {"kind": "output-cache", "path": "_", "reference": {"type": "output-name", "name": "_", "displays": 3}},
        {
            "kind": "output-cache",
            "path": f"_{count}",
            "reference": {"type": "output-name", "name": f"_{count}", "count": count},
        },
    ]
    shown = shell.user_ns["_"]
    shell.run_cell("_ * 1", store_history=True)  # Out[n] as well, and `_` moves on to `__`
    _, found = holders_of(shell, [block_of(shown)])
    assert [h["reference"] for h in found[key(shown)]] == [
        {"type": "output-name", "name": "__", "displays": 2},
        {"type": "output-name", "name": f"_{count}", "count": count},
    ]


def test_a_cached_functions_own_default_is_its_own_reference(shell):
    # what the wrapped function keeps is no cache entry: `cache_clear()` would not free it
    assert shell.run_cell("""
import functools, torch
@functools.lru_cache(maxsize=4)
def norm(x, _buf=torch.ones(17)):
    return x""").success
    buf = shell.user_ns["norm"].__wrapped__.__defaults__[0]
    _, found = holders_of(shell, [block_of(buf)])
    assert found[key(buf)] == [
        {
            "kind": "hidden",
            "path": "norm.__wrapped__.__defaults__[0]",
            "reference": {"type": "default-argument", "name": "norm.__wrapped__"},
        }
    ]


def test_a_name_of_other_digits_is_a_variable_not_an_output(shell):
    # `_²` passes str.isdigit() but is no number IPython's displayhook sets (nor one int() reads)
    assert shell.run_cell("import torch\nglobals()['_²'] = torch.ones(18)").success
    t = shell.user_ns["_²"]
    _, found = holders_of(shell, [block_of(t)])
    assert found[key(t)] == [{"kind": "variable", "path": "_²"}]


def test_a_closure_variables_place_and_a_kept_exceptions_graph(shell, validate):
    # the place is the variable with the steps into it; a graph reached through a kept exception says so
    assert shell.run_cell("""
import torch
def make():
    kept = {'h': [torch.ones(15)]}
    return lambda: kept
cb = make()
w = torch.ones(16, requires_grad=True)
def step():
    h = (w * 2).sin()
    raise ValueError('boom')
try:
    step()
except ValueError as e:
    err = e""").success
    ns = shell.user_ns
    item = ns["cb"].__closure__[0].cell_contents["h"][0]
    tb = ns["err"].__traceback__.tb_next
    saved = tb.tb_frame.f_locals["h"].grad_fn._saved_self  # sin saved its input, w * 2
    answer, found = holders_of(shell, [block_of(item), block_of(saved)])
    # the schema the frontend holds answers to (CPU tensors stand in here, on device -1)
    validate([dict(b, device=0) for b in answer["blocks"]], "holderBlocks")
    assert found[key(item)] == [
        {
            "kind": "hidden",
            "path": "cb: closure variable kept['h'][0]",
            "reference": {"type": "closure", "name": "cb", "place": "kept['h'][0]"},
        }
    ]
    assert {
        "kind": "graph",
        "path": "err.__traceback__: step() local h",
        "reference": {"type": "exception", "name": "err"},
    } in found[key(saved)]


def _frames(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


SCENARIOS = [
    p
    for p in sorted(NOTEBOOKS.glob("*.ipynb"))
    if json.loads(p.read_text())["metadata"]["cuda_memdiff"]["expected"].get("holder")
]


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="there the notebooks put their tensors on the GPU: test_live_leaks.py asks it"
)
@pytest.mark.parametrize("notebook", SCENARIOS, ids=lambda p: p.stem)
def test_each_scenario_names_its_holder_after_the_cell_to_look_at(shell, notebook):
    # What test_live_leaks.py asks on the GPU, on CPU tensors: after the cell the finder should point at, some
    # block is held by what the notebook's metadata says keeps the leak.
    nb = json.loads(notebook.read_text())
    expected = nb["metadata"]["cuda_memdiff"]["expected"]
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for cell in cells[: expected["top_leak_cell"] + 1]:
        shell.run_cell("".join(cell["source"]), store_history=True)
    storages = {}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and not obj.is_cuda and obj.untyped_storage().data_ptr():
            storages[key(obj)] = block_of(obj)
    _, found = holders_of(shell, list(storages.values()))
    paths = sorted({h["path"] for holders in found.values() for h in holders})
    assert any(names_holder(p, expected["holder"]) for p in paths), paths


def test_keeps_no_references_and_respects_its_budget(shell):
    shell.run_cell("import torch\nbig = [torch.randn(4) for _ in range(2000)]")
    probe = weakref.ref(shell.user_ns["big"][0])
    blocks = [block_of(t) for t in shell.user_ns["big"]]
    answer, _ = holders_of(shell, blocks)
    assert not answer["partial"] and len(answer["blocks"]) == 2000
    partial, _ = holders_of(shell, blocks, budget_s=0.0)
    assert partial["partial"]
    # a partial answer never calls a block native: it did not look everywhere
    assert all(h["kind"] != "native" for b in partial["blocks"] for h in b["holders"])
    del blocks
    shell.run_cell("del big")
    gc.collect()
    assert probe() is None


def test_a_paused_generator_keeps_no_old_local_after_the_search(shell):
    # Before Python 3.13 a frame's f_locals is a dict the frame caches: read by the walk, it kept the batch a
    # paused generator later let go of, so the next snapshot still counted memory the user's code had freed.
    # (A generator whose code keeps locals() for itself keeps that dict, which the walk must leave whole.)
    shell.run_cell(
        """
import torch
def batches():
    batch = torch.ones(4)
    yield batch
    batch = None
    yield 0
def keeps_locals():
    own = torch.ones(5)
    env = locals()
    yield env
    yield env['own']
def made_by_exec():
    exec("kept = torch.ones(3)")  # before 3.13, the frame's cached dict is the only home of such a name
    locals()["cfg"] = {"lr": 0.1}
    yield 1
    yield eval("kept"), locals()["cfg"]
loader = batches()
first = next(loader)
watching = keeps_locals()
env = next(watching)
odd = made_by_exec()
next(odd)"""
    )
    old = weakref.ref(shell.user_ns["first"])
    owns = shell.user_ns["env"]["own"]
    answer, found = holders_of(shell, [block_of(shell.user_ns["first"]), block_of(owns)])
    assert {"kind": "variable", "path": "first"} in found[key(shell.user_ns["first"])]
    assert any(h.get("reference", {}).get("type") == "generator" for h in found[key(shell.user_ns["first"])])
    del answer, found
    assert shell.run_cell("del first\nnext(loader)").success
    gc.collect()
    assert old() is None, "the walk kept the generator's old local alive"
    # the user's own locals() dict is as the generator left it, and names only the cache held are still there
    assert shell.run_cell("assert next(watching) is env['own']").success
    assert shell.run_cell("kept, cfg = next(odd)\nassert kept.numel() == 3 and cfg == {'lr': 0.1}").success


def test_a_class_attribute_is_named_where_its_instances_reach_it(shell, tmp_path, monkeypatch):
    # ``records = []`` in a class body is one list every instance appends to: the class keeps its tensors, where
    # no instance's own attributes show them. A variable of the class, named as the user types it (``Logger``,
    # ``mylog.Kept``, a module of theirs), whatever way it was reached (an instance in ``Out``: deleting that
    # would free nothing), else by the way (``type(made)`` for a class made in a function); a library's class is
    # not walked.
    (tmp_path / "mylog.py").write_text("class Kept:\n    items = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(torch.nn.Linear, "stash", [torch.ones(4)], raising=False)  # a library's class: not walked
    assert shell.run_cell(
        """
import collections, torch, mylog
class Logger:
    records = []
    def log(self, t):
        self.records.append(t)
logger = Logger()
for i in range(3):
    logger.log(torch.ones(7) * i)
def factory():
    class Made:
        kept = [torch.ones(6)]
    return Made()
made = factory()
mylog.Kept.items.append(torch.ones(5))
from torch.nn import Linear"""
    ).success
    assert shell.run_cell("mylog.Kept()", store_history=True).success  # an instance held by Out only
    ns = shell.user_ns
    tensors = {
        "class": ns["Logger"].records[1],
        "instance": type(ns["made"]).kept[0],
        "module": ns["mylog"].Kept.items[0],
        "library": ns["Linear"].stash[0],
    }
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])
    named = {name: found[key(t)] for name, t in tensors.items()}
    assert named == {
        "class": [{"kind": "variable", "path": "Logger.records[1]"}],
        "instance": [{"kind": "variable", "path": "type(made).kept[0]"}],
        "module": [{"kind": "variable", "path": "mylog.Kept.items[0]"}],
        "library": [{"kind": "unreachable", "path": "a (4,) float32 tensor"}],
    }


def test_requests_over_the_channel(shell):
    install(shell)  # CPU torch: no capture of cells, but requests are answered
    channel = attach(shell)
    shell.run_cell("import torch\nw = torch.ones(5)")
    b = block_of(shell.user_ns["w"])
    ok = channel.request({"type": "holders-request", "id": 7, "blocks": [[-1, b["address"], b["size"]]]})
    assert ok["id"] == 7 and ok["v"] == protocol.PROTOCOL_VERSION and not ok["partial"]
    assert ok["blocks"] == [{"device": -1, "address": b["address"], "holders": [{"kind": "variable", "path": "w"}]}]
    bad = channel.request({"type": "holders-request", "id": 8, "blocks": [["x"]]})
    assert bad["id"] == 8 and "ValueError" in bad["error"] and bad["partial"]
    assert "unknown request" in channel.request("nonsense")["error"]


def test_every_saved_tensor_of_the_demo_is_found_through_a_graph(shell):
    # The demo keeps each batch's graph through preds; autograd's own record of
    # what it saved is the oracle. Graph nodes are made afresh on each access,
    # so a walk that forgets them could skip nodes whose ids were reused.
    saved = []
    nb = json.loads((ROOT / "demo" / "gpu_memory_demo.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(block_of(t)) or t, lambda t: t):
        for source in code[:3]:
            shell.run_cell(source, store_history=True)
        shell.run_cell("more = [model(b) for b in batches for _ in range(6)]")
    blocks = list({(b["device"], b["address"]): b for b in saved}.values())
    _, found = holders_of(shell, blocks)
    missing = [
        b for b in blocks if not any(h["kind"] in ("graph", "variable") for h in found[(b["device"], b["address"])])
    ]
    assert not missing and len(blocks) > 100


def test_a_block_lists_every_graph_that_saved_it_as_it_lists_the_others(shell, validate):
    # Before: model.2.weight, saved by each of the eight graphs of preds, listed preds[0] to preds[2] (four holders
    # at most), and the finder said "autograd graph of preds[0:3]" where other blocks said preds[0:8].
    nb = json.loads((ROOT / "demo" / "gpu_memory_demo.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    for source in code[:3]:
        shell.run_cell(source, store_history=True)
    weight = shell.user_ns["model"][2].weight
    answer, found = holders_of(shell, [block_of(weight)])
    graphs = [h["path"] for h in found[key(weight)] if h["kind"] == "graph"]
    assert graphs == [f"preds[{k}]" for k in range(8)]
    assert answer["blocks"][0]["more"] is False
    # CPU storages stand in as device -1, which no CUDA answer has: as device 0, the row is what the schema reads
    rows = [{**row, "device": 0} for row in answer["blocks"]]
    validate({"v": protocol.PROTOCOL_VERSION, "type": "holders", "id": 1, **answer, "blocks": rows})


def test_a_block_says_when_it_lists_fewer_holders_than_it_found(shell):
    shell.run_cell("import torch\nw = torch.ones(4)\nmany = [w] * 100\na, b, c, d = w, w, w, w\nfew = [w] * 2")
    w = shell.user_ns["w"]
    answer, found = holders_of(shell, [block_of(w)])
    listed = found[key(w)]
    row = answer["blocks"][0]
    # at most MAX_HOLDERS groups of holders, each with at most MAX_SIBLINGS paths; the rest is said, not listed
    groups = {h["path"].split("[")[0] for h in listed}
    assert len(groups) == holders.MAX_HOLDERS
    assert max(sum(h["path"].startswith(g + "[") for h in listed) for g in groups) <= holders.MAX_SIBLINGS
    assert row["more"] is True
    shell.run_cell("del many, a, b, c, d, few")
    answer, found = holders_of(shell, [block_of(w)])
    assert [h["path"] for h in found[key(w)]] == ["w"] and "more" not in answer["blocks"][0]


def _odd_tensors(ns):
    """ODD_OBJECTS' tensors by the path that names them, read past their classes' code."""
    with torch._C.DisableTorchFunctionSubclass():
        tensors = {
            "logged": ns["logged"],
            "lazy.t": ns["lazy"].t,
            "traced.t": object.__getattribute__(ns["traced"], "t"),
            "hook.outs[0]": ns["hook"].__dict__["outs"][0],
            "reg['a']": dict.__getitem__(ns["reg"], "a"),
            "batches[0]": list.__getitem__(ns["batches"], 0),
            "mixed[40]": ns["mixed"][40],
            "keyed[<Key object at 0x...>]": next(iter(dict.values(ns["keyed"]))),
            "posed": ns["posed"],
            "posed_graded": ns["posed_graded"],
            "posed_list[0]": ns["posed_list"][0],
            "posed_lin.weight": ns["posed_lin"].weight,
            "posed_lin.weight.grad": torch._C.TensorBase.grad.__get__(ns["posed_lin"].weight),
            "posed_opt.state[0]['exp_avg']": ns["posed_opt"].state[ns["posed_lin"].weight]["exp_avg"],
        }
    return tensors


def test_the_search_runs_none_of_the_users_code(shell):
    # Before: a tensor subclass's __torch_function__ ran at each tensor read, a class's __getattr__ at each slot
    # and __dict__ read, __getattribute__ at each isinstance, a dict subclass's items, a list subclass's __iter__,
    # and a tensor subclass's own grad, is_leaf, data_ptr or __getattribute__ at each tensor read.
    assert shell.run_cell(ODD_OBJECTS).success
    ns = shell.user_ns
    with torch._C.DisableTorchFunctionSubclass():
        blocks = {path: block_of(t) for path, t in _odd_tensors(ns).items()}
    ns["CALLS"].clear()
    _, found = holders_of(shell, list(blocks.values()))
    assert ns["CALLS"] == []
    named = {path: found[(b["device"], b["address"])][0]["path"] for path, b in blocks.items()}
    named["keyed[<Key object at 0x...>]"] = re.sub("0x[0-9a-f]+", "0x...", named["keyed[<Key object at 0x...>]"])
    assert named == {path: path for path in blocks}


def test_a_torch_function_mode_left_on_sees_none_of_the_reads(shell):
    # Before: the tensor reads of the search and of the pass after every cell went through a TorchFunctionMode the
    # user left on (torch.set_default_device enters one), which ran its code and made each read 16 times slower.
    assert shell.run_cell("""
import torch
from torch.overrides import TorchFunctionMode
SEEN = []
class Logging(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        SEEN.append(getattr(func, '__name__', str(func)))
        return func(*args, **(kwargs or {}))
kept = [torch.ones(48, requires_grad=True) * 2]
mode = Logging()
mode.__enter__()""").success
    ns = shell.user_ns
    try:
        blocks = [block_of(ns["kept"][0])]
        ns["SEEN"].clear()
        _, found = holders_of(shell, blocks)
        RolePass().run(shell, {})
        assert ns["SEEN"] == []
        assert found[key(ns["kept"][0])] == [{"kind": "variable", "path": "kept[0]"}]
    finally:
        ns["mode"].__exit__(None, None, None)
        shell.run_cell("del mode, kept")


def test_a_tensor_that_refuses_to_be_read_leaves_the_other_holders_named(strict):
    # Before: a subclass whose __torch_function__ raises stopped the whole search at its first tensor read.
    shell = strict
    assert shell.run_cell("plain = torch.ones(60)").success
    ns = shell.user_ns
    with torch._C.DisableTorchFunctionSubclass():
        plain, refusing = block_of(ns["plain"]), block_of(ns["strict"])
    answer, found = holders_of(shell, [plain, refusing])
    assert not answer["partial"]
    assert found[(-1, plain["address"])] == [{"kind": "variable", "path": "plain"}]
    assert found[(-1, refusing["address"])] == [{"kind": "variable", "path": "strict"}]


def test_a_kept_exception_keeps_its_arguments_attributes_and_the_exceptions_it_chains(shell):
    # Before: only the exception's own traceback was walked; what it was raised with, what the user's error class
    # stored on it, and the error it was raised from (with that one's frames) were "unreachable".
    assert shell.run_cell("""
import torch
class BadBatch(Exception):
    def __init__(self, batch):
        super().__init__('bad')
        self.batch = batch
def inner():
    buf = torch.ones(47)
    raise KeyError('k')
def outer():
    try:
        inner()
    except KeyError as e:
        raise RuntimeError('wrapped') from e
errors = []
for fail in (lambda: ValueError('bad batch', torch.ones(45)), lambda: BadBatch(torch.ones(46))):
    try:
        raise fail()
    except Exception as e:
        errors.append(e)
try:
    outer()
except RuntimeError as e:
    err = e""").success
    ns = shell.user_ns
    tensors = {
        "args": ns["errors"][0].args[1],
        "attribute": ns["errors"][1].batch,
        "cause": _local(ns["err"].__cause__.__traceback__, "buf"),
    }
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])

    def kept(path, name):
        return [{"kind": "traceback", "path": path, "reference": {"type": "exception", "name": name}}]

    assert {name: found[key(t)] for name, t in tensors.items()} == {
        "args": kept("errors[0].args[1]", "errors[0]"),
        "attribute": kept("errors[1].batch", "errors[1]"),
        "cause": kept("err.__cause__.__traceback__: inner() local buf", "err"),
    }


@pytest.mark.parametrize("last_exc", [False, True], ids=["python-3.11", "last_exc-is-last_value"])
def test_the_last_error_keeps_its_arguments_and_the_error_it_was_raised_during(shell, monkeypatch, last_exc):
    # Before: the walk started at sys.last_traceback alone, so what the failed cell's error itself keeps was missed.
    # From Python 3.12 sys.last_exc is the same error as sys.last_value: named once.
    assert shell.run_cell("""
import torch
def inner():
    buf = torch.ones(48)
    raise KeyError('k')
def outer():
    try:
        inner()
    except KeyError:
        raise RuntimeError('wrapped', torch.ones(49))""").success
    assert not shell.run_cell("outer()").success
    error = sys.last_value
    if last_exc:
        monkeypatch.setattr(sys, "last_exc", error, raising=False)
    tensors = {"args": error.args[1], "context": _local(error.__context__.__traceback__, "buf")}
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])
    last = {"type": "last-traceback"}
    assert {name: found[key(t)] for name, t in tensors.items()} == {
        "args": [{"kind": "traceback", "path": "sys.last_value.args[1]", "reference": last}],
        "context": [
            {
                "kind": "traceback",
                "path": "sys.last_value.__context__.__traceback__: inner() local buf",
                "reference": last,
            }
        ],
    }


def _local(tb, name):
    """A local of the first frame in a traceback that has one by that name."""
    while name not in tb.tb_frame.f_locals:
        tb = tb.tb_next
    return tb.tb_frame.f_locals[name]


def test_what_a_torch_module_keeps_beyond_its_parameters_is_named(shell):
    # Before: attributes set on torch's own modules (by a hook, or by hand) and what a hook function keeps in its
    # closure or defaults, reached through the module's hook dicts alone, were "unreachable".
    assert shell.run_cell("""
import torch
def keep_output(m, i, o):
    m.last_out = o.detach()
def attach(m):
    outs = []
    m.register_forward_hook(lambda mod, i, o: outs.append(o.detach()))
def scaled(m, i, o, scale=torch.full((3,), 2.0)):
    return o * scale
model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
model[0].register_forward_hook(keep_output)
attach(model[1])
model[1].register_forward_hook(scaled)
model(torch.ones(2, 3))
lin = torch.nn.Linear(3, 3)
lin.saved_input = torch.ones(5, 3)
del keep_output, scaled""").success
    ns = shell.user_ns
    model = ns["model"]
    hooks = list(model[1]._forward_hooks.values())
    tensors = {
        "set by a hook": model[0].last_out,
        "set by hand": ns["lin"].saved_input,
        "closure": hooks[0].__closure__[0].cell_contents[0],
        "default": hooks[1].__defaults__[0],
    }
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])
    closure, default = "model.1: forward hook <lambda>", "model.1: forward hook scaled"
    assert {name: found[key(t)] for name, t in tensors.items()} == {
        "set by a hook": [{"kind": "variable", "path": "model.0.last_out"}],
        "set by hand": [{"kind": "variable", "path": "lin.saved_input"}],
        "closure": [
            {
                "kind": "hidden",
                "path": f"{closure}: closure variable outs[0]",
                "reference": {"type": "closure", "name": closure, "place": "outs[0]"},
            }
        ],
        "default": [
            {
                "kind": "hidden",
                "path": f"{default}.__defaults__[0]",
                "reference": {"type": "default-argument", "name": default},
            }
        ],
    }


def test_what_a_function_stores_on_itself_and_a_kept_methods_object_are_named(shell):
    # Before: both were "unreachable": a function's __dict__ and a bound method's __self__ were not walked.
    assert shell.run_cell("""
import torch
def forward(x):
    forward.last = x * 2
    return x
forward(torch.ones(27))
class Trainer:
    def __init__(self):
        self.buffer = torch.ones(26)
    def step(self):
        return self.buffer.sum()
callbacks = [Trainer().step]""").success
    ns = shell.user_ns
    last, buffer = ns["forward"].last, ns["callbacks"][0].__self__.buffer
    _, found = holders_of(shell, [block_of(last), block_of(buffer)])
    assert found[key(last)] == [{"kind": "variable", "path": "forward.last"}]
    assert found[key(buffer)] == [{"kind": "variable", "path": "callbacks[0].__self__.buffer"}]


def test_an_object_first_met_at_the_depth_limit_is_walked_when_met_nearer_a_root(shell):
    # Before: met first four containers down, inside `deep`, the object was marked seen and its list was cut
    # off by the depth limit; met again as the global `holder`, it was skipped, and its tensor was "unreachable".
    assert shell.run_cell("""
import torch
class Holder:
    pass
deep = {'a': {'b': {'c': {'d': Holder()}}}}
holder = deep['a']['b']['c']['d']
holder.items = [torch.ones(41)]
""").success
    t = shell.user_ns["holder"].items[0]
    _, found = holders_of(shell, [block_of(t)])
    assert [h["path"] for h in found[key(t)]] == ["holder.items[0]"]


def test_what_a_hook_method_or_hook_object_keeps_is_named_by_the_module(shell):
    # Before: only functions and partials in a module's hook dicts were walked; a bound method registered by an
    # object nobody else keeps (the usual feature extractor) or a callable object kept its outputs "unreachable".
    assert shell.run_cell("""
import torch
class Extractor:
    def __init__(self, m):
        self.feats = []
        m.register_forward_hook(self.save)
    def save(self, m, i, o):
        self.feats.append(o.detach())
class Recorder:
    def __init__(self):
        self.outputs = []
    def __call__(self, m, i, o):
        self.outputs.append(o.detach())
    def __getattr__(self, name):
        raise AssertionError(f"the walk asked for {name}")
model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
Extractor(model[0])
model[1].register_forward_hook(Recorder())
out = model(torch.ones(2, 3))
del out""").success  # the ReLU's output, which the recorder keeps, neither named nor cached
    model = shell.user_ns["model"]
    extractor, recorder = (next(iter(m._forward_hooks.values())) for m in model)
    tensors = {"method": extractor.__self__.feats[0], "object": recorder.outputs[0]}
    _, found = holders_of(shell, [block_of(t) for t in tensors.values()])
    assert {name: found[key(t)] for name, t in tensors.items()} == {
        "method": [{"kind": "hidden", "path": "model.0: forward hook save.__self__.feats[0]"}],
        "object": [{"kind": "hidden", "path": "model.1: forward hook Recorder.outputs[0]"}],
    }


def _running_local(thread, function, name):
    """A local of ``function`` in the running ``thread``'s stack."""
    frame = sys._current_frames()[thread.ident]
    while frame.f_code.co_name != function:
        frame = frame.f_back
    return frame.f_locals[name]


TRAINING_THREAD = """
import threading
import torch
ready, release = threading.Event(), threading.Event()
def step(x):
    y = x * 2
    ready.set()
    release.wait(30)
def train(h):
    step(h[:2])
threading.Thread(target=train, args=(torch.ones(33),)).start()
assert ready.wait(10)"""


def test_what_a_running_thread_keeps_is_named_by_the_thread(shell, validate):
    # Before: a tensor that only a thread running the user's function keeps (a notebook that trains in a thread
    # to stay responsive) was "unreachable", found only through the garbage collector. Its Thread object keeps the
    # arguments until the function returns; from Python 3.13 its functions' locals are named too, outermost first.
    try:
        assert shell.run_cell(TRAINING_THREAD).success
        (worker,) = (t for t in threading.enumerate() if t.name.endswith("(train)") and t.is_alive())
        h, y = worker._args[0], _running_local(worker, "step", "y")
        answer, found = holders_of(shell, [block_of(h), block_of(y)])
        validate([dict(b, device=0) for b in answer["blocks"]], "holderBlocks")
        owner = f"thread {worker.name!r}: "

        def held(place):
            reference = {"type": "thread", "name": worker.name, "place": place}
            return {"kind": "hidden", "path": owner + place, "reference": reference}

        if walk.RUNNING_LOCALS_READABLE:
            assert found[key(h)] == [held("train() local h"), held("step() local x"), held("args[0]")]
            assert found[key(y)] == [held("step() local y")]
        else:  # its frames are not read (test_a_thread_inside_a_profiler_keeps_its_variables)
            assert found[key(h)] == [held("args[0]")]
            assert found[key(y)] == [{"kind": "unreachable", "path": "a (2,) float32 tensor"}]
    finally:
        shell.user_ns["release"].set()
        for t in threading.enumerate():
            if t.name.endswith("(train)"):
                t.join(10)


def test_a_thread_running_no_code_of_the_users_is_not_walked(shell):
    # A thread blocked in the standard library's Queue.put on a full queue: it was started with the tensor (its
    # Thread keeps it in its arguments, its frame as `item`), but no function of the user's keeps it there (the
    # kernel's own threads are the same), and walking such threads after every cell would cost the role pass its
    # budget. Walked, it would be named `thread '...': args[0]`.
    full = queue.Queue(maxsize=1)
    full.put(0)
    blocked = threading.Thread(target=full.put, args=(torch.ones(34),), daemon=True)
    try:
        blocked.start()
        deadline = time.monotonic() + 10
        while not full.not_full._waiters and time.monotonic() < deadline:  # until put() waits
            time.sleep(0.01)
        kept = blocked._args[0]
        _, found = holders_of(shell, [block_of(kept)])
        assert found[key(kept)] == [{"kind": "unreachable", "path": "a (34,) float32 tensor"}]
    finally:
        full.get()
        blocked.join(10)


def test_a_process_that_refuses_to_list_its_threads_keeps_the_other_holders(shell, monkeypatch):
    # sys._current_frames raises its audit event: a sandboxed kernel's hook may refuse it.
    def refused():
        raise RuntimeError("sys._current_frames refused by an audit hook")

    assert shell.run_cell("import torch\nkept = torch.ones(37)").success
    monkeypatch.setattr(sys, "_current_frames", refused)
    answer, found = holders_of(shell, [block_of(shell.user_ns["kept"])])
    assert not answer["partial"] and found[key(shell.user_ns["kept"])] == [{"kind": "variable", "path": "kept"}]


def test_a_thread_is_named_without_running_its_classs_code(shell):
    # A Thread subclass of the user's may compute its name (a property) or answer any attribute (__getattr__): the
    # walk reads the name threading stored on it, and runs neither.
    try:
        assert shell.run_cell("""
import threading
import torch
CALLS = []
class Worker(threading.Thread):
    @property
    def name(self):
        CALLS.append('name')
        return 'computed'
    @name.setter
    def name(self, value):
        CALLS.append('set name')
    def __getattr__(self, attr):
        CALLS.append(('__getattr__', attr))
        raise AttributeError(attr)
    def __repr__(self):
        CALLS.append('__repr__')
        return 'Worker()'
    def run(self):
        buf = self._args[0]
        ready.set()
        release.wait(30)
ready, release = threading.Event(), threading.Event()
worker = Worker(args=(torch.ones(36),))
worker.start()
assert ready.wait(10)""").success
        ns = shell.user_ns
        worker = ns["worker"]
        buf = worker.__dict__["_args"][0]
        ns["CALLS"].clear()
        _, found = holders_of(shell, [block_of(buf)])
        assert ns["CALLS"] == []
        name = worker.__dict__["_name"]
        places = ["run() local buf", "args[0]"] if walk.RUNNING_LOCALS_READABLE else ["args[0]"]
        # the name the cell gave it first (its __dict__ read as stored), then the thread's own hold on it
        assert found[key(buf)] == [{"kind": "variable", "path": "worker._args[0]"}] + [
            {
                "kind": "hidden",
                "path": f"thread {name!r}: {place}",
                "reference": {"type": "thread", "name": name, "place": place},
            }
            for place in places
        ]
    finally:
        shell.user_ns["release"].set()
        shell.user_ns["worker"].join(10)


@pytest.mark.parametrize("hook", ["sys.setprofile", "sys.settrace"])
def test_a_thread_inside_a_profiler_or_debugger_keeps_its_variables(shell, hook):
    # Before Python 3.13 the interpreter writes a frame's cached locals back into it when a trace or profile
    # function written in Python returns (a profiler's at each call, a debugger's at each line, or at the call of
    # a function it has no breakpoint in, when the frame has no f_trace yet): a walk that had read the running
    # frame, and taken what it read out of that cache so as not to keep it alive, deleted the function's variables
    # (helper-80: an UnboundLocalError in train, or None from 3.12). Paused inside such a function, the thread
    # finishes its work after the search.
    try:
        assert shell.run_cell(f"""
import sys
import threading
import torch
ready, release, done = threading.Event(), threading.Event(), []
def hook(frame, event, arg):
    if frame.f_code.co_name == 'train' and event in ('c_call', 'call') and not ready.is_set():
        ready.set()
        release.wait(30)  # a profiler or a debugger at work, inside the thread
def train(h):
    g = h * 2
    len(done)
    done.append((g + h).sum().item())
def run(h):
    {hook}(hook)
    try:
        train(h)
    except Exception as e:
        done.append(repr(e))
    {hook}(None)
worker = threading.Thread(target=run, args=(torch.ones(47),))
worker.start()
assert ready.wait(10)""").success
        ns = shell.user_ns
        h = ns["worker"]._args[0]
        _, found = holders_of(shell, [block_of(h)])
        assert f"thread {ns['worker'].name!r}: args[0]" in [holder["path"] for holder in found[key(h)]]
        RolePass().run(shell, {})  # the pass after every cell reads the same roots
        del h
    finally:
        shell.user_ns["release"].set()
        shell.user_ns["worker"].join(10)
    assert shell.user_ns["done"] == [141.0]
