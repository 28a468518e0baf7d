"""Who holds a block: the one question only the live process can answer.

For each requested block (device, address, size) it finds the tensors whose
storage lies in the block and the path a user would type to reach them:
user globals and what they contain (``preds[3]``, ``cache['x']``), the output
cache (``Out[12]``), the last traceback's frames, autograd graphs reached
through ``grad_fn`` saved tensors, module parameters, buffers and hooks, and
optimizer state, and the locals of the user's functions running in other
threads. A holder whose path starts at something no variable shows (an
output history entry, a kept exception, a function's closure, a running
thread) says what that is in its ``reference`` (walk.Reference). Read-only
and time-bounded; it returns plain data and keeps no reference to anything
it visited.
"""

import bisect
import re
import time
import warnings

from . import torch_probe
from .log import collector_paused
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
# Holders listed per block, by group: the paths of one group differ only in their last index (preds[0] ... preds[7],
# each the same kind of holder), so a weight that eight graphs saved lists all eight, as the batches each list theirs;
# a block that kept more than these lists says so (``"more": true``).
MAX_HOLDERS = 4  # groups of holders listed per block
MAX_SIBLINGS = 64  # paths listed per group
# Helpers before ``more`` listed 4 holders at most and did not say whether they found more: a row that lists that
# many says ``more`` (true or false), so a reader tells a complete list from an older helper's that stopped there.
SAYS_MORE_FROM = 4

_LAST_INDEX = re.compile(r"^(.*)\[\d+\]([^\[\]]*)$")
_OUTPUT_HISTORY = ("output", "output-name")  # the references of IPython's output history: Out[n], and _n, _, __


def _group(holder):
    """What a holder has in common with its siblings: kind, hook, reference type, and its path up to its last index.

    The output history's names (``Out[4]``, ``_4``, ``_``, other outputs' too)
    are one group, each path taken after its name: else a list the cell
    showed fills three of a block's groups, and the name that keeps it after
    they go (``keep[0]``) is cut."""
    path, reference = holder["path"], holder.get("reference") or {}
    type_, name = reference.get("type"), reference.get("name")
    if type_ in _OUTPUT_HISTORY and name and path.startswith(name):
        path, type_ = path[len(name) :], _OUTPUT_HISTORY[0]
    m = _LAST_INDEX.match(path)
    stem = (m.group(1), m.group(2)) if m else (path, None)
    return holder["kind"], holder.get("via"), type_, stem


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
    """One holder search: names every path to the requested blocks.

    A container reached by two paths is walked once, under the first; the
    other paths reach what it holds as well, and the user must let go of
    each (``keep = acts``: ``del acts`` frees nothing). So each other path
    met is kept as the container's alias, and once the walk is done every
    holder found under the container is named under each alias too
    (``keep[0]`` beside ``acts[0]``; a name of a hook's list is the hook's).
    A path that meets the container again through itself (a module's
    back-reference to its parent) is a cycle, not an alias; nor is a hook's
    own reference to the container it fills. An alias met inside another
    container is named under that one's other paths too (``cfg2['acts'][0]``
    where ``cfg = {'acts': acts}``, ``cfg2 = cfg``). No user code runs: ids
    and path strings.
    """

    def __init__(self, torch, blocks, budget_s):
        super().__init__(torch, budget_s)
        self.index = _BlockIndex(blocks)
        self.found = {}
        self.groups = {}  # per block: paths listed per group
        self.more = set()  # blocks with holders found beyond those listed
        # id of a container -> [(path, kind, via, the containers on its way)] of the other paths that met it
        self.aliases = {}
        self.listed = []  # (block, kind, path, via, the containers on its way) of each holder the walk listed

    def met_again(self, obj, kind, path, via):
        aliases = self.aliases.setdefault(id(obj), [])
        if len(aliases) < MAX_ALIASES:
            aliases.append((path, kind, via, tuple(self.within)))

    def record(self, tensor, kind, path, via=None):
        try:
            on = self.fields.device(tensor)
            if on.type == "cuda":
                device = on.index
            elif on.type == "cpu":
                device = -1  # lets the tests run on CPU tensors
            else:
                return
            address = self.fields.untyped_storage(tensor).data_ptr()
        except Exception:  # sparse, meta, or freed storage
            return
        block = self.index.find(device, address)
        where = None if block is None else (block["device"], block["address"])
        if where is not None and self.add(where, kind, path, via):
            self.listed.append((where, kind, path, via, tuple(self.within)))

    def add(self, where, kind, path, via):
        """List a holder of the block at ``where``; False when it is listed already or over the limits."""
        holders = self.found.setdefault(where, [])
        # A buffer is a parameter in the holders' words (the leak finder's reasons).
        holder = {"kind": PARAMETER if kind == BUFFER else kind, "path": path}
        if isinstance(via, Reference):
            holder["reference"] = via.holder_fields(path)
            via = via.hook
        if via:
            holder["via"] = via
        if holder in holders:
            return False
        groups = self.groups.setdefault(where, {})
        group = _group(holder)
        listed = groups.get(group)
        if listed is None and len(groups) >= MAX_HOLDERS or listed is not None and listed >= MAX_SIBLINGS:
            self.more.add(where)
            return False
        groups[group] = (listed or 0) + 1
        holders.append(holder)
        return True

    def name_aliases(self):
        """Each holder listed under a container met by other paths, named under those paths too, after the
        holders the walk found and within the same limits; those no name shows first (a closure's, the output
        cache's), which keep the memory after the names go.

        A holder that had its container's kind and reference takes the other
        path's (``Out[4][0]`` is the output cache's); a parameter, gradient,
        optimizer state or graph stays one, a graph taking the other path's
        reference (the output it is reached through). A holder whose
        reference was made inside the container (a kept exception, a
        closure's variable) names the container's first path in it: it is
        left out under the others rather than named wrong.

        Over a block's limits, a way from a root none of its holders starts
        at (``best`` beside ``history``) comes before another way from a root
        named already, and fewer hops before more: each root is one more
        thing the user must let go of."""
        found = []
        known = {}  # id of a container -> its other paths, worked out once a search
        roots = {}  # per block: the roots the walk's own holders of it start at
        for where, kind, path, via, within in self.listed:
            for i, (container, first_kind, first_path, first_via) in enumerate(within):
                if path != first_path and not _steps_into(path, first_path):
                    continue  # reached from the container by another name (a class's attribute)
                hook_rest = _made_inside(via, first_via, first_path)
                if hook_rest is False:
                    continue  # a reference made inside the container names its first path
                rest = path[len(first_path) :]
                ways = known.get(container)
                if ways is None:
                    ways = self.ways_to(container, first_kind, first_path, known)[0]
                inside = None  # the containers between this one and the holder
                for hops, way, way_kind, way_via, through, root in ways:
                    self.tick()
                    # a way back through what the container holds is a cycle (met directly: it steps into it)
                    if hops and inside is None:
                        inside = {c[0] for c in within[i + 1 :]}
                    if hops and not through.isdisjoint(inside):
                        continue
                    kind_, via_ = _named_under_way(kind, via, first_kind, hook_rest, way, way_kind, way_via)
                    named = roots.get(where)
                    if named is None:
                        named = roots[where] = {_root(h["path"]) for h in self.found.get(where, ())}
                    order = _ALIAS_ORDER.get(kind_, len(_ALIAS_ORDER)), root in named, hops
                    found.append((order, where, kind_, way + rest, via_))
        found.sort(key=lambda f: f[0])
        for _, where, kind, path, via in found:
            self.add(where, kind, path, via)

    def ways_to(self, container, first_kind, first_path, known, visiting=frozenset()):
        """The other paths to a walked container: each met (its aliases), and each of those under the other
        paths to what it was met in, ``cfg2['acts']`` where ``cfg = {'acts': acts}`` and ``cfg2 = cfg``, since
        the walk went into neither ``cfg2`` nor ``cfg['acts']``. A way back through the container itself is a
        cycle, not another way; nor is a hook's own reference to the container it fills. At most MAX_WAYS, the
        fewest hops first, each going back through at most MAX_HOPS containers; a container being worked out is
        not gone through again, and what was worked out without it is kept for no other.

        Returns the ways, each as (hops, path, kind, via, ids of the containers it goes through, its root), and
        whether they are all of them."""
        ways = known.get(container)
        if ways is not None:
            return ways, True
        direct, derived, complete = [], [], True
        top = not visiting
        visiting = visiting | {container}
        for alias, kind, via, within in self.aliases.get(container, ()):
            self.tick()
            if first_kind == HOOK and kind == HIDDEN:
                continue  # the hook's own closure or global: the hook, which the holder's via names
            if not _steps_into(alias, first_path):  # else met again through itself: a cycle
                direct.append((0, alias, kind, via, frozenset(c[0] for c in within), _root(alias)))
            for j, (outer, outer_kind, outer_path, outer_via) in enumerate(within):
                if outer == container or not _steps_into(alias, outer_path):
                    continue
                hook_rest = _made_inside(via, outer_via, outer_path)
                if hook_rest is False:
                    continue  # a reference made inside what it was met in names that one's first path
                if outer in visiting or len(visiting) > MAX_HOPS:
                    complete = False  # worked out in part: kept for no other container
                    continue
                rest = alias[len(outer_path) :]
                on_way = frozenset(c[0] for c in within[j:])  # the way goes through outer and what is below it
                outer_ways, outer_complete = self.ways_to(outer, outer_kind, outer_path, known, visiting)
                complete = complete and outer_complete
                for hops, way, way_kind, way_via, through, root in outer_ways:
                    if _steps_into(way + rest, first_path):
                        continue
                    named = _named_under_way(kind, via, outer_kind, hook_rest, way, way_kind, way_via)
                    derived.append((hops + 1, way + rest, *named, through | on_way, root))
        ways = sorted(direct + derived, key=lambda w: w[0])[:MAX_WAYS]  # the fewest hops first
        if top or complete:
            known[container] = ways
        return ways, complete


def _made_inside(via, container_via, container_path):
    """Where a holder's reference was made, for naming it under the other ways to the container it was met in:
    None where it is the container's own (the holder is named as the container is), the rest of a hook's list
    path where a hook's reference was made for a list inside the container (_hook_made_inside), False for any
    other reference made inside it (a kept exception, a closure's variable), which names the container's first
    path and is left out under the others."""
    if via is container_via:
        return None
    rest = _hook_made_inside(via, container_path)
    return False if rest is None else rest


def _named_under_way(kind, via, container_kind, hook_rest, way, way_kind, way_via):
    """The kind and via of a holder met inside a container under another way to it; ``hook_rest`` as _made_inside
    gives it: a hook's list inside the container is the same list under this way."""
    if hook_rest is None:
        return _named_under(kind, via, container_kind, way_kind, way_via)
    return _hook_list_under(via, way, hook_rest, way_kind, way_via)


def _hook_made_inside(via, container_path):
    """Where a hook's reference was made for a list inside the container at ``container_path``, the rest of
    that list's path (``['acts']`` of ``state['acts']`` in ``state``), which names the list under any way to
    the container; None for any other via."""
    if not isinstance(via, Reference) or via.fields["type"] != "hook":
        return None
    name = via.fields["name"]
    return name[len(container_path) :] if name == container_path or _steps_into(name, container_path) else None


def _hook_list_under(via, way, rest, way_kind, way_via):
    """The kind and via of what a hook's list inside a container keeps, under another way to the container: under
    a name the user typed the list's own hook reference, named by that way (``state2['acts']``); under the output
    cache, a traceback or a closure that way's, as the hook's own list met there is (``Out[4][0]``): a reference
    names what a user types, never ``sys.last_traceback: f() local s['acts']``."""
    if way_kind in (VARIABLE, HOOK):
        return HOOK, Reference("hook", way + rest, hook=via.hook)
    return way_kind, way_via


def _named_under(kind, via, first_kind, way_kind, way_via):
    """The kind and via of a holder met inside a container (with the container's own reference) under another
    way to the container: the way's where it had the container's kind, else its own (a graph taking the way's
    reference)."""
    if kind == first_kind or kind == HIDDEN and first_kind == VARIABLE and way_kind != VARIABLE:
        return way_kind, way_via  # a hook object's holder is hidden under a variable only, as the walk names it
    return kind, way_via if kind == GRAPH and isinstance(way_via, Reference) else via


# Where a path steps into a container: an index, an attribute, or a hidden holder's words (``score: closure ...``).
_PATH_STEPS = frozenset("[.:{")
MAX_ALIASES = 8  # other paths kept per container
MAX_HOPS = 4  # containers a way to a container goes back through (cfg2 -> cfg -> acts: one)
MAX_WAYS = 16  # other paths a container's holders are named under, its aliases' included
# Which aliases are listed first when a block's holders are over the limits: what keeps the memory once names go.
_ALIAS_ORDER = {kind: i for i, kind in enumerate((HIDDEN, HOOK, TRACEBACK, OUTPUT_CACHE, GRAPH))}


def _root(path):
    """Where a path starts: the name, or the words of what no name shows, before its first step (``history`` of
    ``history[1]['prev']``, ``cb`` of ``cb: closure variable s``)."""
    return _ROOT.match(path).group()


_ROOT = re.compile(r"[^\[.:{]*")


def _steps_into(path, container):
    """Whether ``path`` goes through ``container``'s path (``model.lin._parent`` through ``model``)."""
    return path.startswith(container) and path[len(container) : len(container) + 1] in _PATH_STEPS


def _orphans(walk, blocks):
    """Tensors in blocks no visible root reached: found through the garbage collector's list."""
    import gc  # noqa: PLC0415 - only this last step needs it

    missing = [b for b in blocks if (b["device"], b["address"]) not in walk.found]
    if not missing:
        return
    walk.index = _BlockIndex(missing)
    tensor_type = walk.torch.Tensor
    with warnings.catch_warnings(), torch_probe.torch_functions_off(walk.torch):
        # isinstance() on some deprecated torch objects warns; the search must stay silent
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            walk.tick()
            if issubclass(type(obj), tensor_type):  # never isinstance: a user's __class__ may run
                shape, dtype = tuple(walk.fields.shape(obj)), str(walk.fields.dtype(obj)).replace("torch.", "")
                walk.record(obj, UNREACHABLE, f"a {shape} {dtype} tensor")


def find_holders(shell, blocks, budget_s=DEFAULT_BUDGET_S):
    """Holders of ``blocks`` (dicts with device, address, size): a JSON-safe answer.

    ``{"blocks": [{"device", "address", "holders": [{"kind", "path"}], "more"}], "partial", "elapsed_ms"}``
    (``more``, on a row that lists SAYS_MORE_FROM holders or more: whether it found more than it lists);
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
    with collector_paused():  # a tuple per container and holder: no full collection over what the walk holds
        try:
            walk.walk_roots(shell)
        except Budget:
            partial = True
        try:
            walk.name_aliases()  # the paths met so far are paths still, when the walk ran out of time
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
            row = {"device": b["device"], "address": b["address"], "holders": holders}
            more = (b["device"], b["address"]) in walk.more
            if more or len(holders) >= SAYS_MORE_FROM:
                row["more"] = more
            answer.append(row)
        elif not partial:
            answer.append({"device": b["device"], "address": b["address"], "holders": [{"kind": NATIVE, "path": ""}]})
    return {"blocks": answer, "partial": partial, "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)}
