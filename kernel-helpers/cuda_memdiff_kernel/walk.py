"""The object walk that holders.py and roles.py share: from the roots a user
can see (their globals, the output cache, the last traceback) to every tensor
they keep alive, each met with the kind of thing that keeps it (a variable,
a module's parameter, a gradient, optimizer state, an autograd graph).

A subclass says what a tensor met means (``record``). Paths are built only
when a subclass asks for them (``paths = True``): the per-cell role pass
needs kinds, not names, and skips the string work.
"""

import sys
import time

from . import protocol

# Holder kinds, one definition with the frontend (protocol.HOLDER_KINDS, in its order).
(VARIABLE, GRAPH, OUTPUT_CACHE, TRACEBACK, PARAMETER, GRADIENT, OPTIMIZER, HOOK, UNREACHABLE, NATIVE, HIDDEN) = (
    protocol.HOLDER_KINDS
)
# The walk tells module buffers from parameters for the roles pass; holder answers call both "parameter".
BUFFER = "buffer"

MAX_DEPTH = 4  # containers inside containers inside a global
MAX_ITEMS = 100_000  # elements looked at per container
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "_ih", "_oh", "_dh", "_sh"})
_SCALARS = (str, bytes, int, float, bool, type(None), type)
_NUMBERS = (str, int, float, bool)
# Packages whose frames only carry the user's code: their locals are plumbing.
_PLUMBING = frozenset(
    {
        "IPython",
        "ipykernel",
        "asyncio",
        "tornado",
        "traitlets",
        "jupyter_client",
        "zmq",
        "runpy",
        "_pytest",
        "pytest",
        "pluggy",
        "comm",
        "cuda_memdiff_kernel",
        "_cuda_memdiff_kernel",
    }
)
# Per autograd node type, the names of its saved-tensor attributes: dir() is slow, the types are few.
_SAVED_NAMES = {}
_SAVED_TENSOR_NAMES = {}  # the same, less those seen to hold no tensor


class Budget(Exception):
    """Raised inside the walk when the time budget is spent."""


class ObjectWalk:
    """One walk over the user's roots; subclasses implement ``record``."""

    paths = True

    def __init__(self, torch, budget_s):
        self.torch = torch
        self.deadline = time.perf_counter() + budget_s
        self.steps = 0
        # id -> object: holding what was seen keeps ids from being reused mid-walk.
        self.seen = {}
        self.hook_lists = {}
        # Autograd nodes visited; None: each graph afresh (holders names every path to a graph).
        self.graph_seen = None
        # Parameters reached through an optimizer's param_groups (a model only the optimizer names).
        self.optimizer_params = False

    def record(self, tensor, kind, path, via=None):
        raise NotImplementedError

    def tick(self):
        self.steps += 1
        if self.steps % 512 == 0 and time.perf_counter() > self.deadline:
            raise Budget()

    def child(self, path, fmt, key):
        """``path`` extended by ``fmt`` with ``key``; nothing when paths are not wanted."""
        return fmt.format(path, key) if self.paths else None

    # -- roots -------------------------------------------------------------
    def walk_roots(self, shell):
        """Every root in order of how visible it is: globals, the output cache, the last traceback."""
        names = list(user_names(shell))
        module_type = self.torch.nn.Module
        for name, value in names:
            if isinstance(value, module_type):
                self.note_hooks(value, name)
        for name, value in names:
            self.value(value, VARIABLE, name)
        for count, value in list(shell.user_ns.get("Out", {}).items()):
            self.value(value, OUTPUT_CACHE, f"Out[{count}]" if self.paths else None)
        for name in ("_", "__", "___"):
            self.value(shell.user_ns.get(name), OUTPUT_CACHE, name)
        tb = getattr(sys, "last_traceback", None)
        while tb is not None:
            frame = tb.tb_frame
            if is_user_function(frame, shell):
                for local, value in list(frame.f_locals.items()):
                    path = f"sys.last_traceback: {frame.f_code.co_name}() local {local}" if self.paths else None
                    self.value(value, TRACEBACK, path)
            tb = tb.tb_next

    # -- values ----------------------------------------------------------
    def value(self, obj, kind, path, depth=0, via=None):
        self.tick()
        torch = self.torch
        if isinstance(obj, torch.Tensor):
            self.tensor(obj, kind, path, via)
            return
        if id(obj) in self.seen or depth > MAX_DEPTH or isinstance(obj, _SCALARS):
            return
        self.seen[id(obj)] = obj
        if kind == VARIABLE and id(obj) in self.hook_lists:
            kind, via = HOOK, self.hook_lists[id(obj)]
        if isinstance(obj, torch.nn.Module):
            self.module(obj, path)
        elif isinstance(obj, torch.optim.Optimizer):
            self.optimizer(obj, path)
        elif isinstance(obj, dict):
            for i, (key, item) in enumerate(obj.items()):
                if i >= MAX_ITEMS:
                    break
                self.value(item, kind, self.child(path, "{}[{!r}]", key), depth + 1, via)
        elif isinstance(obj, (list, tuple)):
            for i, item in enumerate(obj[:MAX_ITEMS]):
                self.value(item, kind, self.child(path, "{}[{}]", i), depth + 1, via)
        elif isinstance(obj, (set, frozenset)):
            for item in list(obj)[:MAX_ITEMS]:
                self.value(item, kind, self.child(path, "{}{{...}}", None), depth + 1, via)
        else:
            attributes = getattr(obj, "__dict__", None)
            if isinstance(attributes, dict) and not _is_module_like(obj):
                for name, item in list(attributes.items())[:MAX_ITEMS]:
                    self.value(item, kind, self.child(path, "{}.{}", name), depth + 1, via)

    def tensor(self, t, kind, path, via=None):
        self.record(t, kind, path, via)
        if id(t) in self.seen:
            return
        self.seen[id(t)] = t
        if t.is_leaf:
            grad = t.grad
            if grad is not None:
                self.record(grad, GRADIENT, self.child(path, "{}.grad", None))
        elif t.grad_fn is not None:
            self.graph(t.grad_fn, path)

    def graph(self, node, path):
        """Saved tensors of every node reachable from ``node``: kept alive by ``path``'s graph."""
        # Node objects are made afresh on each access and die as soon as they
        # are dropped, so their ids are reused: hold them until the walk ends.
        visited = self.graph_seen if self.graph_seen is not None else {}
        stack, tensor_type = [node], self.torch.Tensor
        while stack:
            self.tick()
            fn = stack.pop()
            if fn is None or id(fn) in visited:
                continue
            visited[id(fn)] = fn
            names, spent = saved_tensor_names(fn), None
            for name in names:
                try:
                    saved = getattr(fn, name)
                except Exception:  # freed by backward
                    continue
                if isinstance(saved, tensor_type):
                    self.saved_tensor(saved, path)
                elif holds_no_tensor(saved):
                    spent = [*(spent or ()), name]
                elif isinstance(saved, (list, tuple)):
                    for t in saved:
                        if isinstance(t, tensor_type):
                            self.saved_tensor(t, path)
            for name in spent or ():
                names.remove(name)
            for child, _ in getattr(fn, "next_functions", ()):
                if child is not None and type(child).__name__ != "AccumulateGrad":
                    stack.append(child)

    def saved_tensor(self, tensor, path):
        """A tensor an autograd graph saved for backward."""
        self.record(tensor, GRAPH, path)

    def module(self, module, path):
        for name, p in module.named_parameters(recurse=True):
            self.tick()
            self.record(p, PARAMETER, self.child(path, "{}.{}", name))
            if p.grad is not None:
                self.record(p.grad, GRADIENT, self.child(path, "{}.{}.grad", name) if self.paths else None)
        for name, b in module.named_buffers(recurse=True):
            self.tick()
            self.record(b, BUFFER, self.child(path, "{}.{}", name))

    def optimizer(self, opt, path):
        tensor_type = self.torch.Tensor
        for group in opt.param_groups if self.optimizer_params else ():
            for p in group.get("params", ()):
                self.tick()
                if isinstance(p, tensor_type):
                    self.record(p, PARAMETER, self.child(path, "{}.param_groups {}", tuple(p.shape)))
                    if p.grad is not None:
                        self.record(p.grad, GRADIENT, self.child(path, "{}.param_groups {}.grad", tuple(p.shape)))
        for i, state in enumerate(opt.state.values()):
            for key, t in state.items():
                self.tick()
                if isinstance(t, tensor_type):
                    self.record(t, OPTIMIZER, f"{path}.state[{i}][{key!r}]" if self.paths else None)

    def note_hooks(self, module, path):
        """Containers the module's hooks append to: what they hold is held by the hook."""
        for sub_name, sub in module.named_modules():
            for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
                for fn in getattr(sub, attr, {}).values():
                    where = f"{attr[1:-1].replace('_', ' ')} on {path}{'.' + sub_name if sub_name else ''}"
                    for held in _referenced(fn):
                        if isinstance(held, (list, dict, set)):
                            self.hook_lists.setdefault(id(held), where)


def saved_names(fn):
    """The ``_saved_*`` attribute names of an autograd node, looked up once per node type."""
    names = _SAVED_NAMES.get(type(fn))
    if names is None:
        names = _SAVED_NAMES[type(fn)] = tuple(n for n in dir(fn) if n.startswith("_saved_"))
    return names


def saved_tensor_names(fn):
    """The ``_saved_*`` names of an autograd node that may hold tensors: a list per node type.

    Half of a node's saved attributes are sizes, strides and flags, and
    reading one makes a Python object; a walk that reads such a value
    removes its name from the list (``holds_no_tensor``), once per type.
    """
    names = _SAVED_TENSOR_NAMES.get(type(fn))
    if names is None:
        names = _SAVED_TENSOR_NAMES[type(fn)] = list(saved_names(fn))
    return names


def holds_no_tensor(value):
    """A saved value of a kind that never holds a tensor: a number, a string, sizes (a tensor or None may)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and isinstance(value[0], _NUMBERS)
    return isinstance(value, _NUMBERS)


def is_user_function(frame, shell):
    """A traceback frame whose locals are the user's: not a cell's top level (those are globals), not plumbing."""
    if frame.f_globals is shell.user_ns:
        return frame.f_code.co_name != "<module>"
    return str(frame.f_globals.get("__name__", "")).split(".")[0] not in _PLUMBING


def _is_module_like(obj):
    return type(obj).__name__ == "module"


def _referenced(fn):
    """Objects a hook function closes over or names as globals."""
    out = []
    closure = getattr(fn, "__closure__", None) or ()
    for cell in closure:
        try:
            out.append(cell.cell_contents)
        except ValueError:
            pass
    code = getattr(fn, "__code__", None)
    scope = getattr(fn, "__globals__", {})
    for name in getattr(code, "co_names", ()):
        if name in scope:
            out.append(scope[name])
    return out


def user_names(shell):
    """The user's globals by name: no IPython plumbing, no hidden names, no output cache."""
    hidden = getattr(shell, "user_ns_hidden", {})
    for name, value in list(shell.user_ns.items()):
        if name in _IPYTHON_NAMES or name in hidden or is_output_name(name) or name.startswith("_i"):
            continue
        yield name, value


def is_output_name(name):
    return name in ("_", "__", "___") or (name.startswith("_") and name[1:].isdigit())
