"""Runs in the kernel when the frontend injects the helper (src/capture/protocol.ts).

The frontend executes, silently and without history,
``exec(compile(BOOTSTRAP, ...), {"__name__": "_cuda_memdiff_boot", "_payload": JSON})``
so nothing lands in the user's namespace. When this kernel already runs the
same helper (another notebook, another view, a reloaded page), it only passes
on the settings: the helper, its log and the frontends attached to it stay.
Otherwise it serves the helper's modules from the payload under the private
package name ``_cuda_memdiff_kernel`` and installs the capture.
"""

import importlib
import importlib.abc
import importlib.util
import json
import sys

PACKAGE = "_cuda_memdiff_kernel"


class _SourceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the helper's modules from source strings."""

    cuda_memdiff = True

    def __init__(self, sources):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=name == PACKAGE)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(self.sources[module.__name__], f"<{module.__name__}>", "exec"), module.__dict__)


def _install(payload):
    shell = get_ipython()  # noqa: F821 - a builtin inside IPython
    running = sys.modules.get(PACKAGE)
    if running is not None and getattr(running, "_source_hash", None) == payload["hash"]:
        capture = running.current(shell)
        if capture is not None:
            capture.configure(payload.get("settings"))
            return
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "cuda_memdiff", False)]
    sys.meta_path.insert(0, _SourceFinder(payload["modules"]))
    package = importlib.import_module(PACKAGE)
    package._source_hash = payload["hash"]
    package.install(shell, settings=payload.get("settings"))


_install(json.loads(_payload))  # noqa: F821 - given by the frontend
