"""Per-rank capture inside multi-process training (docs/ranks-format.md).

One opt-in line in the training function, run by every rank::

    from cuda_memdiff_kernel import ranks; ranks.capture("runs/ddp")

After every ``every``-th optimizer step (torch's global optimizer step hook,
so the training loop stays as it is) the rank writes its CUDA allocator
snapshot into ``runs/ddp/rank<R>/`` as a session folder of its own
(docs/session-format.md: each capture point is a "cell"), and
``ranks.mark("after eval")`` adds a capture point by hand. Rank 0 keeps
``runs/ddp/ranks.json``, the index of the ranks.

Gathering: with a process group, each capture point that fires on every
rank (optimizer steps: all ranks of a data-parallel job step together) sends
rank 0 the rank's figures through ``torch.distributed.gather_object``, and,
for a rank on another host, the snapshot file itself, so the folder on rank
0's host is complete without a shared file system. ``mark()`` may be called
on some ranks only, so it never communicates. Without a process group every
rank writes its own folder, which is complete on a shared path.

Do no harm: peak counters are read, never reset; history is started only when
the user has not started it; every failure of the capture is reported once on
stderr and turns the capture off, never into the training.
"""

import gzip
import json
import os
import pickle
import socket
import sys
import threading

from . import torch_probe

FORMAT = "cuda-memdiff-ranks"
VERSION = 1
INDEX_FILE = "ranks.json"
DEFAULT_MAX_CAPTURES = 200

_active = None


def rank_folder(rank):
    return f"rank{int(rank)}"


def _identity(torch):
    """(rank, world size, whether a process group exists)."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), True
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), False


def _cuda_stats(torch):
    """Allocator figures of the devices this rank uses, in the session format's names."""
    per_device = [
        {
            "device": d["device"],
            "allocated": d["allocated"],
            "reserved": d["reserved"],
            "peak_allocated": d["peak_allocated"],
            "peak_reserved": d["peak_reserved"],
            "device_free": d["device_free"],
            "device_total": d["device_total"],
        }
        for d in torch_probe.device_stats(torch)
    ]
    total = {
        key: sum(d[key] for d in per_device)
        for key in ("allocated", "reserved", "peak_allocated", "peak_reserved", "device_free", "device_total")
    }
    total["per_device"] = per_device
    return total


def _write_json(path, value):
    """Write through a temporary file, so a reader never sees half a manifest."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
    os.replace(tmp, path)


class RankCapture:
    """The capture of one rank: its folder, its capture points, its hook."""

    def __init__(
        self,
        folder,
        every=1,
        max_captures=DEFAULT_MAX_CAPTURES,
        snapshot=None,
        stats=None,
        gather="auto",
        history_entries=100000,
        torch=None,
    ):
        torch = torch or torch_probe.import_torch()
        if torch is None:
            raise RuntimeError("cuda_memdiff_kernel.ranks needs torch")
        if every < 1:
            raise ValueError("every must be at least 1")
        if gather not in ("auto", "files"):
            raise ValueError("gather must be 'auto' (files only from other hosts) or 'files' (always)")
        self.gather = gather
        self.torch = torch
        self.root = os.path.abspath(folder)
        self.every = int(every)
        self.max_captures = int(max_captures)
        self.rank, self.world_size, self.grouped = _identity(torch)
        self.host = socket.gethostname()
        self.folder = os.path.join(self.root, rank_folder(self.rank))
        cuda = torch.cuda.is_available()
        if snapshot is None and not cuda:
            raise RuntimeError("cuda_memdiff_kernel.ranks: this rank has no CUDA device to snapshot")
        self._snapshot = snapshot or (lambda: torch_probe.raw_snapshot(include_traces=True, torch=torch))
        self._stats = stats or ((lambda: _cuda_stats(torch)) if cuda else (lambda: None))
        self.cells = []
        self.steps = 0
        self.off = None
        self._lock = threading.Lock()
        self._ranks = {}
        os.makedirs(self.folder, exist_ok=True)
        self.history_started = False
        if snapshot is None:
            # At CUDA's lazy initialisation (at once if it is up), before the
            # first allocation, so every block keeps its stack.
            def start_history():
                if not torch_probe.history_enabled(initialising=True):
                    torch_probe.start_history("all", "python", history_entries, torch)
                    self.history_started = True

            torch_probe.on_cuda_init(start_history)
        self._before = self._stats()
        from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: PLC0415

        self._hook = register_optimizer_step_post_hook(self._on_step)

    # -- capture points --------------------------------------------------
    def _on_step(self, optimizer, args, kwargs):
        self.steps += 1
        if self.steps % self.every == 0:
            self._capture(f"step {self.steps}", self.steps, collective=True)

    def mark(self, label):
        """A capture point of the user's choosing; never communicates with other ranks."""
        self._capture(str(label), self.steps, collective=False)

    def _capture(self, label, step, collective):
        if self.off is not None:
            return
        try:
            with self._lock:
                if len(self.cells) >= self.max_captures:
                    self._turn_off(f"stopped after {self.max_captures} capture points (max_captures)")
                    return
                entry = self._write_point(label, step)
            if collective and self.grouped:
                self._gather(entry)
            elif self.grouped and self.rank == 0:
                self._write_index({0: self._summary()})
            # Without a group each rank keeps only its folder: several
            # processes writing one index would overwrite each other.
        except Exception as error:  # the capture must never break training
            self._turn_off(f"{type(error).__name__}: {error}")

    def _write_point(self, label, step):
        index = len(self.cells)
        name = f"point{index:04d}.pickle.gz"
        snap = self._snapshot()
        with gzip.open(os.path.join(self.folder, name), "wb") as f:
            pickle.dump(snap, f, protocol=4)
        after = self._stats()
        entry = {
            "index": index,
            "execution_count": None,
            "label": label,
            "step": step,
            "snapshot_file": name,
            "source": None,
            "blocks": sum(len(s["blocks"]) for s in snap["segments"]),
        }
        if after is not None:
            entry["before"], entry["after"] = self._before, after
        self._before = after
        self.cells.append(entry)
        _write_json(os.path.join(self.folder, "manifest.json"), self._manifest())
        return entry

    def _manifest(self):
        torch = self.torch
        cuda = torch.cuda.is_available()
        return {
            "scenario": "ranks",
            "rank": self.rank,
            "world_size": self.world_size,
            "host": self.host,
            "pid": os.getpid(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(torch.cuda.current_device()) if cuda else None,
            "local_device": torch.cuda.current_device() if cuda else None,
            "capture": {"every": self.every, "trigger": "optimizer step"},
            "cells": self.cells,
        }

    def _summary(self):
        return {
            "rank": self.rank,
            "folder": rank_folder(self.rank),
            "host": self.host,
            "pid": os.getpid(),
            "off": self.off,
        }

    # -- gathering -------------------------------------------------------
    def _gather(self, entry):
        """Send rank 0 this rank's summary, and its file when rank 0 cannot see this host's disk."""
        dist = self.torch.distributed
        payload = {"summary": self._summary(), "entry": entry, "file": None}
        host0 = self._rank0_host()  # a collective: every rank asks, whatever it sends
        if self.rank != 0 and (self.gather == "files" or self.host != host0):
            with open(os.path.join(self.folder, entry["snapshot_file"]), "rb") as f:
                payload["file"] = f.read()
            payload["manifest"] = self._manifest()
        received = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(payload, received, dst=0)
        if self.rank != 0:
            return
        summaries = {}
        for item in received:
            summary = item["summary"]
            summaries[summary["rank"]] = summary
            if item["file"] is not None:  # a rank on another host: keep its folder here too
                folder = os.path.join(self.root, summary["folder"])
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, item["entry"]["snapshot_file"]), "wb") as f:
                    f.write(item["file"])
                _write_json(os.path.join(folder, "manifest.json"), item["manifest"])
        self._write_index(summaries)

    def _rank0_host(self):
        if not hasattr(self, "_host0"):
            hosts = [None] * self.world_size
            self.torch.distributed.all_gather_object(hosts, self.host)
            self._host0 = hosts[0]
        return self._host0

    def _write_index(self, summaries):
        self._ranks.update(summaries)
        index = {
            "format": FORMAT,
            "version": VERSION,
            "world_size": self.world_size,
            "gathered": self.grouped,
            "ranks": [self._ranks[r] for r in sorted(self._ranks)],
        }
        _write_json(os.path.join(self.root, INDEX_FILE), index)

    # -- the end ---------------------------------------------------------
    def _turn_off(self, why):
        if self.off is None:
            self.off = why
            print(f"cuda-memdiff ranks: capture on rank {self.rank} is off: {why}", file=sys.stderr)
            self.close()

    def close(self):
        """Remove the hook and stop the history this capture started; the folder stays."""
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self.history_started:
            torch_probe.stop_history()
            self.history_started = False


def capture(folder, every=1, max_captures=DEFAULT_MAX_CAPTURES, gather="auto", snapshot=None, stats=None):
    """Capture this rank after every ``every``-th optimizer step into ``folder/rank<R>/``.

    ``gather="files"`` sends every rank's snapshot files to rank 0 even from
    its own host (when ranks write to folders rank 0 cannot read).
    ``snapshot`` and ``stats`` replace the CUDA snapshot and figures (for
    replaying recorded snapshots on machines without a GPU).
    """
    global _active
    if _active is not None:
        _active.close()
    _active = RankCapture(folder, every=every, max_captures=max_captures, snapshot=snapshot, stats=stats, gather=gather)
    return _active


def mark(label):
    """Add a capture point to this rank's capture (started by ``capture``)."""
    if _active is None:
        raise RuntimeError("cuda_memdiff_kernel.ranks.mark: call ranks.capture(folder) first")
    _active.mark(label)


def stop():
    """Stop capturing on this rank."""
    global _active
    if _active is not None:
        _active.close()
        _active = None
