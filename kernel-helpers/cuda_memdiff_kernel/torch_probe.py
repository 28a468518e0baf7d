"""The one module that touches torch. It never imports torch for the kernel:
it looks at ``sys.modules`` and works with the torch the user's code
imported, and it touches the device only once the user's code has
initialised CUDA. Every call is guarded: a kernel without torch, a CPU build,
or an old release answers with a status, never an error in the user's cell.
(The recorder, a tool the user runs on purpose, may import torch itself.)
"""

import contextlib
import functools
import inspect
import sys
import threading

from . import protocol


def loaded_torch():
    """The torch module the user's code imported, or None; never imports it."""
    torch = sys.modules.get("torch")
    # A failed or half-done import leaves a module without its submodules.
    if torch is None or not hasattr(torch, "cuda") or not hasattr(torch, "version"):
        return None
    return torch


def import_torch():
    """Import torch (the recorder only); None without it."""
    try:
        import torch  # noqa: PLC0415 - optional, imported only by the recorder
    except Exception:  # ImportError, or a broken install raising anything
        return None
    return torch


def phase():
    """(status, message, facts) of this kernel's torch and CUDA, read without touching the device.

    ``waiting-for-torch`` until the user's code imports torch, ``no-cuda`` for
    a CPU build, ``waiting-for-cuda`` until the user's code initialises CUDA,
    then ``ready`` (or ``torch-too-old``).
    """
    torch = loaded_torch()
    if torch is None:
        return protocol.WAITING_TORCH, "torch is not imported in this kernel yet", {}
    facts = {"torch": str(getattr(torch, "__version__", "?"))}
    version = torch.version
    if getattr(version, "cuda", None) is None and getattr(version, "hip", None) is None:
        return protocol.NO_CUDA, "this torch is a build without CUDA", facts
    memory = getattr(torch.cuda, "memory", None)
    if not hasattr(memory, "_record_memory_history") or not hasattr(memory, "_snapshot"):
        return protocol.TORCH_TOO_OLD, "this torch cannot record allocation history (2.1 or newer can)", facts
    # is_initialized() is a Python flag; it neither initialises CUDA nor forks badly.
    if not torch.cuda.is_initialized():
        return protocol.WAITING_CUDA, "torch is imported; capture starts when your code first uses CUDA", facts
    return protocol.READY, "", facts


def on_cuda_init(callback):
    """Run ``callback`` when the user's code initialises CUDA (at once if it has).

    torch runs queued calls at the end of its lazy CUDA initialisation, before
    the allocation that triggered it, so history started there sees the
    user's very first block. Returns False where torch cannot queue calls.
    """
    torch = loaded_torch()
    lazy_call = getattr(torch.cuda, "_lazy_call", None) if torch is not None else None
    if lazy_call is None:
        return False
    lazy_call(callback)
    return True


def history_enabled(initialising=False):
    """Whether allocation history is on (None where torch cannot say).

    Only once CUDA is initialised (or from a call queued for its
    initialisation, which runs after the driver is up): on torch 2.11 asking
    before that crashes the process (seen on an H200).
    """
    torch = loaded_torch()
    if torch is None or not (initialising or torch.cuda.is_initialized()):
        return None
    probe = getattr(torch._C, "_cuda_isHistoryEnabled", None)
    return None if probe is None else bool(probe())


def start_history(mode, stacks, max_entries, torch=None):
    """Record allocation history: mode 'all' (stacks and trace) or 'state' (stacks only)."""
    torch = torch or loaded_torch()
    torch.cuda.memory._record_memory_history(enabled=mode, context="all", stacks=stacks, max_entries=int(max_entries))


def stop_history():
    torch = loaded_torch()
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.memory._record_memory_history(enabled=None)


def _snapshot_without_traces(torch):
    # torch 2.11+ can skip the trace ring buffer, which dominates cost once
    # history is long (52 ms against 1.2 ms after 36,000 entries on an H200).
    snap = torch.cuda.memory.memory_snapshot
    if _takes_include_traces(snap):
        return {"segments": snap(include_traces=False), "device_traces": []}
    return None


@functools.lru_cache(maxsize=4)
def _takes_include_traces(snap):
    """Whether torch's memory_snapshot takes include_traces (asked once: inspect costs tens of µs a call)."""
    return "include_traces" in inspect.signature(snap).parameters


def raw_snapshot(include_traces=False, torch=None):
    """The allocator snapshot dict, without trace entries unless asked."""
    torch = torch or loaded_torch()
    if not include_traces:
        snap = _snapshot_without_traces(torch)
        if snap is not None:
            return snap
    return torch.cuda.memory._snapshot()


def warm_up_in_background():
    """Pay the first snapshot's one-time cost on a daemon thread.

    On an H200 (torch 2.11) the first snapshot that holds a block with Python
    frames took 4.5-6 s, but released the GIL for all but 0.15 s at a time.
    The thread only reads the allocator: it waits (up to a minute) for the
    user's first block, then takes one snapshot (the one that pays), so the
    first cell's capture need not pay it in the user's cell.
    """
    torch = loaded_torch()

    def run():
        try:
            for _ in range(1200):
                snap = _snapshot_without_traces(torch)
                if snap is None or any(s["blocks"] for s in snap["segments"]):
                    return
                threading.Event().wait(0.05)
        except Exception:
            pass

    threading.Thread(target=run, name="cuda-memdiff-warm-up", daemon=True).start()


def warm_up(torch=None):
    """The recorder's warm-up: allocate one small block, snapshot it, free it."""
    torch = torch or loaded_torch()
    untouched = torch.cuda.memory_reserved() == 0
    block = torch.empty(1, device="cuda")
    raw_snapshot(torch=torch)
    del block
    if untouched:  # give back the segment the warm-up reserved
        torch.cuda.empty_cache()


def _used_devices(torch):
    # mem_get_info on a device the user never touched would create a CUDA
    # context there (hundreds of MiB): only ask devices that have one.
    has_context = getattr(torch._C, "_cuda_hasPrimaryContext", None)
    count = torch.cuda.device_count()
    return [d for d in range(count) if has_context is None or has_context(d)]


def _counters(torch, device):
    """One device's allocator counters, nested as torch keeps them ({stat: {pool: {kind: n}}}), read once.

    torch.cuda.memory_allocated() and its kin each flatten every counter in
    Python (about 1 ms a call on an H200), and a capture needs several.
    """
    return torch.cuda.memory_stats_as_nested_dict(device)


def _count(counters, stat, pool="all", kind="current"):
    return int(counters.get(stat, {}).get(pool, {}).get(kind, 0))


def usage_by_device(torch=None):
    """{device: (allocated, reserved, peak allocated)} for the devices in use: cheap counters, for a cell's start."""
    torch = torch or loaded_torch()
    usage = {}
    for device in _used_devices(torch):
        counters = _counters(torch, device)
        usage[device] = (
            _count(counters, "allocated_bytes"),
            _count(counters, "reserved_bytes"),
            _count(counters, "allocated_bytes", kind="peak"),
        )
    return usage


def _read_counters(torch):
    """{device: its counters (_counters)} for the devices in use, each read once."""
    return {device: _counters(torch, device) for device in _used_devices(torch)}


def _device_stats(torch, counters):
    stats = []
    for device, counted in counters.items():
        free, total = torch.cuda.mem_get_info(device)
        stats.append(
            {
                "device": device,
                "allocated": _count(counted, "allocated_bytes"),
                "reserved": _count(counted, "reserved_bytes"),
                "peak_allocated": _count(counted, "allocated_bytes", kind="peak"),
                "peak_reserved": _count(counted, "reserved_bytes", kind="peak"),
                "device_free": int(free),
                "device_total": int(total),
            }
        )
    return stats


def device_stats(torch=None):
    """Per device in use: allocated, reserved, peaks since the last reset, free and total."""
    torch = torch or loaded_torch()
    return _device_stats(torch, _read_counters(torch))


def _allocation_count(counters):
    try:
        counts = {}
        for device, counted in counters.items():
            allocation = counted["allocation"]
            for pool in ("small", "large"):
                stat = allocation[f"{pool}_pool"]
                allocated, freed = int(stat["allocated"]), int(stat["freed"])
                counts[(device, pool)] = (allocated, int(stat["current"]) - allocated + freed, freed)
        return counts
    except Exception:  # a torch or allocator without the counters: every block is read
        return None


def allocation_count(torch=None):
    """How many allocations the caching allocator has made, for the devices in use:
    {(device, "small" or "large"): (allocations, offset, frees)} (a segment's ``segment_type`` names its pool;
    the offset, live blocks less allocations plus frees, moves only when the user resets torch's counters); None
    where unknown."""
    torch = torch or loaded_torch()
    try:
        counters = _read_counters(torch)
    except Exception:
        return None
    return _allocation_count(counters)


def counted_snapshot(include_traces=False, torch=None):
    """(allocation counts, raw snapshot, device stats): the counts read just before the snapshot, None when
    they moved while it was taken (another thread allocating: then they would not say what the snapshot
    holds); the device stats (device_stats) from the read of the counters just after it, which checks them:
    each read of torch's counters builds them all anew."""
    torch = torch or loaded_torch()
    before = allocation_count(torch)
    raw = raw_snapshot(include_traces, torch)
    counters = _read_counters(torch)
    if before is not None and _allocation_count(counters) != before:
        before = None
    return before, raw, _device_stats(torch, counters)


def reset_peaks(torch=None):
    torch = torch or loaded_torch()
    for device in _used_devices(torch):
        torch.cuda.reset_peak_memory_stats(device)


def memory_metadata():
    """The allocation metadata string in force (torch 2.10+), or None where torch cannot say."""
    torch = loaded_torch()
    getter = getattr(torch.cuda.memory, "_get_memory_metadata", None) if torch is not None else None
    return None if getter is None else getter()


def set_memory_metadata(text):
    """Stamp the allocations that follow (torch 2.10+); False where unsupported."""
    torch = loaded_torch()
    setter = getattr(torch.cuda.memory, "_set_memory_metadata", None)
    if setter is None:
        return False
    setter(text)
    return True


def attach_oom_observer(callback, torch=None):
    """Call callback(device, alloc, device_allocated, device_free) when an allocation fails.

    torch offers no way to detach one: attach once per process.
    """
    torch = torch or loaded_torch()
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        return False
    attach(callback)
    return True


def torch_module():
    """The torch module for the holder search, or None when the user has not imported it."""
    return loaded_torch()


def torch_functions_off(torch):
    """A context in which no ``__torch_function__`` runs, for the walks that read the user's tensors: neither a
    tensor subclass's nor a TorchFunctionMode's the user left on (``torch.set_default_device`` enters one; a
    logging mode may count calls). Both are the user's code, and a mode made each read 16 times slower
    (helper-80). From torch 2.0 DisableTorchFunction turns off both, DisableTorchFunctionSubclass only the first."""
    off = getattr(torch._C, "DisableTorchFunction", None) or getattr(torch._C, "DisableTorchFunctionSubclass", None)
    return off() if off is not None else contextlib.nullcontext()


class TensorFields:
    """A tensor's fields and methods as torch's C type reads them, for the walks over the user's tensors: a
    subclass may override ``grad`` or ``data_ptr`` with Python, or ``__getattribute__``, and that is the user's
    code (the helper's first law). Each is a C callable, as quick as the attribute read it replaces, and takes
    the tensor: ``fields.grad(t)``, ``map(fields.data_ptr, tensors)``."""

    def __init__(self, torch):
        base = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase  # named _TensorBase before 2.2
        for name in ("grad", "grad_fn", "is_leaf", "requires_grad", "shape", "dtype", "device"):
            setattr(self, name, getattr(base, name).__get__)
        for name in ("data_ptr", "get_device", "untyped_storage"):
            setattr(self, name, getattr(base, name))


@functools.lru_cache(maxsize=2)
def tensor_fields(torch):
    """The TensorFields of a torch module, made once."""
    return TensorFields(torch)
