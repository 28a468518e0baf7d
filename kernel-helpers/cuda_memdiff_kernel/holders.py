"""Who holds a block: the one question only the live process can answer.

For each requested block (device, address, size) it finds the tensors whose
storage lies in the block and the path a user would type to reach them:
user globals and what they contain (``preds[3]``, ``cache['x']``), the output
cache (``Out[12]``), the last traceback's frames, autograd graphs reached
through ``grad_fn`` saved tensors, module parameters, buffers and hooks, and
optimizer state. A holder whose path starts at something no variable shows
(an output history entry, a kept exception, a function's closure) says what
that is in its ``reference`` (walk.Reference). Read-only and time-bounded; it
returns plain data and keeps no reference to anything it visited.
"""

import bisect
import time
import warnings

from . import torch_probe
from .walk import (  # noqa: F401
    BUFFER,
    GRADIENT,
    GRAPH,
    HIDDEN,
    HOOK,
    NATIVE,
    OPTIMIZER,
    OUTPUT_CACHE,
    PARAMETER,
    TRACEBACK,
    UNREACHABLE,
    VARIABLE,
    Budget,
    ObjectWalk,
    Reference,
)

DEFAULT_BUDGET_S = 2.0
MAX_HOLDERS = 4  # holders reported per block


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


class _Walk(ObjectWalk):
    """One holder search: names every path to the requested blocks."""

    def __init__(self, torch, blocks, budget_s):
        super().__init__(torch, budget_s)
        self.index = _BlockIndex(blocks)
        self.found = {}

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
        # A buffer is a parameter in the holders' words (the leak finder's reasons).
        holder = {"kind": PARAMETER if kind == BUFFER else kind, "path": path}
        if isinstance(via, Reference):
            holder["reference"] = via.holder_fields(path)
            via = via.hook
        if via:
            holder["via"] = via
        if len(holders) < MAX_HOLDERS and holder not in holders:
            holders.append(holder)


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
        walk.walk_roots(shell)
    except Budget:
        partial = True
    if not partial:
        try:
            _orphans(walk, blocks)
        except Budget:
            partial = True
    answer = []
    for b in blocks:
        holders = walk.found.get((b["device"], b["address"]))
        if holders:
            answer.append({"device": b["device"], "address": b["address"], "holders": holders})
        elif not partial:
            answer.append({"device": b["device"], "address": b["address"], "holders": [{"kind": NATIVE, "path": ""}]})
    return {"blocks": answer, "partial": partial, "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)}
