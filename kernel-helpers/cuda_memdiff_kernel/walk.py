"""The object walk that holders.py and roles.py share: from the roots a user
can see (their globals, the output cache, the last traceback) to every tensor
they keep alive, each met with the kind of thing that keeps it (a variable,
a module's parameter, a gradient, optimizer state, an autograd graph, or
something no name shows: a function's closure or default argument, a paused
generator's frame, a function cache, an exception's traceback, the locals of
a function of theirs running in another thread).

A subclass says what a tensor met means (``record``). Paths are built only
when a subclass asks for them (``paths = True``): the per-cell role pass
needs kinds, not names, and skips the string work.
"""

import collections
import dis
import functools
import gc
import inspect
import itertools
import os
import re
import sys
import sysconfig
import threading
import time
import types

from . import protocol, torch_probe

# Holder kinds, one definition with the frontend (protocol.HOLDER_KINDS, in its order).
(VARIABLE, GRAPH, OUTPUT_CACHE, TRACEBACK, PARAMETER, GRADIENT, OPTIMIZER, HOOK, UNREACHABLE, NATIVE, HIDDEN) = (
    protocol.HOLDER_KINDS
)
# The walk tells module buffers from parameters for the roles pass; holder answers call both "parameter".
BUFFER = "buffer"

MAX_DEPTH = 4  # containers inside containers inside a global
MAX_ITEMS = 100_000  # elements looked at per container
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "_ih", "_oh", "_dh", "_sh"})
_SCALARS = (str, bytes, int, float, bool, type(None))
_SEQUENCES = (list, tuple, collections.deque)
_CONTAINERS = (dict, list, set, collections.deque)  # what a hook may keep things in
# What keeps values where no name shows them: met in the walk, followed after every visible root.
_FUNCTION_CACHE = type(functools.lru_cache(maxsize=None)(lambda: None))
_LINKS = (
    types.FunctionType,
    functools.partial,
    _FUNCTION_CACHE,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
)
# A module hook whose closure, defaults or arguments the walk reads (another callable's code is the user's).
_HOOKS = (types.FunctionType, functools.partial)
_NUMBERS = (str, int, float, bool)
# The built-in values with no contents, whose repr is the interpreter's own: exactly these types, no subclass.
_KNOWN_REPR = frozenset((*_SCALARS, complex))
_PLAIN_OR_TUPLE = _KNOWN_REPR | {tuple}
_PUBLIC_NAME = re.compile("[^_]").match
# A class's own namespace and method resolution order, read without its metaclass's code.
_TYPE_DICT = type.__dict__["__dict__"].__get__
_TYPE_MRO = type.__dict__["__mro__"].__get__
_TYPE_NAME = type.__dict__["__name__"].__get__
# What a container's items are read with: the built-in type's own iterator, never a subclass's __iter__ or items.
_ITERATORS = (
    (list, list.__iter__),
    (tuple, tuple.__iter__),
    (collections.deque, collections.deque.__iter__),
    (set, set.__iter__),
    (frozenset, frozenset.__iter__),
)
# The dicts a torch module keeps its hooks in, and the words a holder's ``via`` says of them.
_HOOK_DICTS = (
    ("_forward_hooks", "forward hook"),
    ("_forward_pre_hooks", "forward pre hook"),
    ("_backward_hooks", "backward hook"),
    ("_backward_pre_hooks", "backward pre hook"),
)
# What an exception keeps, read as stored (an error class of the user's may compute its attributes).
_EXCEPTION_TRACEBACK = BaseException.__dict__["__traceback__"].__get__
_EXCEPTION_ARGS = BaseException.__dict__["args"].__get__
_EXCEPTION_CHAIN = (
    ("__cause__", BaseException.__dict__["__cause__"].__get__),
    ("__context__", BaseException.__dict__["__context__"].__get__),
)
# The last error of a failed cell, as the interpreter keeps it (``last_exc`` from Python 3.12).
_LAST_ERRORS = ("last_value", "last_exc")
_NONES = itertools.repeat(None)
# Where installed packages live: their classes are not the user's.
_INSTALLED = re.compile(r"[\\/](site|dist)-packages[\\/]")
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
# The words between a function or generator and its variable in a hidden holder's path (the variable is its place).
CLOSURE_VARIABLE = ": closure variable "
GENERATOR_LOCAL = ": generator frame local "
# Whether another thread's running frame can be read without writing to it: from 3.13 f_locals is a view (PEP 667).
RUNNING_LOCALS_READABLE = sys.version_info >= (3, 13)
# Per autograd node type, the names of its saved-tensor attributes: dir() is slow, the types are few.
_SAVED_NAMES = {}
_SAVED_TENSOR_NAMES = {}  # the same, less those seen to hold no tensor


class Budget(Exception):
    """Raised inside the walk when the time budget is spent."""


class Reference:
    """What keeps a holder's memory where its path alone does not say (protocol.HOLDER_REFERENCES): something no
    variable shows at its start, or the container a module hook appends to. Passed down the walk (``via``) from
    where the holder's kind is decided and sent as the holder's ``reference``: the frontend reads it, never the
    path. ``name`` is what a user types to reach it (``Out[2]``, ``err``, the function ``score``, the list
    ``acts``); a closure's or a generator's variable is the ``place`` after ``place_at`` in the path; ``hook``
    names a container's hook (the holder's ``via``)."""

    __slots__ = ("fields", "place_at", "hook", "settled")

    def __init__(self, type_, name=None, place_at=None, hook=None, **facts):
        self.fields = {"type": type_, **({} if name is None else {"name": name}), **facts}
        self.place_at, self.hook = place_at, hook
        self.settled = True  # False: a hook's dict, whose list met deeper is the container to name

    def holder_fields(self, path):
        if self.place_at is None or path is None:
            return self.fields
        return {**self.fields, "place": path[self.place_at :]}


class ObjectWalk:
    """One walk over the user's roots; subclasses implement ``record``."""

    paths = True

    def __init__(self, torch, budget_s):
        self.torch = torch
        self.fields = torch_probe.tensor_fields(torch)  # a tensor's own fields, read past its class's code
        self.deadline = time.perf_counter() + budget_s
        self.steps = 0
        # id -> object: holding what was seen keeps ids from being reused mid-walk.
        self.seen = {}
        # ids of objects seen only at MAX_DEPTH, whose contents beyond the limit were not walked.
        self.cut = set()
        # id of a container a module hook may fill -> the hook's words; the containers, kept until the walk ends
        self.hook_lists = {}
        self.hook_kept = []
        self.hook_indexes = {}  # id of a dict a hook names -> (the dict, its values by plain key)
        # Autograd nodes visited; None: each graph afresh (holders names every path to a graph).
        self.graph_seen = None
        # Parameters reached through an optimizer's param_groups (a model only the optimizer names).
        self.optimizer_params = False
        # Functions, caches and generators met, each with how it was reached: followed once the visible roots are
        # walked, so that what a name also reaches is seen under that name first.
        self.links = collections.deque()
        # The user's classes whose attributes were walked (id -> class): once a walk, however many instances.
        self.classes = {}
        # id of a class -> (the class, its instances' __dict__ getter, their slots): found once a walk.
        self.layouts = {}
        self.shell = None
        # The containers being walked, outermost first, each as (id, kind, path, via): a holder's way from its root.
        self.within = []

    def record(self, tensor, kind, path, via=None):
        raise NotImplementedError

    def met_again(self, obj, kind, path, via):
        """An object (not a tensor) walked already under another path, met again here: not walked again."""

    def tick(self):
        self.steps += 1
        if self.steps % 512 == 0 and time.perf_counter() > self.deadline:
            raise Budget()

    def child(self, path, fmt, key):
        """``path`` extended by ``fmt`` with ``key``; nothing when paths are not wanted."""
        return fmt.format(path, key) if self.paths else None

    # -- roots -------------------------------------------------------------
    def walk_roots(self, shell):
        """Every root in order of how visible it is: globals, the output cache, the last traceback, then what
        only a closure, a default argument, a generator's frame or a function cache keeps."""
        self.shell = shell
        with torch_probe.torch_functions_off(self.torch):
            self._walk_roots(shell)

    def _walk_roots(self, shell):
        names = list(user_names(shell))
        module_type = self.torch.nn.Module
        for name, value in names:
            if issubclass(type(value), module_type):
                try:
                    self.note_hooks(value, name)
                except Budget:
                    raise
                except Exception:  # a module that cannot be read: its hooks' containers stay plain variables
                    pass
        for name, value in names:
            self.value(value, VARIABLE, name)
        for count, value in list(shell.user_ns.get("Out", {}).items()):
            name = f"Out[{count}]" if self.paths else None
            self.value(value, OUTPUT_CACHE, name, via=self.reference("output", name, count=count))
        for name, value in output_names(shell):
            facts = _output_name_facts(name) if self.paths else {}
            self.value(value, OUTPUT_CACHE, name, via=self.reference("output-name", name, **facts))
        last = self.reference("last-traceback")
        self.traceback(getattr(sys, "last_traceback", None), TRACEBACK, "sys.last_traceback", last)
        # its frames are sys.last_traceback's, walked already; from 3.12 last_exc is last_value: one error, one name
        for name, error in _each_once((name, getattr(sys, name, None)) for name in _LAST_ERRORS):
            self.value(error, TRACEBACK, f"sys.{name}", via=last)
        self.threads()
        while self.links:
            self.link(*self.links.popleft())

    def traceback(self, tb, kind, where, via=None):
        """The locals of a traceback's frames in the user's functions, up to a part another way walked already."""
        while tb is not None and id(tb) not in self.seen:
            self.seen[id(tb)] = tb
            frame = tb.tb_frame
            try:
                locals_ = frame_locals(frame) if is_user_function(frame, self.shell) else ()
            except Exception:  # a frame that cannot be read skips itself
                locals_ = ()
            for local, value in locals_:
                path = f"{where}: {frame.f_code.co_name}() local {local}" if self.paths else None
                self.value(value, kind, path, via=via)
            tb = tb.tb_next

    def threads(self):
        """What the user's code running in other threads keeps (``Thread(target=train).start()``): the
        arguments its Thread was started with, which it keeps until its function returns, and, from Python 3.13,
        the locals of the user's functions in its stack, outermost first. No name the user typed shows them.

        Before 3.13 a running frame's locals read only through a cache that
        the interpreter writes back into the frame whenever a trace or
        profile function (a debugger's, a profiler's) returns: taking the
        names out of it deletes the running function's variables, leaving
        them in keeps their old values (last step's batch) alive. Neither is
        the helper's to do, so there its frames are not read (helper-80).

        A thread is walked only while it runs code of the user's own (a
        cell's function, a module of theirs): the kernel's threads, a
        library's (a progress bar's monitor) and a ``Timer`` waiting in the
        standard library keep nothing the user can let go of there, and
        walking them after every cell would cost the role pass its budget.
        Its name is read as the Thread object stores it (a subclass's ``name``
        may be a property), else it is named by its ident."""
        try:
            stacks = sys._current_frames()  # frame objects only: their locals are not read here
        except Exception:  # an audit hook that refuses it (a sandboxed kernel): the other roots stand
            return
        # This thread's entry is this very frame: kept in its own locals it would be a cycle, and the walk (every
        # object it saw, a generator's dropped batch) would live on until the collector ran.
        stacks.pop(threading.get_ident(), None)
        try:
            self.other_threads(stacks)
        finally:
            stacks.clear()

    def other_threads(self, stacks):
        """What the threads of ``stacks`` ({ident: top frame}) keep while they run code of the user's."""
        shell = self.shell
        registry = getattr(threading, "_active", None)
        registry = dict.copy(registry) if type(registry) is dict else {}
        for ident, top in stacks.items():
            frames = []
            while top is not None:
                self.tick()
                frames.append(top)
                top = top.f_back
            frames.reverse()
            try:
                frames = [frame for frame in frames if is_user_code(frame, shell)]
                thread = registry.get(ident)
                name = self.own(thread, "_name")
            except Exception:  # a stack that cannot be read skips its thread
                continue
            if not frames:
                continue
            if type(name) is not str:  # no Thread object (``_thread.start_new_thread``), or one not initialised
                name = None
            # the thread and what keeps the memory in it are separable, as a generator's variable is (the place)
            owner = (f"thread {ident}: " if name is None else f"thread {name!r}: ") if self.paths else None
            via = self.reference("thread", str(ident) if name is None else name, None if owner is None else len(owner))
            for frame in frames if RUNNING_LOCALS_READABLE else ():
                self.thread_frame(frame, owner, via)
            self.thread_arguments(thread, owner, via)

    def thread_frame(self, frame, owner, via):
        """The locals of one frame of the user's code in another thread's stack."""
        if not is_user_function(frame, self.shell):
            return  # a cell's top level running in a thread: its variables are globals, walked as such
        try:
            locals_ = frame_locals(frame)
        except Exception:  # a frame that cannot be read skips itself
            return
        for local, value in locals_:
            path = f"{owner}{frame.f_code.co_name}() local {local}" if self.paths else None
            self.value(value, HIDDEN, path, via=via)

    def thread_arguments(self, thread, owner, via):
        """The arguments a Thread was started with, as it stores them until its function returns."""
        args, kwargs = self.own(thread, "_args"), self.own(thread, "_kwargs")
        if issubclass(type(args), (tuple, list)):
            for i, value in enumerate(itertools.islice(_items(args, type(args)), MAX_ITEMS)):
                self.value(value, HIDDEN, f"{owner}args[{i}]" if self.paths else None, via=via)
        if issubclass(type(kwargs), dict):
            for key, value in itertools.islice(dict.items(kwargs), MAX_ITEMS):
                self.value(value, HIDDEN, f"{owner}kwargs[{_key_text(key)}]" if self.paths else None, via=via)

    def reference(self, type_, name=None, place_at=None, hook=None, **facts):
        """A Reference for holders' fields; None when the walk names nothing (the role pass)."""
        return Reference(type_, name, place_at, hook, **facts) if self.paths else None

    def hook_container(self, obj, path, hook):
        """The reference of a container a hook keeps things in (the hook's words where paths are not wanted).

        Its fix clears the list the hook appends to: the first list, deque or
        set on the way from what the hook names, else the innermost dict (a
        hook that names ``state`` and runs ``state['acts'].append(o)`` keeps
        ``state['acts']``; one that runs ``cache[name] = o`` keeps ``cache``).
        """
        if not self.paths:
            return hook
        reference = Reference("hook", path, hook=hook)
        reference.settled = not issubclass(type(obj), dict)
        return reference

    # -- values ----------------------------------------------------------
    def value(self, obj, kind, path, depth=0, via=None):
        """Walk what ``obj`` keeps, reading it as the interpreter stores it: never through its class's code (type
        checks by ``type(obj)``, not isinstance, which reads a ``__class__`` the user's class may compute). An
        object that cannot be read is skipped, alone."""
        self.tick()
        cls = type(obj)
        torch = self.torch
        try:
            if cls is torch.Tensor or issubclass(cls, torch.Tensor):
                self.tensor(obj, kind, path, via)
                return
            if depth > MAX_DEPTH or issubclass(cls, _SCALARS):
                return
            # the list a hook fills, under whichever name it is met (a second name is the hook's holder too)
            if kind == VARIABLE and id(obj) in self.hook_lists:
                kind, via = HOOK, self.hook_container(obj, path, self.hook_lists[id(obj)])
            elif kind == HOOK and isinstance(via, Reference) and not via.settled and issubclass(cls, _CONTAINERS):
                # the hook that fills it where one was noted (``acts[name]`` of a hook per layer), else the dict's
                via = self.hook_container(obj, path, self.hook_lists.get(id(obj), via.hook))
            if id(obj) in self.seen and (id(obj) not in self.cut or depth == MAX_DEPTH):
                if self.paths:
                    self.met_again(obj, kind, path, via)
                return
            self.seen[id(obj)] = obj
            # Met at the depth limit, its containers went unwalked: met again nearer a root, it is walked again.
            if depth == MAX_DEPTH:
                self.cut.add(id(obj))
            else:
                self.cut.discard(id(obj))
            if not self.paths:
                self.contents(obj, cls, kind, path, depth, via)
                return
            within = self.within
            within.append((id(obj), kind, path, via))
            try:
                self.contents(obj, cls, kind, path, depth, via)
            finally:
                within.pop()
        except Budget:
            raise
        except Exception:  # freed, changed while read, or a tensor subclass that refuses: this object only
            pass

    def contents(self, obj, cls, kind, path, depth, via):
        """What a container, module, optimizer, function, exception, class or plain object keeps."""
        torch = self.torch
        if issubclass(cls, torch.nn.Module):
            modules = self.submodules(obj)
            self.module(modules, path)
            self.module_attributes(modules, kind, path, depth, via)
        elif issubclass(cls, torch.optim.Optimizer):
            self.optimizer(obj, path)
        elif issubclass(cls, dict):
            for key, item in itertools.islice(dict.items(obj), MAX_ITEMS):
                where = self.child(path, "{}[{}]", _key_text(key)) if self.paths else None
                self.value(item, kind, where, depth + 1, via)
        elif issubclass(cls, _SEQUENCES):
            for i, item in enumerate(itertools.islice(_items(obj, cls), MAX_ITEMS)):
                self.value(item, kind, self.child(path, "{}[{}]", i), depth + 1, via)
        elif issubclass(cls, (set, frozenset)):
            for item in list(itertools.islice(_items(obj, cls), MAX_ITEMS)):
                self.value(item, kind, self.child(path, "{}{{...}}", None), depth + 1, via)
        elif cls is types.MethodType:  # a callback kept as a bound method keeps its object
            self.value(obj.__self__, kind, self.child(path, "{}.__self__", None), depth + 1, via)
        elif issubclass(cls, _LINKS):
            self.links.append((obj, kind, path, depth, via))
        elif issubclass(cls, BaseException):
            self.exception(obj, kind, path, depth, via)
        elif issubclass(cls, type):
            if is_user_class(obj):  # its attributes are shared by its instances: ``Logger.records``
                self.class_attributes(obj, path, depth)
        elif not _is_module_like(obj):
            for name, item in self.attributes(obj):
                self.value(item, kind, self.child(path, "{}.{}", name), depth + 1, via)
            if is_user_class(cls):  # ``self.records.append(t)`` on a class's list
                self.class_attributes(cls, self.child(path, "type({})", None), depth)

    def exception(self, error, kind, path, depth, via):
        """What an exception keeps: its traceback's frames, the arguments it was raised with, what its class
        stored on it, and the errors it was raised from or during (``__cause__``, ``__context__``) with theirs.
        One the user kept (``except ... as e: err = e``) is a reference whose fix is to drop it."""
        if kind == VARIABLE:
            kind, via = TRACEBACK, self.reference("exception", path)
        self.traceback(_EXCEPTION_TRACEBACK(error), kind, self.child(path, "{}.__traceback__", None), via)
        for i, item in enumerate(itertools.islice(_EXCEPTION_ARGS(error), MAX_ITEMS)):
            self.value(item, kind, self.child(path, "{}.args[{}]", i), depth + 1, via)
        for name, item in self.attributes(error):
            self.value(item, kind, self.child(path, "{}.{}", name), depth + 1, via)
        # a chain as deep as its first error: each is walked once; ``raise ... from e`` inside ``except ... as e``
        # makes its context its cause, one error
        for name, linked in _each_once((name, read(error)) for name, read in _EXCEPTION_CHAIN):
            self.value(linked, kind, self.child(path, "{}.{}", name), depth, via)

    def layout(self, cls):
        """(the class, its instances' ``__dict__`` getter or None, their slots' (name, getter)), once a walk."""
        known = self.layouts.get(id(cls))
        if known is None:
            known = self.layouts[id(cls)] = (cls, *_layout(cls))
        return known

    def attributes(self, obj):
        """(name, value) of an object's own attributes, its ``__dict__``'s then its slots', read as stored: no
        ``__getattr__``, ``__getattribute__`` or property of its class runs."""
        found = list(itertools.islice(self.own_dict(obj).items(), MAX_ITEMS))
        for name, read in self.layout(type(obj))[2]:
            try:
                found.append((name, read(obj)))
            except AttributeError:  # a slot not set
                continue
        return found

    def own_dict(self, obj):
        """An object's ``__dict__`` read as stored, or an empty one."""
        namespace = self.layout(type(obj))[1]
        attributes = namespace(obj) if namespace is not None else None
        return attributes if type(attributes) is dict else {}

    def own(self, obj, name):
        """One entry of an object's ``__dict__`` read as stored (a module's ``_modules``), or None."""
        return self.own_dict(obj).get(name)

    def submodules(self, module):
        """(name, module, its ``__dict__``) of a module and each below it, once each in ``named_modules`` order, read
        from their ``_modules`` dicts: a module class of the user's may override ``named_modules`` or
        ``__getattr__``."""
        found, stack, met = [], [("", module)], set()
        while stack:
            name, m = stack.pop()
            if id(m) in met:
                continue
            met.add(id(m))
            self.tick()
            attributes = self.own_dict(m)
            found.append((name, m, attributes))
            children = attributes.get("_modules")
            if not children:
                continue
            if self.paths:
                below = [(_dotted(name, key), child) for key, child in dict.items(children)]
            else:
                below = list(zip(_NONES, dict.values(children)))
            stack += [pair for pair in reversed(below) if pair[1] is not None]
        return found

    def class_attributes(self, cls, reached, depth):
        """What a class of the user's keeps in its own attributes, and its user bases' (``records = []`` in the
        class body, which every instance appends to), once a walk. The class keeps them whatever way it was
        reached (an instance in ``Out[2]``, a closure): they are variables of the class, named as the user types
        it (``Logger.records``, ``mylog.Kept.items``), else by the way here (``type(made).kept``)."""
        if id(cls) in self.classes:
            return
        self.classes[id(cls)] = cls
        owner = class_name(cls, self.shell) if self.paths else None
        owner = owner or reached
        named = set()
        for base in _TYPE_MRO(cls):
            if base is not cls and not is_user_class(base):
                continue
            for name, item in list(_TYPE_DICT(base).items())[:MAX_ITEMS]:
                if name in named or (name.startswith("__") and name.endswith("__")):
                    continue
                named.add(name)
                self.value(item, VARIABLE, self.child(owner, "{}.{}", name), depth + 1)

    def link(self, obj, kind, path, depth, via):
        """What a function, a function cache or a generator keeps: no name the user typed shows it."""
        try:
            self.linked(obj, kind, path, depth, via)
        except Budget:
            raise
        except Exception:  # one that cannot be read skips itself
            pass

    def linked(self, obj, kind, path, depth, via):
        if type(obj) is types.FunctionType:  # what it stores on itself (``forward.last = x``) is typed by name
            for name, value in itertools.islice(obj.__dict__.items(), MAX_ITEMS):
                self.value(value, kind, self.child(path, "{}.{}", name), depth + 1, via)
        hidden = kind == VARIABLE
        kind = HIDDEN if hidden else kind
        deeper = depth + 1

        def held(type_, words=None):
            """The reference of what it keeps: the owner at ``path`` (and a variable after ``words``)."""
            if not hidden:  # met through another reference (an exception's, an output's): that one stays
                return via
            return None if path is None else Reference(type_, path, None if words is None else len(path) + len(words))

        if issubclass(type(obj), types.FunctionType):
            defaults = held("default-argument")
            for i, value in enumerate(obj.__defaults__ or ()):
                self.value(value, kind, self.child(path, "{}.__defaults__[{}]", i), deeper, defaults)
            for name, value in (obj.__kwdefaults__ or {}).items():
                self.value(value, kind, self.child(path, "{}.__kwdefaults__[{!r}]", name), deeper, defaults)
            closure = held("closure", CLOSURE_VARIABLE)
            for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # a variable not bound yet
                    continue
                self.value(value, kind, self.child(path, "{}" + CLOSURE_VARIABLE + "{}", name), deeper, closure)
        elif issubclass(type(obj), functools.partial):
            via = held("partial")
            self.value(obj.func, kind, self.child(path, "{}.func", None), deeper, via)
            for i, value in enumerate(obj.args):
                self.value(value, kind, self.child(path, "{}.args[{}]", i), deeper, via)
            for name, value in obj.keywords.items():
                self.value(value, kind, self.child(path, "{}.keywords[{!r}]", name), deeper, via)
        elif issubclass(type(obj), _FUNCTION_CACHE):
            # the function it wraps is an owner of its own: its defaults or closure are not the cache's to clear
            wrapped = self.child(path, "{}.__wrapped__", None)
            self.value(
                getattr(obj, "__wrapped__", None),
                VARIABLE if hidden else kind,
                wrapped,
                deeper,
                None if hidden else via,
            )
            via = held("lru-cache")
            entry = self.child(path, "{}: lru_cache entry", None)
            attributes = getattr(obj, "__dict__", None)
            # the cache's keys (the arguments) and results are reached only through the collector's view of it
            for kept in gc.get_referents(obj):
                if kept is attributes:
                    continue
                if type(kept) is dict:
                    for key, value in itertools.islice(kept.items(), MAX_ITEMS):
                        self.value(key, kind, entry, deeper, via)
                        self.value(value, kind, entry, deeper, via)
                else:
                    self.value(kept, kind, entry, deeper, via)
        else:  # a generator or coroutine: its frame's locals, while it is paused
            frame = getattr(obj, "gi_frame", None) or getattr(obj, "cr_frame", None) or getattr(obj, "ag_frame", None)
            running = (
                getattr(obj, "gi_running", None) or getattr(obj, "cr_running", None) or getattr(obj, "ag_running", None)
            )
            if frame is not None and (RUNNING_LOCALS_READABLE or not running):  # running: in another thread (threads)
                via = held("generator", GENERATOR_LOCAL)
                for name, value in frame_locals(frame):
                    self.value(value, kind, self.child(path, "{}" + GENERATOR_LOCAL + "{}", name), deeper, via)

    def module_attributes(self, modules, kind, path, depth, via):
        """What a module and its submodules keep beyond what every Module has: attributes set on them
        (``self.cache = {}`` in a class of the user's, ``m.last_out = o`` from a hook on a torch Linear), and the
        functions in their hook dicts, whose closures and defaults are walked as a function's are
        (``model.0: forward hook keep: closure variable outs``). torch's own private attributes (an LSTM's flat
        weight lists) are its bookkeeping of parameters named already. Names are made only for what is found."""
        internal = _module_internals(self.torch)
        found = []
        for prefix, m, attributes in modules:
            names = attributes.keys() - internal  # one set difference in C
            if names and type(m).__module__.startswith("torch."):
                names = list(filter(_PUBLIC_NAME, names))
            if names and not _all_plain(list(map(attributes.__getitem__, names))):  # sizes and flags: most
                found += [(prefix, name, attributes[name], False) for name in names if not _plain(attributes[name])]
            for attr, words in _HOOK_DICTS:
                hooks = attributes.get(attr)
                if hooks and issubclass(type(hooks), dict):
                    found += [(prefix, words, fn, True) for fn in dict.values(hooks)]
        for prefix, name, value, hook in found:
            if not self.paths:
                where = None
            elif hook:  # the module's prefix, the hook's words and the function's (or the hook object's class) name
                where = f"{_dotted(path, prefix) if prefix else path}: {name} {_hook_name(value)}"
            else:
                where = self.child(path, "{}.{}", _dotted(prefix, name))
            if hook and kind == VARIABLE and not issubclass(type(value), _HOOKS):
                # a bound method's object or a callable object: what it keeps, no name the user typed shows
                self.value(value, HIDDEN, where, depth + 1, via)
            else:
                self.value(value, kind, where, depth + 1, via)

    def tensor(self, t, kind, path, via=None):
        self.record(t, kind, path, via)
        if id(t) in self.seen:
            return
        self.seen[id(t)] = t
        fields = self.fields
        if fields.is_leaf(t):
            grad = fields.grad(t)
            if grad is not None:
                self.record(grad, GRADIENT, self.child(path, "{}.grad", None))
        else:
            fn = fields.grad_fn(t)
            if fn is not None:
                # a graph reached through a reference goes with it (a kept exception's graph is freed with it)
                self.graph(fn, path, via if isinstance(via, Reference) else None)

    def graph(self, node, path, via=None):
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
                if issubclass(type(saved), tensor_type):
                    self.saved_tensor(saved, path, via)
                elif holds_no_tensor(saved):
                    spent = [*(spent or ()), name]
                elif issubclass(type(saved), (list, tuple)):
                    for t in saved:
                        if issubclass(type(t), tensor_type):
                            self.saved_tensor(t, path, via)
            for name in spent or ():
                names.remove(name)
            for child, _ in getattr(fn, "next_functions", ()):
                if child is not None and type(child).__name__ != "AccumulateGrad":
                    stack.append(child)

    def saved_tensor(self, tensor, path, via=None):
        """A tensor an autograd graph saved for backward."""
        self.record(tensor, GRAPH, path, via)

    def module(self, modules, path):
        """The parameters, their gradients and the buffers of ``modules`` ((name, module) of a model and the
        modules below it), each once, named as ``named_parameters`` and ``named_buffers`` name them."""
        for kind, where in ((PARAMETER, "_parameters"), (BUFFER, "_buffers")):
            met = set()
            for prefix, _, attributes in modules:
                for name, t in dict.items(attributes.get(where) or {}):
                    if t is None or id(t) in met:
                        continue
                    met.add(id(t))
                    self.tick()
                    name = _dotted(prefix, name) if self.paths else None
                    self.record(t, kind, self.child(path, "{}.{}", name))
                    grad = self.fields.grad(t) if kind == PARAMETER else None
                    if grad is not None:
                        self.record(grad, GRADIENT, self.child(path, "{}.{}.grad", name) if self.paths else None)

    def optimizer(self, opt, path):
        tensor_type, fields = self.torch.Tensor, self.fields
        for group in self.param_groups(opt) if self.optimizer_params else ():
            for p in _items(dict.get(group, "params", ()), list):
                self.tick()
                if issubclass(type(p), tensor_type):
                    shape = tuple(fields.shape(p))
                    self.record(p, PARAMETER, self.child(path, "{}.param_groups {}", shape))
                    grad = fields.grad(p)
                    if grad is not None:
                        self.record(grad, GRADIENT, self.child(path, "{}.param_groups {}.grad", shape))
        for i, state in enumerate(self.optimizer_state(opt)):
            for key, t in dict.items(state):
                self.tick()
                if issubclass(type(t), tensor_type):
                    self.record(t, OPTIMIZER, f"{path}.state[{i}][{key!r}]" if self.paths else None)

    def param_groups(self, opt):
        """An optimizer's parameter groups (dicts), read as stored."""
        groups = self.own(opt, "param_groups")
        return [g for g in _items(groups, list) if issubclass(type(g), dict)] if issubclass(type(groups), list) else []

    def optimizer_state(self, opt):
        """An optimizer's per-parameter state dicts, read as stored."""
        state = self.own(opt, "state")
        values = dict.values(state) if issubclass(type(state), dict) else ()
        return [s for s in values if issubclass(type(s), dict)]

    def note_hooks(self, module, path):
        """Containers the module's hooks append to: what they hold is held by the hook."""
        for sub_name, _, attributes in self.submodules(module):
            for attr, words in _HOOK_DICTS:
                hooks = attributes.get(attr)
                for fn in dict.values(hooks) if issubclass(type(hooks), dict) else ():
                    where = f"{words} on {_dotted(path, sub_name) if sub_name else path}"
                    function = _hook_function(fn)
                    referenced, keys = _referenced(function), None
                    for held in referenced:
                        if not issubclass(type(held), _CONTAINERS):
                            continue
                        self.note_hook_container(held, where)
                        if issubclass(type(held), dict):
                            keys = _hook_keys(function, referenced) if keys is None else keys
                            self.note_hook_dict(held, keys, where)

    def note_hook_container(self, container, where):
        """A container a hook may fill, with the hook's words: the first hook noted names it."""
        if id(container) not in self.hook_lists:
            self.hook_lists[id(container)] = where
            self.hook_kept.append(container)  # its id names it until the walk ends

    def note_hook_dict(self, named, keys, where):
        """The lists, deques and sets in a dict a hook names that its code can reach by the keys it names
        (``state['acts']``, ``acts[name]``), through dicts: a list of the dict the hook only reads beside them (a
        config's ``anchors``, the ``losses`` the user keeps) is not the hook's. Each dict's plain keys are read
        once a walk, however many hooks name it (a hook per layer naming one dict), _HOOK_DICT_ITEMS at most, and
        _HOOK_DICT_DEPTH dicts deep."""
        dicts = [named]
        for _ in range(_HOOK_DICT_DEPTH):
            inner = []
            for d in dicts:
                index = self.hook_dict_index(d)
                # plain keys on both sides: only the built-in types' hash and == run
                for key in keys if len(keys) <= len(index) else [k for k in index if k in keys]:
                    value = index.get(key, _NONE)
                    if issubclass(type(value), dict):
                        inner.append(value)
                    elif issubclass(type(value), _CONTAINERS):
                        self.note_hook_container(value, where)
            dicts = inner

    def hook_dict_index(self, d):
        """A dict's values by their plain keys (str, int, bytes), its first _HOOK_DICT_ITEMS items, once a walk."""
        known = self.hook_indexes.get(id(d))
        if known is None:
            self.tick()
            index = {k: v for k, v in itertools.islice(dict.items(d), _HOOK_DICT_ITEMS) if type(k) in _KEY_TYPES}
            known = self.hook_indexes[id(d)] = (d, index)  # the dict kept: its id names it until the walk ends
        return known[1]


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


def frame_locals(frame):
    """(name, value) of each of a frame's locals, read without keeping them.

    Before Python 3.13 a function frame's ``f_locals`` is a dict the frame
    caches, which keeps each value it was given until the frame is read
    again or ends: a paused generator that later drops a local would keep
    it alive (a tensor the user freed, counted again by the next snapshot).
    So the code's own variables leave the cache once read, unless code of
    the user's holds it too (``locals()`` returns that dict); the next read,
    or a debugger's trace function, puts them back from the frame. Other
    keys stay: there the cache is the only home of a name ``exec`` or
    ``locals()[k] = v`` set (helper-74). Nor is the cache touched while a
    tracer steps the frame (``f_trace``: a debugger paused in another
    thread): when its trace function returns, the interpreter writes the
    cache back into the frame, and a name missing there would delete the
    running function's variable. From 3.13 ``f_locals`` is a view that
    copies nothing, and is left alone.
    """
    cached = frame.f_locals
    items = list(cached.items())
    # the frame's slot, this name and getrefcount's argument: no other holder
    if (
        type(cached) is dict
        and frame.f_code.co_flags & inspect.CO_OPTIMIZED
        and frame.f_trace is None
        and sys.getrefcount(cached) <= 3
    ):
        code = frame.f_code
        collections.deque(map(cached.pop, code.co_varnames + code.co_cellvars + code.co_freevars, _NONES), 0)
    return items


def is_user_class(cls):
    """A class of the user's own code: defined in a cell, or in a module of theirs (neither installed nor in
    Python's standard library). A library's classes keep their state in their instances, which the walk reads."""
    name = getattr(cls, "__module__", None)
    if name == "__main__":  # a cell's code
        return True
    if not isinstance(name, str) or _is_plumbing(name):
        return False
    path = _own(sys.modules.get(name), "__file__")
    return isinstance(path, str) and _is_user_file(path)  # None: built in, or not imported (yet)


def class_name(cls, shell):
    """How the user types a class of theirs: ``Logger`` for a cell's, ``mylog.Kept`` for a module's; None where
    no name reaches it (a class made inside a function, or deleted). Looked up in namespaces, never by getattr
    (a module's ``__getattr__`` may import)."""
    qualname, module = getattr(cls, "__qualname__", None), getattr(cls, "__module__", None)
    if not isinstance(qualname, str) or not isinstance(module, str) or "<locals>" in qualname:
        return None
    first, *rest = qualname.split(".")
    if module == "__main__":
        found, name = getattr(shell, "user_ns", {}).get(first), qualname
    else:
        found, name = _own(sys.modules.get(module), first), f"{module}.{qualname}"
    for part in rest:
        found = _own(found, part)
    return name if found is cls else None


def _own(obj, name):
    """An attribute a module or class defines itself, without calling anything."""
    namespace = getattr(obj, "__dict__", None)
    return namespace.get(name) if isinstance(namespace, (dict, types.MappingProxyType)) else None


@functools.lru_cache(maxsize=512)
def _is_user_file(path):
    path = os.path.realpath(path)
    return not _INSTALLED.search(path) and not path.startswith(_standard_library())


@functools.lru_cache(maxsize=1)
def _standard_library():
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[key]) + os.sep for key in ("stdlib", "platstdlib")})


def is_user_code(frame, shell):
    """A frame of code the user wrote: a cell's, a ``%run`` script's or a module of theirs, told by its code's
    file (neither installed nor in Python's standard library); not the kernel's plumbing."""
    if frame.f_globals is getattr(shell, "user_ns", None):
        return True
    if _is_plumbing(dict.get(frame.f_globals, "__name__")):
        return False
    filename = frame.f_code.co_filename
    return type(filename) is str and not filename.startswith("<") and _is_user_file(filename)


def is_user_function(frame, shell):
    """A traceback frame whose locals are the user's: not a cell's top level (those are globals), not plumbing."""
    if frame.f_globals is getattr(shell, "user_ns", None):
        return frame.f_code.co_name != "<module>"
    return not _is_plumbing(dict.get(frame.f_globals, "__name__"))


def _is_plumbing(module):
    """A module name of the kernel's plumbing (``IPython.core.interactiveshell``); False for anything else."""
    return type(module) is str and module.split(".")[0] in _PLUMBING


def _each_once(named):
    """(name, value) pairs, less a value that is the one just before it (two names of one error)."""
    before = None
    for name, value in named:
        if value is None or value is not before:
            yield name, value
        before = value


def _is_module_like(obj):
    return type(obj).__name__ == "module"


def _hook_function(fn):
    """The plain function a hook runs (a bound method's), or None for another callable: that one is not asked,
    its ``__getattr__`` is the user's code."""
    if type(fn) is types.MethodType:
        fn = fn.__func__
    return fn if type(fn) is types.FunctionType else None


def _referenced(fn):
    """Objects a hook's function (_hook_function; None: nothing) closes over or names as globals."""
    if fn is None:
        return []
    out = []
    for cell in fn.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:
            pass
    scope = fn.__globals__
    for name in _global_names(fn.__code__):
        if name in scope:
            out.append(scope[name])
    return out


@functools.lru_cache(maxsize=256)
def _global_names(code):
    """The globals a function's code, and the code in it, loads. ``co_names`` holds its attribute names too:
    a hook that reads ``o.data`` does not name the user's ``data``, which would be called the hook's list."""
    return frozenset(
        instruction.argval
        for each in itertools.islice(_each_code([code]), _HOOK_CODES)
        for instruction in dis.get_instructions(each)
        if instruction.opname in _LOADS_A_GLOBAL
    )


_LOADS_A_GLOBAL = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _hook_keys(fn, referenced):
    """The keys a hook's code may index a dict it names with: the str, int and bytes constants of its code and
    of the code in it (``state['acts']``), and those it closes over or names as globals (``acts[name]`` in a hook
    made per layer). Read from the code object of the hook's function (_hook_function; None: no code) and the
    values ``_referenced`` found: no code of the user's runs."""
    keys = {value for value in referenced if type(value) in _KEY_TYPES}
    codes = [fn.__code__] if fn is not None else []
    for code in itertools.islice(_each_code(codes), _HOOK_CODES):
        keys.update(c for c in code.co_consts if type(c) in _KEY_TYPES)
    return keys


def _each_code(codes):
    """Each code object of ``codes`` and those nested in them (a comprehension's, a lambda's)."""
    while codes:
        code = codes.pop()
        yield code
        codes += [c for c in code.co_consts if type(c) is types.CodeType]


_HOOK_DICT_ITEMS = 256
_HOOK_DICT_DEPTH = 3
_HOOK_CODES = 16  # code objects of one hook whose constants are read
_KEY_TYPES = (str, int, bytes)  # dict keys read against a hook's: exactly these types, no subclass
_NONE = object()


def _plain(value):
    """A scalar or a tuple of scalars (a conv's ``kernel_size``): nothing to walk, told in a few C calls."""
    cls = type(value)
    return cls in _KNOWN_REPR or cls is tuple and _KNOWN_REPR.issuperset(map(type, value))


def _all_plain(values):
    """Whether every value is ``_plain``, told in a few C calls for all of them (a module's sizes and flags)."""
    kinds = set(map(type, values))
    if kinds <= _KNOWN_REPR:
        return True
    tuples = [v for v in values if type(v) is tuple]
    return kinds <= _PLAIN_OR_TUPLE and _KNOWN_REPR.issuperset(map(type, itertools.chain.from_iterable(tuples)))


def _key_text(key):
    """A dict key as a path shows it: its repr for the built-in types whose repr is known, else the default repr
    (a key's own ``__repr__`` is the user's code)."""
    if _plain(key):
        return repr(key)
    return f"<{_TYPE_NAME(type(key))} object at {id(key):#x}>"


def _hook_name(hook):
    """A hook as its path names it: a function's or bound method's name, else its class's (no code of its own
    runs: a callable object's ``__name__`` may be a property)."""
    if type(hook) in (types.FunctionType, types.MethodType):
        return hook.__name__
    return _TYPE_NAME(type(hook))


def _dotted(prefix, name):
    """A name below ``prefix`` (``model.0``), or the name alone at the top."""
    return f"{prefix}.{name}" if prefix else name


def _items(obj, cls):
    """An iterator over a list's, tuple's, deque's or set's items by the built-in type's own iterator."""
    for base, iterate in _ITERATORS:
        if issubclass(cls, base):
            return iterate(obj)
    return iter(())


def _layout(cls):
    """(the getter of a class's instances' ``__dict__`` or None, their slots' (name, getter)), from the class's own
    namespaces: C descriptors only, so reading them runs none of the class's code. A private slot is named as
    stored (``_Cls__x``), which is what a user types outside the class."""
    namespace_getter, slots = None, []
    for base in _TYPE_MRO(cls):
        namespace = _TYPE_DICT(base)
        found = namespace.get("__dict__")
        if namespace_getter is None and type(found) is types.GetSetDescriptorType:
            namespace_getter = found.__get__
        names = namespace.get("__slots__", ())
        names = (names,) if type(names) is str else names if type(names) in (tuple, list, dict) else ()
        for name in names:
            if type(name) is not str or name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{_TYPE_NAME(base).lstrip('_')}{name}"
            member = namespace.get(name)
            if type(member) is types.MemberDescriptorType:
                slots.append((name, member.__get__))
    return namespace_getter, tuple(slots)


def user_names(shell):
    """The user's globals by name: no IPython plumbing, no hidden names, no output cache."""
    hidden = getattr(shell, "user_ns_hidden", {})
    for name, value in list(shell.user_ns.items()):
        if name in _IPYTHON_NAMES or name in hidden or is_output_name(name) or name.startswith("_i"):
            continue
        yield name, value


_MODULE_INTERNALS = {}


def _module_internals(torch):
    """The attribute names every torch Module has (its parameter, buffer, submodule and hook dicts, ...)."""
    names = _MODULE_INTERNALS.get(id(torch))
    if names is None:
        names = _MODULE_INTERNALS[id(torch)] = frozenset(vars(torch.nn.Module()))
    return names


def output_names(shell):
    """IPython's output history by name: ``_``, ``__``, ``___``, then ``_N`` for each output N still kept."""
    ns = shell.user_ns
    for name in _RECENT_OUTPUTS:
        yield name, ns.get(name)
    for name, value in list(ns.items()):
        if _is_numbered_output(name):
            yield name, value


def is_output_name(name):
    """A name IPython's displayhook sets for a displayed result: ``_``, ``__``, ``___`` or ``_N``."""
    return name in _RECENT_OUTPUTS or _is_numbered_output(name)


_RECENT_OUTPUTS = ("_", "__", "___")


def _output_name_facts(name):
    """What a fix needs of an output-history name: ``_N``'s execution count, or how many more displayed results
    until ``_``, ``__`` or ``___`` lets go of it (3, 2, 1): each displayed result moves them along."""
    if name in _RECENT_OUTPUTS:
        return {"displays": 4 - len(name)}
    return {"count": int(name[1:])}


def _is_numbered_output(name):
    return name.startswith("_") and name[1:].isdecimal()  # what int() reads
