"""What exists once per kernel process, across re-injections of the helper.

torch offers no way to detach an out-of-memory observer or to unqueue a call
queued for CUDA's initialisation, so each is attached once per process, as a
plain function that forwards to the capture installed now, found through a
weak reference: a stopped capture is never called and never kept alive.
The state lives in a module of its own in ``sys.modules``, which re-injection
(which replaces the helper's own modules) leaves alone.
"""

import sys
import types
import uuid
import weakref

_NAME = "_cuda_memdiff_process"


def state():
    """The process-wide state, made on first use."""
    mod = sys.modules.get(_NAME)
    if mod is None:
        mod = types.ModuleType(_NAME, "State of jupyterlab-cuda-memdiff's kernel helper for this process.")
        mod.run = uuid.uuid4().hex  # tells frontends apart one kernel process from the next
        mod.installs = 0
        mod.capture = None  # weakref to the current CellCapture
        mod.oom_attached = False
        mod.init_queued = False
        mod.history_by_helper = False  # True while the history in force is the one the helper started
        mod.warmed_up = False
        sys.modules[_NAME] = mod
    return mod


def current_capture():
    ref = state().capture
    return ref() if ref is not None else None


def set_current(capture):
    state().capture = weakref.ref(capture) if capture is not None else None


def forward_oom(device, alloc, device_allocated, device_free):
    """The OOM observer torch calls: passes the event to the current capture, if any."""
    capture = current_capture()
    if capture is not None:
        capture.on_oom(device, alloc, device_allocated, device_free)


def forward_cuda_init():
    """Queued for CUDA's lazy initialisation: lets the current capture start history in time."""
    state().init_queued = False
    capture = current_capture()
    if capture is not None:
        capture.on_cuda_init()
