"""Replay source: serves a recorded session's snapshots in place of live ones.

Set ``CUDA_MEMDIFF_REPLAY=<session folder>`` in the kernel's environment
(the folder layout is docs/session-format.md). Each executed cell gets the
recorded snapshot of the next recorded cell with the same source; everything
after that (compaction, sending, badges) is the live path unchanged.
"""
import gzip
import io
import json
import os
import pickle

REPLAY_ENV = "CUDA_MEMDIFF_REPLAY"


class _PlainDataUnpickler(pickle.Unpickler):
    """Snapshots are plain data: refuse every global, so a recording never runs code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: recorded snapshot imports {module}.{name}")


def load_snapshot_file(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return _PlainDataUnpickler(io.BytesIO(data)).load()


class ReplaySource:
    """Recorded snapshots and allocator stats, looked up by cell source."""

    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
            self.manifest = json.load(f)
        self._cells = self.manifest["cells"]
        self._next = 0

    @property
    def name(self):
        return os.path.basename(os.path.normpath(self.folder))

    def take(self, source):
        """The recorded cell for this source (searching on from the last one served), or None."""
        n = len(self._cells)
        for step in range(n):
            k = (self._next + step) % n
            if self._cells[k].get("source", "").strip() == source.strip():
                self._next = k + 1
                return self._cells[k]
        return None

    def snapshot(self, file_name):
        return load_snapshot_file(os.path.join(self.folder, file_name))

    @staticmethod
    def device_stats(cell):
        after = cell.get("after") or {}
        per_device = after.get("per_device") or [dict(after, device=0)]
        return [
            {
                "device": d.get("device", 0),
                "allocated": d.get("allocated", 0),
                "reserved": d.get("reserved", 0),
                "peak_allocated": d.get("max_allocated", d.get("allocated", 0)),
                "peak_reserved": d.get("max_reserved", d.get("reserved", 0)),
                "device_free": d.get("device_free"),
                "device_total": d.get("device_total"),
            }
            for d in per_device
        ]


def replay_from_environment():
    folder = os.environ.get(REPLAY_ENV)
    return ReplaySource(folder) if folder else None
