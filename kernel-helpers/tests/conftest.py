import gc
import json
import pathlib

import pytest
from IPython.core.interactiveshell import InteractiveShell

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "test-data" / "recordings"
LIVE = ROOT / "test-data" / "live"  # sessions recorded live on an H200 (recorder --holders)
SCHEMA = ROOT / "kernel-helpers" / "cuda_memdiff_kernel" / "protocol.schema.json"


def read_as_recorded(manifest_path):
    """A recorder's manifest.json, read by the manifest's one rule (manifest_fields.json, which the engine reads by
    too). The recorder writes each field as the rule reads it: a manifest refused, or one the rule reads otherwise
    (a default filled in, lines joined, a null dropped), fails."""
    from cuda_memdiff_kernel.manifest import read_manifest

    data = pathlib.Path(manifest_path).read_bytes()
    manifest = read_manifest(data)
    assert manifest == json.loads(data), f"{manifest_path}: the rule reads it otherwise than it is written"
    return manifest


def names_holder(path, expected):
    """A holder path that is the expected one or leads through it (``preds[2]``, ``err.__traceback__: ...``)."""
    return path == expected or path.startswith((f"{expected}[", f"{expected}:", f"{expected}."))


class FakeComm:
    """A frontend's comm as the helper sees it: keeps what the helper sends, in order.

    ``fail_next`` makes the next sends raise, as a comm whose socket broke.
    """

    def __init__(self):
        self.messages = []
        self.closed = False
        self.fail_next = 0
        self._on_msg = None
        self._on_close = None

    def send(self, data):
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("comm closed")
        json.dumps(data)  # JSON-safe, as the real comm needs
        self.messages.append(data)

    def on_msg(self, callback):
        self._on_msg = callback

    def on_close(self, callback):
        self._on_close = callback

    def close(self):
        self.closed = True

    def request(self, data):
        """Send ``data`` as the frontend would; returns the helper's last message."""
        self._on_msg({"content": {"data": data}})
        return self.messages[-1]

    def of_type(self, kind):
        return [m for m in self.messages if m["type"] == kind]


def attach(shell):
    """A new frontend attached to the shell's helper."""
    from cuda_memdiff_kernel import current

    comm = FakeComm()
    current(shell).frontends.attach(comm)
    return comm


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    yield ip
    from cuda_memdiff_kernel import unload_ipython_extension

    unload_ipython_extension(ip)
    InteractiveShell.clear_instance()


@pytest.fixture(scope="session")
def validate():
    """Validates a message against protocol.schema.json, the schema the frontend uses too."""
    try:
        import jsonschema
    except ImportError:  # not a skip: the tests that validate check more than the schema (roles against torch)
        pytest.fail(
            "these tests validate messages with jsonschema: install it (requirements-dev.txt; on a GPU "
            "machine without it, carry its wheels as the README's 'Tests on a GPU' says)"
        )
    schema = json.loads(SCHEMA.read_text())
    validators = {}

    def check(message, definition=None):
        name = (
            definition
            or {"status": "status", "snapshot": "snapshot", "holders": "holders", "cell-note": "cellNote"}[
                message["type"]
            ]
        )
        if name not in validators:
            validators[name] = jsonschema.Draft7Validator({**schema, "$ref": f"#/definitions/{name}"})
        validators[name].validate(message)
        return message

    return check


# A notebook's objects whose classes run code when read the usual ways (a tensor subclass's __torch_function__,
# __getattr__, __getattribute__, a dict's items, a list's __iter__, a hook object's __getattr__, a key's __repr__):
# each call they see goes into CALLS. The helper reads around them, so CALLS stays empty while it looks.
ODD_OBJECTS = """
import torch
CALLS = []
class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        CALLS.append(getattr(func, '__name__', str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})
class Lazy:
    __slots__ = ('t', 'unset')
    def __getattr__(self, name):
        CALLS.append(('__getattr__', name))
        raise AttributeError(name)
class Traced:
    def __init__(self):
        self.t = torch.ones(58)
    def __getattribute__(self, name):
        CALLS.append(('__getattribute__', name))
        return object.__getattribute__(self, name)
class Hook:
    def __init__(self):
        self.__dict__['outs'] = []
    def __getattr__(self, name):
        CALLS.append(('__getattr__', name))
        raise AttributeError(name)
    def __call__(self, m, i, o):
        self.outs.append(o.detach())
class Registry(dict):
    def items(self):
        CALLS.append('items')
        return super().items()
    def __iter__(self):
        CALLS.append('__iter__')
        return super().__iter__()
class Key:
    def __repr__(self):
        CALLS.append('__repr__')
        return 'Key()'
class Batches(list):
    def __iter__(self):
        CALLS.append('list __iter__')
        return super().__iter__()
def _posing(name):  # a field that says it was read, then answers as torch's own does
    field = getattr(torch._C.TensorBase, name)
    return property(lambda self: CALLS.append(name) or field.__get__(self))
class Posing(torch.Tensor):
    # fields and methods of its own: what the usual reads (t.grad, t.data_ptr()) would run
    def __getattribute__(self, name):
        if not name.startswith('__'):
            CALLS.append(('tensor __getattribute__', name))
        return super().__getattribute__(name)
    grad, is_leaf, requires_grad, grad_fn, shape, device = map(
        _posing, ('grad', 'is_leaf', 'requires_grad', 'grad_fn', 'shape', 'device'))
    def data_ptr(self):
        CALLS.append('data_ptr')
        return torch._C.TensorBase.data_ptr(self)
class PosingParameter(Posing, torch.nn.Parameter):
    pass
logged = torch.ones(59).as_subclass(Logged)
posed = torch.ones(66).as_subclass(Posing)
posed_graded = (torch.ones(67, requires_grad=True) * torch.ones(67)).as_subclass(Posing)
posed_list = [torch.ones(68).as_subclass(Posing) for _ in range(40)]
posed_lin = torch.nn.Linear(3, 3)
posed_lin.weight = PosingParameter(torch.ones(3, 3))
posed_lin(torch.ones(2, 3)).sum().backward()
posed_opt = torch.optim.Adam(posed_lin.parameters())
posed_opt.step()
graded = (torch.ones(3, requires_grad=True) * 2).as_subclass(Logged)
lazy = Lazy()
lazy.t = torch.ones(57)
traced = Traced()
hook = Hook()
lin = torch.nn.Linear(3, 3)
lin.register_forward_hook(hook)
lin(torch.ones(2, 3))
reg = Registry(a=torch.ones(62))
batches = Batches([torch.ones(63)])
keyed = {Key(): torch.ones(65)}
mixed = [traced] * 40 + [torch.ones(64)] * 40
CALLS.clear()
"""

# A tensor subclass that refuses every torch function: reading it the usual way raises.
STRICT_TENSOR = """
import torch
class Strict(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(getattr(func, '__name__', str(func)))
strict = torch.ones(61).as_subclass(Strict)
strict_graded = (torch.ones(3, requires_grad=True) * 2).as_subclass(Strict)
"""


@pytest.fixture
def strict(shell):
    """The shell with STRICT_TENSOR's tensors, gone after the test: other tests read each tensor gc.get_objects()
    lists the usual way."""
    assert shell.run_cell(STRICT_TENSOR).success
    yield shell
    shell.run_cell("del strict, strict_graded, Strict")
    gc.collect()
