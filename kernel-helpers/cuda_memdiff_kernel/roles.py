"""What each live block is for, after every cell: the cheap pass.

The holder search (holders.py) names every path to a block and ends with
the garbage collector's list of all objects: 700-800 ms at 40,000 blocks.
After each cell only the role of each block is wanted, so this pass walks the
same roots (walk.py) without building paths and without the garbage
collector's list, and joins the tensors it meets to the allocator's blocks by
storage address: a slice keeps its whole base storage alive, so the block a
storage lies in gets the role of any tensor viewing it. Where several things
keep one block, the first role in ``protocol.ROLES`` wins (a weight autograd
saved is a parameter). A block no tensor reached is a library workspace when
its size is one cuBLAS gives its workspaces, else ``unknown``.

Bounded in time: a pass that runs out of budget stops walking, calls what it
did not reach ``unknown`` and says ``partial``. A cell that changed neither
the blocks nor the user's names reuses the previous answer.
"""

import bisect
import itertools
import operator
import os
import re
import sys
import time
import warnings

from . import protocol, torch_probe
from .compact import ROW_REQUESTED, ROW_SIZE, ROW_STATE
from .walk import (
    BUFFER,
    GRADIENT,
    GRAPH,
    HOOK,
    MAX_DEPTH,
    MAX_ITEMS,
    OPTIMIZER,
    OUTPUT_CACHE,
    PARAMETER,
    TRACEBACK,
    VARIABLE,
    Budget,
    ObjectWalk,
    user_names,
)

ROLES = tuple(protocol.ROLES)
(
    PARAMETER_ROLE,
    BUFFER_ROLE,
    GRADIENT_ROLE,
    OPTIMIZER_ROLE,
    ACTIVATION_ROLE,
    OUTPUT_ROLE,
    TRACEBACK_ROLE,
    USER_ROLE,
    WORKSPACE_ROLE,
    UNKNOWN_ROLE,
) = range(len(ROLES))
# The walk's kinds of holder, as roles.
_ROLE_OF_KIND = {
    PARAMETER: PARAMETER_ROLE,
    BUFFER: BUFFER_ROLE,
    GRADIENT: GRADIENT_ROLE,
    OPTIMIZER: OPTIMIZER_ROLE,
    GRAPH: ACTIVATION_ROLE,
    OUTPUT_CACHE: OUTPUT_ROLE,
    TRACEBACK: TRACEBACK_ROLE,
    VARIABLE: USER_ROLE,
    HOOK: USER_ROLE,
}

DEFAULT_BUDGET_S = 0.25
_REPEATS = re.compile(r"([a-z])\1+")  # a run of one role letter
_CHUNK = 1024  # tensors of a list looked at between two looks at the clock
_ADDRESS, _SIZE, _STATE = operator.itemgetter(1), operator.itemgetter(ROW_SIZE), operator.itemgetter(ROW_STATE)
_REQUIRES_GRAD = operator.attrgetter("requires_grad")
# cuBLAS's workspace config when CUBLAS_WORKSPACE_CONFIG is unset (":KiB:count" pairs), by GPU generation.
_CUBLAS_DEFAULT = ":4096:2:16:8"
_CUBLAS_DEFAULT_SM90 = ":4096:8"
_CUBLASLT_DEFAULT_KIB = 1024


class _RoleWalk(ObjectWalk):
    """Meets tensors from the user's roots; collects, per role, the addresses of the blocks it met in that role.

    Blocks are known by address alone: CUDA's unified addressing gives each
    device its own addresses, so no device lookup per tensor is needed, and
    an integer hashes for free where a (device, address) tuple does not.
    """

    paths = False

    def __init__(self, torch, blocks, rows, budget_s):
        super().__init__(torch, budget_s)
        self.graph_seen = {}  # one graph reached from two names is walked once
        self.optimizer_params = True
        self.blocks = blocks
        self.rows = rows  # address -> block row
        self.found = [set() for _ in ROLES]
        self._starts = None

    # The hot path, for the lists of thousands of tensors notebooks keep: a
    # chunk at a time, each step one C call over the chunk.
    def value(self, obj, kind, path, depth=0, via=None):
        if type(obj) is not list and type(obj) is not tuple:
            super().value(obj, kind, path, depth, via)
            return
        self.tick()
        if id(obj) in self.seen or depth > MAX_DEPTH:
            return
        self.seen[id(obj)] = obj
        if kind == VARIABLE and id(obj) in self.hook_lists:
            kind, via = HOOK, self.hook_lists[id(obj)]
        tensor_type, found, rows = self.torch.Tensor, self.found[_ROLE_OF_KIND[kind]], self.rows
        for start in range(0, min(len(obj), MAX_ITEMS), _CHUNK):
            if time.perf_counter() > self.deadline:
                raise Budget()
            chunk = obj[start : start + _CHUNK]
            tensors = [item for item in chunk if isinstance(item, tensor_type)]
            if len(tensors) < len(chunk):
                for item in chunk:
                    if not isinstance(item, tensor_type):
                        self.value(item, kind, None, depth + 1, via)
            flags = list(map(_REQUIRES_GRAD, tensors))
            if any(flags):  # a gradient or a graph to follow
                for t in itertools.compress(tensors, flags):
                    self.tensor(t, kind, None)
            addresses = {t.data_ptr() for t in tensors}
            missing = addresses.difference(rows)  # looks each up in the dict; never copies it
            found |= addresses - missing
            if missing:  # views that do not start their storage: the slow way
                for t in tensors:
                    if t.data_ptr() in missing:
                        self.record(t, kind, None)

    def tensor(self, t, kind, path, via=None):
        self.record(t, kind, path)
        if id(t) in self.seen:
            return
        self.seen[id(t)] = t
        if t.requires_grad:  # most tensors a notebook keeps need none: one attribute read instead of three
            if t.is_leaf:
                if t.grad is not None:
                    self.record(t.grad, GRADIENT, None)
            elif t.grad_fn is not None:
                self.graph(t.grad_fn, path)

    def record(self, tensor, kind, path, via=None):
        try:
            address = tensor.data_ptr()
            if address not in self.rows:  # a view that does not start its storage, or a storage inside a block
                address = self._containing(tensor.get_device(), tensor.untyped_storage().data_ptr())
        except Exception:  # sparse, meta, or freed storage
            return
        if address is not None:
            self.found[_ROLE_OF_KIND[kind]].add(address)

    def _containing(self, device, address):
        """The block a storage lies inside when it does not start one (rare: built on the first miss)."""
        if self._starts is None:
            self._starts = sorted(self.blocks)
        i = bisect.bisect_right(self._starts, (device, address)) - 1
        if i < 0:
            return None
        key = self._starts[i]
        if key[0] != device or address >= key[1] + self.blocks[key][ROW_SIZE]:
            return None
        return key[1]


class RolePass:
    """The role pass of one kernel: runs after each cell and remembers its last answer for reuse."""

    def __init__(self, budget_s=DEFAULT_BUDGET_S):
        self.budget_s = budget_s
        self._last = None  # (fingerprint, rows by address, keys, addresses by role, answer)
        self._keys, self._roles = [], [set() for _ in ROLES]
        self._workspace_sizes = None

    def run(self, shell, blocks):
        """Roles of ``blocks`` ({(device, address): block row}, compact.py) after a cell: a JSON-safe summary.

        ``{"bytes": {role: bytes}, "partial", "elapsed_ms", "reused"}``;
        ``self.by_block`` keeps {(device, address): role index} of the answer.
        """
        started = time.perf_counter()
        torch = torch_probe.torch_module()
        if any(map(_STATE, blocks.values())):  # pending frees are not allocated: they have no role
            blocks = {key: row for key, row in blocks.items() if row[ROW_STATE] == 0}
        keys = list(blocks)
        rows = dict(zip(map(_ADDRESS, keys), blocks.values()))
        fingerprint = _fingerprint(shell)
        last = self._last
        if last is not None and last[0] == fingerprint and last[1] == rows:
            self._keys, self._roles, answer = last[2], last[3], dict(last[4])
            answer.update(reused=True, elapsed_ms=_ms(started))
            return answer
        partial = False
        walk = _RoleWalk(torch, blocks, rows, self.budget_s) if torch is not None else None
        if walk is not None:
            try:
                with warnings.catch_warnings():  # a deprecated attribute read must not print into the user's cell
                    warnings.simplefilter("ignore")
                    walk.walk_roots(shell)
            except Budget:
                partial = True
        found = walk.found if walk is not None else [set() for _ in ROLES]
        # Where several things keep a block, the first role wins; what nothing reached is a workspace or unknown.
        assigned, totals = set(), [0] * len(ROLES)
        for role in range(WORKSPACE_ROLE):
            found[role] -= assigned
            assigned |= found[role]
        unknown = found[UNKNOWN_ROLE] = rows.keys() - assigned
        if not partial and unknown:
            workspace = self.workspace_sizes(torch)
            found[WORKSPACE_ROLE] = {a for a in unknown if rows[a][ROW_REQUESTED] in workspace}
            unknown -= found[WORKSPACE_ROLE]
        role_of = {}
        for role, addresses in enumerate(found):
            totals[role] = sum(map(_SIZE, map(rows.__getitem__, addresses)))
            role_of.update(dict.fromkeys(addresses, role))
        answer = {"bytes": dict(zip(ROLES, totals)), "partial": partial}
        # Each block's role for the panel's diff and segment map, in (device, address) order; on one
        # device that is address order, and sorting integers costs half what sorting tuples does.
        one_device = not keys or all(key[0] == keys[0][0] for key in keys)
        order = sorted(rows) if one_device else [key[1] for key in sorted(keys)]
        answer["blocks"] = block_runs(map(role_of.__getitem__, order))
        answer.update(elapsed_ms=_ms(started), reused=False)
        self._keys, self._roles = keys, found
        # A partial answer is not worth keeping: the next cell tries again.
        self._last = None if partial else (fingerprint, rows, keys, found, answer)
        return answer

    @property
    def by_block(self):
        """{(device, address): role index} of the last answer (built when asked: the live path needs none)."""
        role_of = {}
        for role, addresses in enumerate(self._roles):
            role_of.update(dict.fromkeys(addresses, role))
        return {key: role_of[key[1]] for key in self._keys}

    def after_cell(self, shell, blocks):
        """The cell's roles for its snapshot message, or None when the pass failed (the snapshot goes anyway)."""
        try:
            return self.run(shell, blocks)
        except Exception:
            self._last = None
            return None

    def workspace_sizes(self, torch):
        """Byte sizes cuBLAS and cuBLASLt give their workspaces on this machine (read once)."""
        if self._workspace_sizes is None:
            self._workspace_sizes = _workspace_sizes(torch)
        return self._workspace_sizes


def block_runs(roles_in_order):
    """Each allocated block's role, compact for the wire: ``{"count": n, "runs": "12a3c..."}``.

    ``roles_in_order`` are the role indices of the snapshot's allocated blocks
    in (device, address) order, the order the frontend keeps them in. Each
    role is one letter (``protocol.ROLE_CODES``) and a run of n equal letters
    is written n and the letter, so the bytes grow with the changes of role
    along the address space, at most one byte per block, never with the
    blocks' addresses: a message that sends the 300 blocks a cell changed
    of 40,000 sends all 40,000 roles in about 6 KB when segments hold one
    role each, 40 KB when every block differs from its neighbour
    (tests/test_role_wire.py measures both against a whole snapshot).
    """
    letters = "".join(map(protocol.ROLE_CODES.__getitem__, roles_in_order))
    return {"count": len(letters), "runs": _REPEATS.sub(lambda m: f"{len(m.group())}{m.group(1)}", letters)}


def allocated_keys(blocks):
    """The (device, address) keys of a block table's allocated blocks (no pending frees), sorted."""
    return sorted(key for key, row in blocks.items() if row[ROW_STATE] == 0)


def roles_file(by_block):
    """The per-block roles as a session folder's ``cellNN.roles.json`` columns (docs/session-format.md)."""
    keys = sorted(by_block)
    return {"device": [k[0] for k in keys], "address": [k[1] for k in keys], "role": [ROLES[by_block[k]] for k in keys]}


def stamp_categories(raw, by_block):
    """Give the snapshot's trace a MemoryViz colour per role; returns how many allocations got one.

    MemoryViz colours the allocations of its memory timeline by the
    ``category`` of their ``alloc`` trace entries (what
    ``torch.cuda._memory_viz.profile_plot`` writes). The last allocation at
    the address of each live block gets the block's role; earlier ones, and
    every allocation that did not stay, are ``unknown`` (which MemoryViz
    needs among the categories). Blocks allocated before the history began
    have no entry and stay uncoloured.
    """
    traces = raw.get("device_traces") or []
    stamped = 0
    for device, trace in enumerate(traces):
        last_alloc = {}
        for i, entry in enumerate(trace):
            if entry.get("action") == "alloc":
                last_alloc[entry.get("addr")] = i
                entry["category"] = "unknown"
        for address, i in last_alloc.items():
            role = by_block.get((device, address))
            if role is not None:
                trace[i]["category"] = ROLES[role]
                stamped += 1
    return stamped


def _fingerprint(shell):
    """What the roots name: with the same blocks, a cell that changed none of it keeps the last answer."""
    names = tuple((name, id(value)) for name, value in user_names(shell))
    out = shell.user_ns.get("Out", {})
    cache = tuple((k, id(v)) for k, v in list(out.items())) if isinstance(out, dict) else ()
    return names, cache, id(getattr(sys, "last_traceback", None))


def _workspace_sizes(torch):
    sizes = set()
    capability = (0, 0)
    try:
        if torch is not None and torch.cuda.is_initialized():
            capability = torch.cuda.get_device_capability()
    except Exception:
        pass
    config = os.environ.get("CUBLAS_WORKSPACE_CONFIG") or (
        _CUBLAS_DEFAULT_SM90 if capability >= (9, 0) else _CUBLAS_DEFAULT
    )
    numbers = [int(n) for n in config.split(":") if n.strip().isdigit()]
    total = sum(kib * count * 1024 for kib, count in zip(numbers[::2], numbers[1::2]))
    if total:
        sizes.add(total)
    lt = os.environ.get("CUBLASLT_WORKSPACE_SIZE", "")
    sizes.add((int(lt) if lt.isdigit() else _CUBLASLT_DEFAULT_KIB) * 1024)
    return sizes


def _ms(started):
    return round((time.perf_counter() - started) * 1000, 3)
