"""The one module that touches torch. Every call is guarded: a kernel without
torch, a CPU build, or an old release answers with a status, never an error
in the user's cell."""
import inspect

from . import protocol


def _torch():
    try:
        import torch  # noqa: PLC0415 - optional, imported only when asked
    except Exception:  # ImportError, or a broken install raising anything
        return None
    return torch


def probe():
    """(status, message, facts) for this kernel's torch and CUDA."""
    torch = _torch()
    if torch is None:
        return protocol.NO_TORCH, "torch is not installed in this kernel", {}
    facts = {"torch": str(torch.__version__)}
    try:
        available = bool(torch.cuda.is_available())
    except Exception as exc:  # driver errors surface here
        return protocol.NO_CUDA, f"CUDA is not usable: {exc}", facts
    if not available:
        return protocol.NO_CUDA, "torch has no CUDA device here", facts
    memory = torch.cuda.memory
    if not hasattr(memory, "_record_memory_history") or not hasattr(memory, "_snapshot"):
        return protocol.TORCH_TOO_OLD, "this torch cannot record allocation history (2.1 or newer can)", facts
    facts["device_count"] = torch.cuda.device_count()
    return protocol.READY, "", facts


def start_history(mode, stacks, max_entries):
    """Record allocation history: mode 'all' (stacks and trace), 'state' (stacks only) or 'off'."""
    torch = _torch()
    if mode == "off":
        torch.cuda.memory._record_memory_history(enabled=None)
        return
    torch.cuda.memory._record_memory_history(
        enabled=mode, context="all", stacks=stacks, max_entries=int(max_entries)
    )


def stop_history():
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.memory._record_memory_history(enabled=None)


def _snapshot_without_traces(torch):
    # torch 2.11+ can skip the trace ring buffer, which dominates cost once
    # history is long (52 ms against 1.2 ms after 36,000 entries on an H200).
    snap = torch.cuda.memory.memory_snapshot
    if "include_traces" in inspect.signature(snap).parameters:
        return {"segments": snap(include_traces=False), "device_traces": []}
    return None


def warm_up():
    """Pay the first snapshot's one-time cost now rather than in the user's first cell.

    On an H200 with torch 2.11 the first snapshot that holds a live block took
    about 4 s (an empty one took none), so the warm-up allocates one small
    block, snapshots it, and frees it again.
    """
    torch = _torch()
    untouched = torch.cuda.memory_reserved() == 0
    block = torch.empty(1, device="cuda")
    raw_snapshot()
    del block
    if untouched:  # give back the segment the warm-up reserved
        torch.cuda.empty_cache()


def raw_snapshot(include_traces=False):
    """The allocator snapshot dict, without trace entries unless asked."""
    torch = _torch()
    if not include_traces:
        snap = _snapshot_without_traces(torch)
        if snap is not None:
            return snap
    return torch.cuda.memory._snapshot()


def device_stats():
    """Per device: allocated, reserved, peaks since the last reset, free and total."""
    torch = _torch()
    stats = []
    for device in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(device)
        stats.append({
            "device": device,
            "allocated": int(torch.cuda.memory_allocated(device)),
            "reserved": int(torch.cuda.memory_reserved(device)),
            "peak_allocated": int(torch.cuda.max_memory_allocated(device)),
            "peak_reserved": int(torch.cuda.max_memory_reserved(device)),
            "device_free": int(free),
            "device_total": int(total),
        })
    return stats


def reset_peaks():
    torch = _torch()
    for device in range(torch.cuda.device_count()):
        torch.cuda.reset_peak_memory_stats(device)


def set_allocation_metadata(text):
    """Stamp the allocations that follow with the cell (torch 2.10+); False where unsupported."""
    torch = _torch()
    setter = getattr(torch.cuda.memory, "_set_memory_metadata", None)
    if setter is None:
        return False
    setter(text)
    return True


def attach_oom_observer(callback):
    """Call callback(device, alloc, device_allocated, device_free) when an allocation fails."""
    torch = _torch()
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        return False
    attach(callback)
    return True


def torch_module():
    """The torch module for the holder search, or None without torch."""
    return _torch()
