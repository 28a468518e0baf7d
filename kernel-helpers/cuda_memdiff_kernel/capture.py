"""Per-cell capture: IPython's pre/post_run_cell hooks take a snapshot after
every cell and push it to the frontend. Capture runs inside the kernel because
"Run All" queues every cell at once: a request sent by the frontend after cell
k would only run after the whole queue.

Nothing here enters the user's namespace, history or ``Out``, and no exception
reaches the user's cell: failures become an "error" status.
"""
import time
import traceback

from . import holders, protocol, torch_probe
from .compact import WireEncoder
from .replay import replay_from_environment

DEFAULT_SETTINGS = {
    "capture": True,
    "history": "all",  # 'all' | 'state' | 'off'
    "stacks": "python",  # 'python' | 'all' (C++ frames too, much slower)
    "max_entries": 100000,
    "include_traces": False,
}


class CellCapture:
    """Owns the hooks, the encoder and the channel for one IPython shell."""

    def __init__(self, shell, channel, settings=None, replay=None):
        self.shell = shell
        self.channel = channel
        self.settings = dict(DEFAULT_SETTINGS, **(settings or {}))
        self.replay = replay if replay is not None else replay_from_environment()
        self.encoder = WireEncoder()
        self.status = None
        self._cell = None
        self._oom_raw = []
        self._registered = False
        self._history_started = False

    # -- lifecycle -------------------------------------------------------
    def start(self):
        """Probe torch, start history, warm up, and hook the cell events."""
        facts = {}
        try:
            if not self.settings["capture"]:
                status, message = protocol.CAPTURE_OFF, "capture is turned off in the settings"
            elif self.replay is not None:
                status, message = protocol.READY, ""
                facts = {"replay": self.replay.name}
            else:
                status, message, facts = torch_probe.probe()
                if status == protocol.READY:
                    self._start_live()
        except Exception as exc:  # a broken torch must not break the kernel
            status, message = protocol.HELPER_ERROR, _describe(exc)
        self.status = status
        on_request = getattr(self.channel, "on_request", None)
        if on_request is not None:
            on_request(self.handle_request)
        if status == protocol.READY:
            self.shell.events.register("pre_run_cell", self._pre_run_cell)
            self.shell.events.register("post_run_cell", self._post_run_cell)
            self._registered = True
        self._send(protocol.status_message(status, message, **facts))
        return status

    def _start_live(self):
        if self.settings["history"] != "off":
            torch_probe.start_history(self.settings["history"], self.settings["stacks"], self.settings["max_entries"])
            self._history_started = True
        torch_probe.warm_up()
        torch_probe.attach_oom_observer(self._on_oom)

    def stop(self):
        """Unhook; stop the history this helper started."""
        if self._registered:
            self.shell.events.unregister("pre_run_cell", self._pre_run_cell)
            self.shell.events.unregister("post_run_cell", self._post_run_cell)
            self._registered = False
        if self._history_started:
            try:
                torch_probe.stop_history()
            except Exception:
                pass
            self._history_started = False

    # -- IPython events --------------------------------------------------
    def _pre_run_cell(self, info):
        try:
            self._cell = {
                "cell_id": getattr(info, "cell_id", None),
                "source": getattr(info, "raw_cell", "") or "",
            }
            self._oom_raw = []
            if self.replay is None:
                torch_probe.reset_peaks()
                torch_probe.set_allocation_metadata(f"cuda-memdiff cell {self._cell['cell_id']}")
        except Exception as exc:
            self._report(exc)

    def _post_run_cell(self, result):
        try:
            cell = self._cell or {"cell_id": None, "source": getattr(result.info, "raw_cell", "")}
            self._cell = None
            fields = {
                "cell_id": cell["cell_id"],
                "execution_count": result.execution_count,
                "error": _error_text(result),
            }
            if self.replay is not None:
                self._send_replayed(cell, fields)
            else:
                self._send_live(fields)
        except Exception as exc:
            self._report(exc)

    def _on_oom(self, device, alloc, device_allocated, device_free):
        # Inside the allocator: only take the snapshot; compact and send after the cell.
        try:
            raw = torch_probe.raw_snapshot(include_traces=True)
            self._oom_raw.append((raw, {"device": device, "alloc": alloc, "device_free": device_free}))
        except Exception:
            pass

    # -- requests from the frontend -----------------------------------------
    def handle_request(self, request):
        """Answer a frontend request; only ``holders`` exists. Bad requests get an error reply."""
        try:
            if not isinstance(request, dict) or request.get("type") != "holders-request":
                raise ValueError(f"unknown request {request!r:.80}")
            blocks = [{"device": int(d), "address": int(a), "size": int(n)} for d, a, n in request.get("blocks", [])]
            budget = min(float(request.get("budget_ms", holders.DEFAULT_BUDGET_S * 1000)), 30_000) / 1000
            if self.replay is not None:
                # A replayed session has no live tensors to ask about.
                answer = {"blocks": [], "partial": False, "elapsed_ms": 0.0, "replay": self.replay.name}
            else:
                answer = holders.find_holders(self.shell, blocks, budget)
            reply = {"v": protocol.PROTOCOL_VERSION, "type": "holders", "id": request.get("id")}
            reply.update(answer)
        except Exception as exc:
            reply = {"v": protocol.PROTOCOL_VERSION, "type": "holders", "id": getattr(request, "get", dict().get)("id"),
                     "error": _describe(exc), "blocks": [], "partial": True, "elapsed_ms": 0.0}
        self._send(reply)
        return reply

    # -- sending ---------------------------------------------------------
    def _send_live(self, fields):
        started = time.perf_counter()
        for raw, oom in self._oom_raw:
            self._send(self.encoder.encode(raw, reason="oom", oom=oom, devices=torch_probe.device_stats(), **fields))
        self._oom_raw = []
        raw = torch_probe.raw_snapshot(self.settings["include_traces"])
        devices = torch_probe.device_stats()
        message = self.encoder.encode(raw, reason="cell", devices=devices, **fields)
        message["capture_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._send(message)

    def _send_replayed(self, cell, fields):
        recorded = self.replay.take(cell["source"])
        if recorded is None:
            self._send(protocol.status_message(
                protocol.READY, "no recorded snapshot for this cell", replay=self.replay.name,
                cell_id=fields["cell_id"], execution_count=fields["execution_count"]))
            return
        devices = self.replay.device_stats(recorded)
        for name in recorded.get("oom_snapshots") or ():
            self._send(self.encoder.encode(self.replay.snapshot(name), reason="oom", devices=devices,
                                           replay=self.replay.name, **fields))
        fields["error"] = fields["error"] or recorded.get("error")
        self._send(self.encoder.encode(self.replay.snapshot(recorded["snapshot_file"]), reason="cell",
                                       devices=devices, replay=self.replay.name, **fields))

    def _send(self, message):
        self.channel.send(message)

    def _report(self, exc):
        try:
            self._send(protocol.status_message(protocol.HELPER_ERROR, _describe(exc)))
        except Exception:
            pass


def _describe(exc):
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _error_text(result):
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    return None if error is None else _describe(error)
