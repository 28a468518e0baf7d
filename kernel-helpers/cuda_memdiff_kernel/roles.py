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
did not reach ``unknown`` and says ``partial``. Incremental: each cell keeps
the roles of the blocks it did not touch whose holders did not change; a
list of tensors that holds the same tensor objects as last cell, none of
their blocks born or freed since, is not walked again, nor is the autograd
graph of a tensor that keeps the same root node, none of its saved blocks
born or freed and a saved tensor near its root still readable (RolePass
says what that cannot see and how it is caught).
"""

import bisect
import collections
import itertools
import operator
import os
import re
import time
import warnings
import weakref

from . import protocol, torch_probe
from .block_index import BlockIndex
from .compact import ROW_DEVICE, ROW_REQUESTED, ROW_SIZE, ROW_STATE
from .item_ids import item_ids
from .log import collector_paused
from .walk import (
    BUFFER,
    GRADIENT,
    GRAPH,
    HIDDEN,
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
    saved_tensor_names,
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
    HIDDEN: USER_ROLE,
}

DEFAULT_BUDGET_S = 0.25
_CODES = protocol.ROLE_CODES
# A run of one role letter: one alternative per letter, each a tight loop in the regex engine (a backreference,
# ``([a-z])\1+``, steps through its general matcher at each letter: 15 times slower over 40,000 letters).
_REPEATS = re.compile("|".join(f"{code}{code}+" for code in _CODES))
_ROLE_OF_CODE = {code: role for role, code in enumerate(_CODES)}
_BYTE_OF_CODE = {code: ord(code) for code in _CODES}
_CHUNK = 1024  # tensors of a list looked at between two looks at the clock
_UNIT_MIN = 32  # a shorter list is walked each cell: checking it costs about what walking it does
_PROBE_NODES = 8  # nodes looked at, nearest the root first, for one whose saved tensor tells backward ran
_AFFECTED_MAX = 4096  # beyond this many blocks to give a role again (and a quarter of all), give all afresh
_SIZE = operator.itemgetter(ROW_SIZE)
# cuBLAS's workspace config when CUBLAS_WORKSPACE_CONFIG is unset (":KiB:count" pairs), by GPU generation.
_CUBLAS_DEFAULT = ":4096:2:16:8"
_CUBLAS_DEFAULT_SM90 = ":4096:8"
_CUBLASLT_DEFAULT_KIB = 1024


class _Unit:
    """A list or tuple of tensors as a walk found it, reused while it holds the same tensor objects.

    ``addresses``: the blocks its tensors that need no gradient lie in;
    ``graded``: the positions of those that do (their gradient or graph is
    walked again each cell: backward changes it without changing the list).
    Only ids are kept, never the tensors: the pass must keep nothing alive.
    """

    __slots__ = ("ids", "addresses", "graded")

    def __init__(self, ids, addresses, graded):
        self.ids, self.addresses, self.graded = ids, addresses, graded


class _Graph:
    """The blocks an autograd graph saved tensors in, as a walk found them from a tensor it keeps.

    Reused while the same tensor object (``tensor``, a weak reference: the
    pass must keep nothing alive) has the same root node (``token``), none
    of the blocks was born or freed since, and the saved tensor ``probe``
    points at still reads: a graph only changes when backward frees what
    it saved, and that runs through the root node first. ``probe``: the
    next_functions indices from the root to a node, and the name of a
    saved tensor of that node.
    """

    __slots__ = ("tensor", "token", "addresses", "probe")

    def __init__(self, tensor, token, addresses, probe):
        self.tensor, self.token, self.addresses, self.probe = tensor, token, addresses, probe


class _RoleWalk(ObjectWalk):
    """Meets tensors from the user's roots; collects, per role, the addresses of the blocks it met in that role.

    Blocks are known by address alone: CUDA's unified addressing gives each
    device its own addresses, so no device lookup per tensor is needed, and
    an integer hashes for free where a (device, address) tuple does not.
    Lists and tuples of many tensors become units (``units``); the rest of
    what the walk meets goes into ``found``.
    """

    paths = False

    def __init__(self, torch, index, budget_s, last_units, touched, last_graphs=None):
        super().__init__(torch, budget_s)
        # Each tensor's graph is walked whole (no nodes shared between roots): a graph reused alone must be complete.
        self.graph_seen = None
        self.optimizer_params = True
        self.index = index
        self.rows = index.rows  # address -> block row
        self.found = [set() for _ in ROLES]
        self.units = {}  # (id, role) -> _Unit, the units this walk reached
        self.graphs = {}  # id of a tensor -> _Graph, the graphs this walk reached
        self.reused_units = self.reused_graphs = 0
        self._saved = None  # the addresses the graph being walked saved tensors in
        self._unresolved = False  # a tensor it saved lies in no block
        self._last_graphs = last_graphs or {}
        self.partial = False  # the budget ran out before the walk ended
        # The last walk's units, reusable unless one of their blocks was born or freed since (``touched``).
        self._last_units, self._touched = last_units, touched

    # The hot path, for the lists of thousands of tensors notebooks keep: a
    # list whose tensors are the same objects as last cell, in blocks that
    # neither were born nor freed since, is not walked again; a new one is
    # walked a chunk at a time, each step one C call over the chunk.
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
        try:
            self._list(obj, kind, depth, via)
        except Budget:
            raise
        except Exception:  # a tensor that cannot be read: its list's others, one at a time
            for item in obj[:MAX_ITEMS]:
                super().value(item, kind, None, depth + 1, via)

    def _list(self, obj, kind, depth, via):
        items = obj if len(obj) <= MAX_ITEMS else obj[:MAX_ITEMS]
        if len(items) < _UNIT_MIN:
            self._items(items, kind, depth, via, None)
            return
        key, ids = (id(obj), _ROLE_OF_KIND[kind]), item_ids(items)
        unit = self._last_units.get(key)
        if unit is not None and unit.ids == ids and unit.addresses.isdisjoint(self._touched):
            self.reused_units += 1
            for i in unit.graded:
                self.tensor(items[i], kind, None)
        else:
            unit = self._items(items, kind, depth, via, ids)
        if unit is not None:
            self.units[key] = unit

    def _items(self, items, kind, depth, via, ids):
        """Walk a list's items; a _Unit of them when ``ids`` are given and they are all tensors, else None."""
        tensor_type = self.torch.Tensor
        addresses, graded, whole = set(), [], ids is not None
        for start in range(0, len(items), _CHUNK):
            if time.perf_counter() > self.deadline:
                raise Budget()
            chunk = items[start : start + _CHUNK]
            # by type, never isinstance: that reads a __class__ a class of the user's may compute
            tensors = [item for item in chunk if type(item) is tensor_type or issubclass(type(item), tensor_type)]
            if len(tensors) < len(chunk):
                whole = False
                for item in chunk:
                    if not issubclass(type(item), tensor_type):
                        self.value(item, kind, None, depth + 1, via)
            flags = list(map(self.fields.requires_grad, tensors))
            if any(flags):  # a gradient or a graph to follow
                if whole:
                    graded += itertools.compress(range(start, start + len(chunk)), flags)
                for t in itertools.compress(tensors, flags):
                    self.tensor(t, kind, None)
                tensors = list(itertools.compress(tensors, map(operator.not_, flags)))
            self._blocks(tensors, addresses)
        if not whole:
            self.found[_ROLE_OF_KIND[kind]] |= addresses
            return None
        return _Unit(ids, addresses, graded)

    def tensor(self, t, kind, path, via=None):
        self.record(t, kind, path)
        if id(t) in self.seen:
            return
        self.seen[id(t)] = t
        fields = self.fields
        if fields.requires_grad(t):  # most tensors a notebook keeps need none: one field read instead of three
            if fields.is_leaf(t):
                grad = fields.grad(t)
                if grad is not None:
                    self.record(grad, GRADIENT, None)
            else:
                fn = fields.grad_fn(t)
                if fn is not None:
                    self._graph_of(t, fn)

    def _graph_of(self, t, fn):
        """The blocks ``t``'s graph saved tensors in, reused from the last walk when it cannot have changed."""
        token = _node_token(fn)
        graph = self._last_graphs.get(id(t))
        if (
            graph is not None
            and token is not None
            and graph.token == token
            and graph.tensor() is t
            and graph.addresses.isdisjoint(self._touched)
            and _probe_reads(fn, graph.probe)
        ):
            self.reused_graphs += 1
        else:
            self._saved, self._unresolved = set(), False
            self.graph(fn, None)
            graph, self._saved = _Graph(weakref.ref(t), token, self._saved, None), None
            # A saved tensor in no block may lie in one a later table has: such a graph is walked each cell.
            graph.probe = _probe(fn, self.torch.Tensor) if token is not None and not self._unresolved else None
            if graph.probe is None:
                self.found[ACTIVATION_ROLE] |= graph.addresses
                return
        self.graphs[id(t)] = graph
        self.found[ACTIVATION_ROLE] |= graph.addresses

    def saved_tensor(self, tensor, path, via=None):
        """ObjectWalk.graph's saved tensors, without paths: most start a block, a dict lookup away."""
        address = self.fields.data_ptr(tensor)
        if address not in self.rows:
            address = self.block_of(tensor)
            if address is None:
                self._unresolved = True
                return
        self._saved.add(address)

    def note_hooks(self, module, path):
        """Nothing: what a module's hooks keep is the user's (HOOK), as what a name keeps is (VARIABLE)."""

    def _blocks(self, tensors, into):
        """Add the addresses of the blocks ``tensors`` lie in to the set ``into``: a few C calls over all of them."""
        try:
            pointers = set(map(self.fields.data_ptr, tensors))
        except Exception:  # a tensor without one storage (sparse): each the slow way
            pointers = missing = None
        else:
            missing = pointers.difference(self.rows)  # looks each up in the dict; never copies it
            into |= pointers - missing
            if not missing:
                return
        if missing is not None:  # views that do not start their storage, tensors on no device with blocks
            fields = self.fields
            tensors = list(itertools.compress(tensors, map(missing.__contains__, map(fields.data_ptr, tensors))))
            tensors = itertools.compress(tensors, map(self.index.has_device, map(fields.get_device, tensors)))
        for t in tensors:  # the slow way
            address = self.block_of(t)
            if address is not None:
                into.add(address)

    def _spend(self, steps):
        self.steps += steps
        if time.perf_counter() > self.deadline:
            raise Budget()

    def module(self, modules, path):
        """A module's parameters, their gradients and its buffers, each kind joined to blocks in a few C calls."""
        params = [p for _, _, a in modules for p in dict.values(a.get("_parameters") or {}) if p is not None]
        buffers = [b for _, _, a in modules for b in dict.values(a.get("_buffers") or {}) if b is not None]
        self._spend(len(params) + len(buffers))
        self._parameters(params)
        self._blocks(buffers, self.found[BUFFER_ROLE])

    def _parameters(self, params):
        self._blocks(params, self.found[PARAMETER_ROLE])
        self._blocks([g for g in map(self.fields.grad, params) if g is not None], self.found[GRADIENT_ROLE])

    def optimizer(self, opt, path):
        """The parameters an optimizer's groups name, their gradients, and its state's tensors."""
        tensor_type = self.torch.Tensor
        groups = self.param_groups(opt)
        params = [p for g in groups for p in dict.get(g, "params", ()) if issubclass(type(p), tensor_type)]
        state = [t for s in self.optimizer_state(opt) for t in dict.values(s) if issubclass(type(t), tensor_type)]
        self._spend(len(params) + len(state))
        self._parameters(params)
        self._blocks(state, self.found[OPTIMIZER_ROLE])

    def record(self, tensor, kind, path, via=None):
        address = self.block_of(tensor)
        if address is not None:
            self.found[_ROLE_OF_KIND[kind]].add(address)

    def block_of(self, tensor):
        """The address of the block a tensor's storage lies in, or None (not on a device, or no block)."""
        try:
            fields = self.fields
            address = fields.data_ptr(tensor)
            if address not in self.rows:  # a view that does not start its storage, or a storage inside a block
                device = fields.get_device(tensor)
                if not self.index.has_device(device):  # an optimizer's step count on the CPU, say
                    return None
                address = self.index.containing(device, fields.untyped_storage(tensor).data_ptr())
        except Exception:  # sparse, meta, or freed storage
            return None
        return address


class RolePass:
    """The role pass of one kernel: runs after each cell and keeps what it found for the next one.

    Between two cells it keeps its answer (each block's role), the units and
    graphs it walked, and what the rest of the walk found; a cell then costs
    the walk of what is not reused (modules, optimizers, small values, new
    lists and graphs), and a new role for each block the cell touched or
    whose holders changed.

    What a reused unit cannot see is a tensor that stayed the same object
    but changed storage (``set_``, ``.data =``) or started to need a
    gradient. When its new block is born and nothing reached it, the pass
    walks again without reuse (``_lost``); only a storage swapped for one
    that already lived, with no block born or freed, goes unseen until the
    list changes.

    A reused graph (``_Graph``) sees backward free what the graph saved by
    the probe, a saved tensor next to the root, which backward through the
    root frees first; and an in-place op on the kept tensor by its new root
    node. It cannot see backward run from inside the graph, not through its
    root, that freed only tensors other holders keep alive (a freed tensor
    nothing else keeps frees its block, and a block freed calls for a new
    walk), nor a tensor it
    saved changed in place since (which breaks that graph's backward): that
    block stays ``activation``, which it is (the graph still holds it),
    where a pass from nothing, which cannot read such a tensor, calls it by
    its other holder.
    """

    def __init__(self, budget_s=DEFAULT_BUDGET_S):
        self.budget_s = budget_s
        self._workspace_sizes = None
        self._forget()

    def _forget(self):
        self._index = BlockIndex()
        self._code_of = None  # address -> role letter (protocol.ROLE_CODES), of the last complete answer
        self._by_code = None  # per role, the addresses of its blocks in that answer
        self._totals = [0] * len(ROLES)
        self._found = [set() for _ in ROLES]  # what the last walk found outside units
        self._units = {}
        self._graphs = {}
        self._runs = None
        self._marks = None  # bytearray: each block's role letter in the index's order (blocks on one device)
        self._last_by_block = None  # the answer of a partial pass, kept after the state is dropped

    def _letters(self, recoded):
        """Each block's role letter in wire order; only the blocks in ``recoded`` looked up (None: all)."""
        index, code_of = self._index, self._code_of
        marks = None
        if recoded is not None and self._marks is not None:
            marks = index.follow(self._marks, lambda addresses: "".join(map(code_of.__getitem__, addresses)).encode())
        if marks is None or not index.one_device:
            letters = "".join(map(code_of.__getitem__, index.order))
            self._marks = bytearray(letters, "ascii") if index.one_device else None
            return letters
        # The blocks the update inserted have their letters; the others recoded are set one C call a step.
        recoded = recoded.difference(index.inserted)
        positions = map(bisect.bisect_left, itertools.repeat(index.starts), recoded)
        letters = map(_BYTE_OF_CODE.__getitem__, map(code_of.__getitem__, recoded))
        collections.deque(map(marks.__setitem__, positions, letters), 0)
        self._marks = marks
        return marks.decode("ascii")

    def run(self, shell, blocks, changes=None):
        """Roles of ``blocks`` ({(device, address): block row}, compact.py) after a cell: a JSON-safe summary.

        ``{"bytes": {role: bytes}, "partial", "elapsed_ms", "reused", "blocks"}``;
        ``self.by_block`` keeps {(device, address): role index} of the answer.
        ``changes``: block_index.Changes from the log; without them the
        tables are compared.
        """
        started = time.perf_counter()
        torch = torch_probe.torch_module()
        with collector_paused():  # thousands of sets and tuples: no full collection in the middle
            touched = self._index.update(blocks, changes)
            walk = self._walk(torch, shell, touched if self._code_of is not None else None)
            partial = walk is not None and walk.partial
            reused = walk is not None and (walk.reused_units or walk.reused_graphs)
            if reused and not partial and self._lost(walk, touched, torch):
                walk = self._walk(torch, shell, None)  # something reused may hide the tensor: walk everything again
                partial = walk.partial
            recoded = self._assign(torch, walk, touched, partial)
            changed = recoded is None or bool(recoded)
            if changed or self._runs is None or touched:
                self._runs = _letter_runs(self._letters(recoded))
        answer = {"bytes": dict(zip(ROLES, self._totals)), "partial": partial, "blocks": self._runs}
        answer.update(elapsed_ms=_ms(started), reused=not changed and not touched)
        self._last_by_block = None
        if partial:  # a partial answer is not worth building on: the next cell starts again
            by_block = self.by_block
            self._forget()
            self._last_by_block = by_block
        return answer

    def _walk(self, torch, shell, touched):
        """The walk of the user's roots (the last units and graphs reused unless ``touched`` is None), or None."""
        if torch is None:
            return None
        reuse = touched is not None
        walk = _RoleWalk(
            torch,
            self._index,
            self.budget_s,
            self._units if reuse else {},
            touched,
            self._graphs if reuse else None,
        )
        try:
            with warnings.catch_warnings():  # a deprecated attribute read must not print into the user's cell
                warnings.simplefilter("ignore")
                walk.walk_roots(shell)
        except Budget:
            walk.partial = True
        return walk

    def _lost(self, walk, touched, torch):
        """Whether a block born this cell was reached by nothing: a reused unit may hold it.

        The one change a unit cannot see is a tensor of the same object whose
        storage moved or which now needs a gradient; its new block is born, so
        a born block nothing reached calls for a walk without reuse.
        """
        rows = self._index.rows
        lost = touched & rows.keys()
        for addresses in itertools.chain(walk.found, (unit.addresses for unit in walk.units.values())):
            lost -= addresses  # iterates the smaller side
        workspace = self.workspace_sizes(torch)
        return any(rows[a][ROW_REQUESTED] not in workspace for a in lost)

    def _assign(self, torch, walk, touched, partial):
        """Give each block its role (the first in ROLES that reached it).

        Returns the addresses of the allocated blocks whose letter is new or
        changed, or None when every block was given its role afresh.
        """
        found = walk.found if walk is not None else [set() for _ in ROLES]
        units = walk.units if walk is not None else {}
        by_role = [[addresses] for addresses in found]
        for (_, role), unit in units.items():
            by_role[role].append(unit.addresses)
        rows = self._index.rows
        affected = None
        if self._code_of is not None and not partial and touched is not None:
            affected = set(touched)
            for role in range(WORKSPACE_ROLE):
                affected |= found[role] ^ self._found[role]
            for key, unit in self._units.items():
                now = units.get(key)
                if now is not unit:
                    affected |= unit.addresses if now is None else unit.addresses ^ now.addresses
            for key, unit in units.items():
                if key not in self._units:
                    affected |= unit.addresses
            if len(affected) > _AFFECTED_MAX and len(affected) > len(rows) // 4:
                affected = None  # most blocks: set operations over all of them are cheaper than one by one
        workspace = self.workspace_sizes(torch) if not partial else ()
        self._found, self._units = found, units
        self._graphs = walk.graphs if walk is not None and not partial else {}
        if affected is None:
            self._assign_all(by_role, workspace)
            return None
        return self._assign_some(affected, by_role, workspace)

    def _assign_all(self, by_role, workspace):
        rows = self._index.rows
        assigned, code_of, by_code = set(), {}, [set() for _ in ROLES]
        for role in range(WORKSPACE_ROLE):
            addresses = by_code[role] = set().union(*by_role[role]) - assigned
            assigned |= addresses
        rest = rows.keys() - assigned
        by_code[WORKSPACE_ROLE] = {a for a in rest if rows[a][ROW_REQUESTED] in workspace} if workspace else set()
        by_code[UNKNOWN_ROLE] = rest - by_code[WORKSPACE_ROLE]
        # The bytes of the largest role are what the others leave: a sum in table order, not a lookup a block.
        largest = max(range(len(ROLES)), key=lambda role: len(by_code[role]))
        totals = [0 if role == largest else sum(map(_SIZE, map(rows.__getitem__, a))) for role, a in enumerate(by_code)]
        totals[largest] = sum(map(_SIZE, rows.values())) - sum(totals)
        for role, addresses in enumerate(by_code):
            code_of.update(dict.fromkeys(addresses, _CODES[role]))
        self._code_of, self._by_code, self._totals = code_of, by_code, totals

    def _assign_some(self, affected, by_role, workspace):
        """Roles afresh for the ``affected`` addresses alone: set operations per role, no step per block in Python."""
        rows, replaced, code_of, by_code, totals = (
            self._index.rows,
            self._index.replaced,
            self._code_of,
            self._by_code,
            self._totals,
        )
        remaining, hits = affected & rows.keys(), []
        for role in range(WORKSPACE_ROLE):
            hit = set()
            for addresses in by_role[role]:
                hit |= remaining & addresses  # iterates the smaller side
            remaining -= hit
            hits.append(hit)
        spare = {a for a in remaining if rows[a][ROW_REQUESTED] in workspace} if workspace and remaining else set()
        hits += [spare, remaining - spare]
        collections.deque(map(code_of.pop, affected.difference(rows), itertools.repeat(None)), 0)  # freed blocks
        recoded = set()
        for role, hit in enumerate(hits):
            members = by_code[role]
            old = members & affected  # iterates the smaller side
            if old:  # what the last answer counted, at the size the block had then
                totals[role] -= sum(map(_SIZE, map(replaced.get, old, map(rows.get, old))))
                members -= old
            if hit:
                totals[role] += sum(map(_SIZE, map(rows.__getitem__, hit)))
                members |= hit
                new = hit - old
                code_of.update(dict.fromkeys(new, _CODES[role]))
                recoded |= new
        return recoded

    @property
    def by_block(self):
        """{(device, address): role index} of the last answer (built when asked: the live path needs none)."""
        if self._code_of is None:
            return self._last_by_block or {}
        code_of = self._code_of
        return {(row[ROW_DEVICE], a): _ROLE_OF_CODE[code_of[a]] for a, row in self._index.rows.items()}

    def after_cell(self, shell, blocks, changes=None):
        """The cell's roles for its snapshot message, or None when the pass failed (the snapshot goes anyway)."""
        try:
            return self.run(shell, blocks, changes)
        except Exception:
            self._forget()
            return None
        except BaseException:  # an interrupt: the index followed a capture the rest of the pass did not
            self._forget()
            raise

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
    return _letter_runs("".join(map(_CODES.__getitem__, roles_in_order)))


def _letter_runs(letters):
    return {"count": len(letters), "runs": _REPEATS.sub(lambda m: f"{len(m.group())}{m.group()[0]}", letters)}


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


def _node_token(fn):
    """What tells an autograd node from any other a tensor may get: its type and its sequence number, or None."""
    try:
        return type(fn), fn._sequence_nr()
    except Exception:  # a node type without one: its graph is walked each cell
        return None


def _probe(root, tensor_type):
    """(indices from ``root``, name) of a saved tensor near the root, or None when none is readable."""
    queue = [(root, ())]
    for fn, path in queue:
        for name in saved_tensor_names(fn):
            try:
                if issubclass(type(getattr(fn, name)), tensor_type):
                    return path, name
            except Exception:  # freed by backward
                return None
        if len(queue) < _PROBE_NODES:
            children = getattr(fn, "next_functions", ())
            queue += [(child, (*path, i)) for i, (child, _) in enumerate(children) if child is not None]
        if len(queue) > _PROBE_NODES:
            del queue[_PROBE_NODES:]
    return None


def _probe_reads(root, probe):
    """Whether the saved tensor ``probe`` names still reads: backward with retain_graph=False frees it."""
    path, name = probe
    fn = root
    try:
        for i in path:
            fn = fn.next_functions[i][0]
        getattr(fn, name)
    except Exception:
        return False
    return True


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
