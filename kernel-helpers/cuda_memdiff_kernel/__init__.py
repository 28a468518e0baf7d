"""Kernel-side helper of jupyterlab-cuda-memdiff: an IPython extension that
takes a CUDA allocator snapshot after every cell and pushes it to JupyterLab.

``%load_ext cuda_memdiff_kernel`` loads it where it is installed
(``pip install ./kernel-helpers``); the frontend injects the same source,
under the private name ``_cuda_memdiff_kernel``, into kernels without it.
Standard library only; torch is used once the user's code has imported it.
"""

from . import process
from .capture import CellCapture
from .protocol import DEFAULT_SETTINGS, PROTOCOL_VERSION

__version__ = "0.2.0"
__all__ = [
    "load_ipython_extension",
    "unload_ipython_extension",
    "install",
    "current",
    "PROTOCOL_VERSION",
    "DEFAULT_SETTINGS",
]

# The active capture lives on the shell object, never in the user's namespace,
# so the pip-installed and the injected copies replace each other cleanly.
_SHELL_ATTRIBUTE = "_cuda_memdiff_capture"


def install(shell, settings=None, replay=None, frontends=None):
    """Start capturing in this shell, replacing any earlier capture; returns the status."""
    unload_ipython_extension(shell)
    capture = CellCapture(shell, settings, replay, frontends)
    setattr(shell, _SHELL_ATTRIBUTE, capture)
    process.state().installs += 1
    return capture.start()


def current(shell):
    """The capture installed in this shell, or None."""
    return getattr(shell, _SHELL_ATTRIBUTE, None)


def load_ipython_extension(ipython):
    install(ipython)


def unload_ipython_extension(ipython):
    capture = getattr(ipython, _SHELL_ATTRIBUTE, None)
    if capture is not None:
        delattr(ipython, _SHELL_ATTRIBUTE)
        capture.stop()
