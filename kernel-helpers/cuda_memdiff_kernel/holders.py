"""Who holds a block: the one question only the live process can answer.

For each requested block (device, address, size) it finds the tensors whose
storage lies in the block and the path a user would type to reach them:
user globals and what they contain (``preds[3]``, ``cache['x']``), the output
cache (``Out[12]``), the last traceback's frames, autograd graphs reached
through ``grad_fn`` saved tensors, module parameters, buffers and hooks, and
optimizer state. Read-only and time-bounded; it returns plain strings and
keeps no reference to anything it visited.
"""
import bisect
import sys
import time
import warnings

from . import protocol, torch_probe

# Holder kinds, one definition with the frontend (protocol.HOLDER_KINDS, in its order).
(VARIABLE, GRAPH, OUTPUT_CACHE, TRACEBACK, PARAMETER, GRADIENT, OPTIMIZER, HOOK, UNREACHABLE,
 NATIVE) = protocol.HOLDER_KINDS

DEFAULT_BUDGET_S = 2.0
MAX_DEPTH = 4  # containers inside containers inside a global
MAX_ITEMS = 100_000  # elements looked at per container
MAX_HOLDERS = 4  # holders reported per block
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "_ih", "_oh", "_dh", "_sh"})


class _Budget(Exception):
    """Raised inside the walk when the time budget is spent."""


class _BlockIndex:
    """Finds the requested block holding an address, per device, by bisection."""

    def __init__(self, blocks):
        self._starts = {}
        self._blocks = {}
        for b in sorted(blocks, key=lambda b: (b["device"], b["address"])):
            self._starts.setdefault(b["device"], []).append(b["address"])
            self._blocks.setdefault(b["device"], []).append(b)

    def find(self, device, address):
        starts = self._starts.get(device)
        if not starts:
            return None
        i = bisect.bisect_right(starts, address) - 1
        if i < 0:
            return None
        block = self._blocks[device][i]
        return block if address < block["address"] + block["size"] else None


class _Walk:
    """One holder search: visits roots in order of how visible they are."""

    def __init__(self, torch, blocks, budget_s):
        self.torch = torch
        self.index = _BlockIndex(blocks)
        self.found = {}
        self.deadline = time.perf_counter() + budget_s
        self.steps = 0
        # id -> object: holding what was seen keeps ids from being reused mid-walk.
        self.seen = {}
        self.hook_lists = {}

    def tick(self):
        self.steps += 1
        if self.steps % 512 == 0 and time.perf_counter() > self.deadline:
            raise _Budget()

    def record(self, tensor, kind, path, via=None):
        try:
            if tensor.device.type == "cuda":
                device = tensor.device.index
            elif tensor.device.type == "cpu":
                device = -1  # lets the tests run on CPU tensors
            else:
                return
            address = tensor.untyped_storage().data_ptr()
        except Exception:  # sparse, meta, or freed storage
            return
        block = self.index.find(device, address)
        if block is None:
            return
        holders = self.found.setdefault((block["device"], block["address"]), [])
        holder = {"kind": kind, "path": path}
        if via:
            holder["via"] = via
        if len(holders) < MAX_HOLDERS and holder not in holders:
            holders.append(holder)

    # -- values ----------------------------------------------------------
    def value(self, obj, kind, path, depth=0, via=None):
        self.tick()
        torch = self.torch
        if isinstance(obj, torch.Tensor):
            self.tensor(obj, kind, path, via)
            return
        if id(obj) in self.seen or depth > MAX_DEPTH:
            return
        if isinstance(obj, (str, bytes, int, float, bool, type(None), type)):
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
                self.value(item, kind, f"{path}[{key!r}]", depth + 1, via)
        elif isinstance(obj, (list, tuple)):
            for i, item in enumerate(obj[:MAX_ITEMS]):
                self.value(item, kind, f"{path}[{i}]", depth + 1, via)
        elif isinstance(obj, (set, frozenset)):
            for item in list(obj)[:MAX_ITEMS]:
                self.value(item, kind, f"{path}{{...}}", depth + 1, via)
        else:
            attributes = getattr(obj, "__dict__", None)
            if isinstance(attributes, dict) and not _is_module_like(obj):
                for name, item in list(attributes.items())[:MAX_ITEMS]:
                    self.value(item, kind, f"{path}.{name}", depth + 1, via)

    def tensor(self, t, kind, path, via=None):
        self.record(t, kind, path, via)
        if id(t) in self.seen:
            return
        self.seen[id(t)] = t
        grad = getattr(t, "grad", None) if t.is_leaf else None
        if grad is not None:
            self.record(grad, GRADIENT, f"{path}.grad")
        if t.grad_fn is not None:
            self.graph(t.grad_fn, path)

    def graph(self, node, path):
        """Saved tensors of every node reachable from ``node``: kept alive by ``path``'s graph."""
        # Node objects are made afresh on each access and die as soon as they
        # are dropped, so their ids are reused: hold them until the walk ends.
        stack, visited = [node], {}
        while stack:
            self.tick()
            fn = stack.pop()
            if fn is None or id(fn) in visited:
                continue
            visited[id(fn)] = fn
            for name in dir(fn):
                if name.startswith("_saved_"):
                    try:
                        saved = getattr(fn, name)
                    except Exception:  # freed by backward, or not a tensor
                        continue
                    for t in saved if isinstance(saved, (list, tuple)) else (saved,):
                        if isinstance(t, self.torch.Tensor):
                            self.record(t, GRAPH, path)
            for child, _ in getattr(fn, "next_functions", ()):
                if child is not None and type(child).__name__ != "AccumulateGrad":
                    stack.append(child)

    def module(self, module, path):
        for name, p in module.named_parameters(recurse=True):
            self.tick()
            self.record(p, PARAMETER, f"{path}.{name}")
            if p.grad is not None:
                self.record(p.grad, GRADIENT, f"{path}.{name}.grad")
        for name, b in module.named_buffers(recurse=True):
            self.tick()
            self.record(b, PARAMETER, f"{path}.{name}")

    def optimizer(self, opt, path):
        for i, state in enumerate(opt.state.values()):
            for key, t in state.items():
                self.tick()
                if isinstance(t, self.torch.Tensor):
                    self.record(t, OPTIMIZER, f"{path}.state[{i}][{key!r}]")

    def note_hooks(self, module, path):
        """Containers the module's hooks append to: what they hold is held by the hook."""
        for sub_name, sub in module.named_modules():
            for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
                for fn in getattr(sub, attr, {}).values():
                    where = f"{attr[1:-1].replace('_', ' ')} on {path}{'.' + sub_name if sub_name else ''}"
                    for held in _referenced(fn):
                        if isinstance(held, (list, dict, set)):
                            self.hook_lists.setdefault(id(held), where)


def _orphans(walk, blocks):
    """Tensors in blocks no visible root reached: found through the garbage collector's list."""
    import gc  # noqa: PLC0415 - only this last step needs it

    missing = [b for b in blocks if (b["device"], b["address"]) not in walk.found]
    if not missing:
        return
    walk.index = _BlockIndex(missing)
    with warnings.catch_warnings():
        # isinstance() on some deprecated torch objects warns; the search must stay silent
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            walk.tick()
            if isinstance(obj, walk.torch.Tensor):
                walk.record(obj, UNREACHABLE, f"a {tuple(obj.shape)} {str(obj.dtype).replace('torch.', '')} tensor")


# Packages whose frames only carry the user's code: their locals are plumbing.
_PLUMBING = frozenset({"IPython", "ipykernel", "asyncio", "tornado", "traitlets", "jupyter_client", "zmq", "runpy",
                       "_pytest", "pytest", "pluggy", "comm", "cuda_memdiff_kernel", "_cuda_memdiff_kernel"})


def _is_user_function(frame, shell):
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


def _user_names(shell):
    """The user's globals by name: no IPython plumbing, no hidden names, no output cache."""
    hidden = getattr(shell, "user_ns_hidden", {})
    for name, value in list(shell.user_ns.items()):
        if name in _IPYTHON_NAMES or name in hidden or _is_output_name(name) or name.startswith("_i"):
            continue
        yield name, value


def _is_output_name(name):
    return name in ("_", "__", "___") or (name.startswith("_") and name[1:].isdigit())


def find_holders(shell, blocks, budget_s=DEFAULT_BUDGET_S):
    """Holders of ``blocks`` (dicts with device, address, size): a JSON-safe answer.

    ``{"blocks": [{"device", "address", "holders": [{"kind", "path"}]}], "partial", "elapsed_ms"}``;
    a block only a tensor nothing visible references lies in gets an
    ``unreachable`` holder, and one no Python tensor lies in (a library
    workspace, the allocator's own use) a ``native`` one, when the search was
    complete.
    """
    started = time.perf_counter()
    torch = torch_probe.torch_module()
    if torch is None or not blocks:
        return {"blocks": [], "partial": False, "elapsed_ms": 0.0}
    walk = _Walk(torch, blocks, budget_s)
    partial = False
    try:
        names = list(_user_names(shell))
        for name, value in names:
            if isinstance(value, torch.nn.Module):
                walk.note_hooks(value, name)
        for name, value in names:
            walk.value(value, VARIABLE, name)
        for count, value in list(shell.user_ns.get("Out", {}).items()):
            walk.value(value, OUTPUT_CACHE, f"Out[{count}]")
        for name in ("_", "__", "___"):
            walk.value(shell.user_ns.get(name), OUTPUT_CACHE, name)
        tb = getattr(sys, "last_traceback", None)
        while tb is not None:
            frame = tb.tb_frame
            if _is_user_function(frame, shell):
                for local, value in list(frame.f_locals.items()):
                    walk.value(value, TRACEBACK, f"sys.last_traceback: {frame.f_code.co_name}() local {local}")
            tb = tb.tb_next
    except _Budget:
        partial = True
    if not partial:
        try:
            _orphans(walk, blocks)
        except _Budget:
            partial = True
    answer = []
    for b in blocks:
        holders = walk.found.get((b["device"], b["address"]))
        if holders:
            answer.append({"device": b["device"], "address": b["address"], "holders": holders})
        elif not partial:
            answer.append({"device": b["device"], "address": b["address"], "holders": [{"kind": NATIVE, "path": ""}]})
    return {"blocks": answer, "partial": partial, "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)}
