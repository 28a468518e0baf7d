"""Replay source: serves a recorded session's snapshots in place of live ones.

Set ``CUDA_MEMDIFF_REPLAY=<session folder>`` in the kernel's environment
(the folder layout is docs/session-format.md). Each executed cell gets the
recorded snapshot of the next recorded cell with the same source, once and in
the recording's order (a second Run All gets notes, not the first figures
again: restarting the kernel replays from the start); everything
after that (compaction, sending, badges) is the live path unchanged. A
holders request is answered from the holders the recorder saved after the
last cell served (``recorder --holders``), as the live kernel would have
answered then; a session recorded without them answers with no holders. A
folder that cannot be read raises ``ReplayError`` with one line, which the
helper turns into a status.
"""

import contextlib
import gzip
import io
import json
import os
import pickle
import stat
import zlib

from . import protocol
from .compact import NotExact, check_exact
from .manifest import ManifestError, read_manifest

REPLAY_ENV = "CUDA_MEMDIFF_REPLAY"


class ReplayError(Exception):
    """The replay folder or one of its files cannot be used."""


class _PlainDataUnpickler(pickle.Unpickler):
    """Snapshots are plain data: refuse every global, so a recording never runs code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: recorded snapshot imports {module}.{name}")


class Unusable(OSError):
    """A file of the folder refused before it is read, or while it inflates: its words follow the file's name."""


def read_file(path, max_bytes=None):
    """The bytes of a regular file of at most ``max_bytes`` (protocol.MAX_SNAPSHOT_BYTES): a pipe would wait
    for a writer that never comes, a device (``/dev/zero``) would never end. Opened without waiting and looked
    at once open, so a file swapped for a pipe meanwhile is refused too."""
    max_bytes = protocol.MAX_SNAPSHOT_BYTES if max_bytes is None else max_bytes
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb", closefd=True) as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unusable("is not a regular file")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Unusable(f"is more than the {max_bytes:,} bytes a snapshot may hold")
    return data


def load_snapshot_file(path, max_bytes=None):
    """The raw snapshot in the file at ``path``: a pickle (plain data only) or the same dict as JSON, either
    gzipped, as the CLI reads them; at most ``max_bytes`` of pickle or JSON (a gzip bomb costs that much, not
    what it inflates to)."""
    max_bytes = protocol.MAX_SNAPSHOT_BYTES if max_bytes is None else max_bytes
    data = read_file(path, max_bytes)
    if data[:2] == b"\x1f\x8b":
        # gzip's own reader: every member, zero padding skipped, and never more than asked for at once
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise Unusable(f"decompresses to more than the {max_bytes:,} bytes a snapshot may hold")
    if data.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{":
        try:
            return json.loads(data)  # torch's pool ids come as lists, which the reader takes as it takes tuples
        except RecursionError:
            raise Unusable("is JSON nested too deep to be a snapshot") from None
        except ValueError as exc:
            if "digits" in str(exc):  # Python reads at most 4,300 digits of a number
                raise Unusable("holds a number of more than 4,300 digits") from None
            raise
    return _PlainDataUnpickler(io.BytesIO(data)).load()


# What reading a file that is cut short, corrupt or no pickle raises: plain Python's words for a bad file.
_UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, zlib.error, ValueError, IndexError, KeyError, TypeError)
# What the helper's reader raises on a pickle of the wrong shape (a string where a number is, a list for a dict).
_MISSHAPEN = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError)


class ReplaySource:
    """Recorded snapshots and allocator stats, looked up by cell source."""

    def __init__(self, folder):
        self.folder = folder
        try:
            data = read_file(os.path.join(folder, "manifest.json"))
        except OSError as exc:
            raise ReplayError(f"{folder}: no readable manifest.json ({exc})") from None
        # The rule the engine reads a manifest by too (manifest_fields.json): the same files refused, in its words.
        try:
            self.manifest = read_manifest(data)
        except ManifestError as exc:
            raise ReplayError(f"{folder}: {exc}") from None
        self._cells = self.manifest["cells"]
        self._next = 0
        self._served = None  # the recorded cell served last
        self._served_at = set()  # the indices of the recorded runs served

    @property
    def name(self):
        return os.path.basename(os.path.normpath(self.folder))

    def peek(self, source):
        """What ``take`` would do for this source, taking nothing: (the recorded run it would serve, the first
        line of the next recorded run it would pass over to reach it), each None where there is none."""
        k = self._next_run(source)
        if k is None:
            return None, None
        if k == self._next:
            return self._cells[k], None
        lines = self._cells[self._next]["source"].splitlines()
        return self._cells[k], next((line.strip() for line in lines if line.strip()), "")

    def take(self, source):
        """The next recorded run of this source, searching on from the last one served, or None.

        The recording is served once, in its order: a run the recording no
        longer has (Run All a second time) gets nothing rather than the first
        run's figures again, which would show memory falling back to where it
        was; runs passed over to reach a later one are skipped for good.
        ``not_served(source)`` says why a source got nothing.
        """
        k = self._next_run(source)
        if k is None:
            return None
        self._served_at.add(k)
        self._next = k + 1
        self._served = self._cells[k]
        return self._cells[k]

    def _next_run(self, source):
        return next((k for k in range(self._next, len(self._cells)) if _same_source(self._cells[k], source)), None)

    def put_back(self, cell):
        """The capture of ``cell``, the run served last, failed (an interrupt): serve it again next time."""
        if cell is self._served:
            self._next = self._cells.index(cell)
            self._served_at.discard(self._next)
            self._served = None

    def not_served(self, source):
        """Why ``take`` has no run of this source: "replayed-already" (its runs before the last one served
        were replayed), "replay-skipped" (passed over to serve a later cell run first) or "not-recorded"."""
        runs = [k for k in range(self._next) if _same_source(self._cells[k], source)]
        if any(k in self._served_at for k in runs):
            return "replayed-already"
        return "replay-skipped" if runs else "not-recorded"

    def holders(self, blocks):
        """The recorded answer for ``blocks`` ([{"device", "address", ...}]): the holders saved after the
        last cell served, for the blocks asked about; none where that cell has no holders file."""
        name = (self._served or {}).get("holders_file")
        answer = {"blocks": [], "partial": False, "elapsed_ms": 0.0, "replay": self.name}
        if name is None:
            return answer
        try:
            recorded = json.loads(read_file(os.path.join(self.folder, name)))
            asked = {(int(b["device"]), int(b["address"])) for b in blocks}
            rows = [_holders_row(b) for b in recorded["blocks"]]
            answer["blocks"] = [b for b in rows if (b["device"], b["address"]) in asked]
            answer["partial"] = bool(recorded.get("partial", False))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ReplayError(f"{self.folder}: {name} is not a holders answer ({exc})") from None
        return answer

    def snapshot(self, file_name):
        """The raw snapshot in the folder's ``file_name``; ReplayError naming it when it cannot be read, or when
        an integer the wire would carry is past what the frontend's numbers hold exactly."""
        try:
            raw = load_snapshot_file(os.path.join(self.folder, file_name))
        except ReplayError:
            raise
        except Unusable as exc:
            raise ReplayError(f"{self.folder}: {file_name} {exc}") from None
        except _UNREADABLE as exc:
            raise ReplayError(f"{self.folder}: {file_name} cannot be read as a snapshot ({_reason(exc)})") from None
        try:
            _check_sent_integers(raw)
        except NotExact as exc:
            raise ReplayError(f"{self.folder}: {file_name} {exc}") from None
        return raw

    @contextlib.contextmanager
    def reading(self, file_name):
        """Around the helper's read of a snapshot from ``file_name``: a pickle of the wrong shape is a ReplayError
        that names the file, not a KeyError of the reader's."""
        try:
            yield
        except NotExact as exc:  # a frame's line, found as the reader interns it
            raise ReplayError(f"{self.folder}: {file_name} {exc}") from None
        except _MISSHAPEN as exc:
            raise ReplayError(
                f"{self.folder}: {file_name} is not a snapshot as torch writes it ({_reason(exc)})"
            ) from None

    def block_roles(self, cell):
        """The recorded cell's role per block ({(device, address): role index}) from its ``roles_file``.

        None when the cell has no roles file or it cannot be read: the cell's
        snapshot and bytes per role still go, without per-block roles. The
        manifest's rule has checked the name; the file's columns are judged
        by the engine alone (parseBlockRoles), which reads them in a session
        folder: here a block the file gives no role sends none, and the panel
        checks the runs that arrive.
        """
        name = cell.get("roles_file")
        if name is None:
            return None
        try:
            columns = json.loads(read_file(os.path.join(self.folder, name)))
            codes = {role: k for k, role in enumerate(protocol.ROLES)}
            return {
                (int(d), int(a)): codes[r] for d, a, r in zip(columns["device"], columns["address"], columns["role"])
            }
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def _per_device(stats):
        stats = stats or {}
        return stats.get("per_device") or [dict(stats, device=0)]

    @classmethod
    def device_stats(cls, cell):
        return [
            {
                "device": d.get("device", 0),
                "allocated": d.get("allocated", 0),
                "reserved": d.get("reserved", 0),
                # Manifests written before the figures took the wire's names say max_*.
                "peak_allocated": d.get("peak_allocated", d.get("max_allocated", d.get("allocated", 0))),
                "peak_reserved": d.get("peak_reserved", d.get("max_reserved", d.get("reserved", 0))),
                "device_free": d.get("device_free"),
                "device_total": d.get("device_total"),
            }
            for d in cls._per_device(cell.get("after"))
        ]

    @classmethod
    def before_stats(cls, cell):
        """Allocated bytes per device at the recorded cell's start."""
        return [
            {"device": d.get("device", 0), "allocated": d.get("allocated", 0), "reserved": d.get("reserved", 0)}
            for d in cls._per_device(cell.get("before"))
        ]


# The integers of a raw snapshot that a snapshot message carries (compact.py, log.py), by where they sit.
_SEGMENT_INTEGERS = ("device", "address", "total_size", "stream")
_BLOCK_INTEGERS = ("address", "size", "requested_size")
_TRACE_INTEGERS = ("addr", "size", "time_us")


def _sent_items(raw):
    """(dict, the integer fields the wire carries from it, where it sits) for each segment, block and trace entry."""

    def items(value):
        return value if isinstance(value, list) else ()

    segments = raw.get("segments") if isinstance(raw, dict) else raw
    for i, segment in enumerate(items(segments)):
        yield segment, _SEGMENT_INTEGERS, f"segment {i}"
        for j, block in enumerate(items(segment.get("blocks") if isinstance(segment, dict) else None)):
            yield block, _BLOCK_INTEGERS, f"segment {i} block {j}"
    for device, entries in enumerate(items(raw.get("device_traces") if isinstance(raw, dict) else None)):
        for k, entry in enumerate(items(entries)):
            yield entry, _TRACE_INTEGERS, f"device {device} trace entry {k}"


def _check_sent_integers(raw):
    """Raise NotExact, naming the field as the frontend's reader names it (``segment 4 address``), where a recorded
    snapshot holds an integer the wire would carry past 2**53 - 1.

    A recording comes from anywhere, and the frontend reads every number of a message as a double: sent on, such
    an integer would arrive rounded, two blocks at two addresses as one. Values of another type are left to the
    reader, whose errors name the file too (``reading``), and frames' lines to the frame table, which sees each
    distinct frame once (compact.FrameTable).
    """
    for item, keys, where in _sent_items(raw):
        if isinstance(item, dict):
            for key in keys:
                check_exact(item.get(key), f"{where} {key}")


def _reason(exc):
    """An exception of Python's reading, in one short line: its kind in words and its text."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    # A file error's own text says it ("pickle data was truncated"); a reader's names its kind first.
    plain = "" if isinstance(exc, (pickle.UnpicklingError, OSError, zlib.error)) else type(exc).__name__
    kind = {"KeyError": "no key", "EOFError": "cut short"}.get(type(exc).__name__, plain)
    return f"{kind} {text[:120]}".strip()


def _same_source(cell, source):
    return cell["source"].strip() == source.strip()


def _holders_row(row):
    """A recorded answer's row as the live kernel sends it: whole-number device and address, holders with a
    kind and a path (text) and maybe a reference of a known type; anything else is not an answer."""
    device, address, holders = row["device"], row["address"], row["holders"]
    if not all(type(n) is int for n in (device, address)) or not isinstance(holders, list):
        raise TypeError(f"a row is not a block's holders: {row!r:.80}")
    check_exact(device, "a row's device")
    check_exact(address, "a row's address")
    for h in holders:
        if not (isinstance(h, dict) and isinstance(h.get("kind"), str) and isinstance(h.get("path"), str)):
            raise TypeError(f"a holder is not a kind and a path: {h!r:.80}")
        reference = h.get("reference")  # none is fine; null is not
        if "reference" in h and not (
            isinstance(reference, dict) and reference.get("type") in protocol.HOLDER_REFERENCES
        ):
            raise TypeError(f"a holder's reference is of no known type: {reference!r:.80}")
    return row


def replay_from_environment():
    folder = os.environ.get(REPLAY_ENV)
    return ReplaySource(folder) if folder else None
