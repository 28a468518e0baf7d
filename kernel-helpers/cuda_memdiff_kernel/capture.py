"""Per-cell capture: IPython's pre/post_run_cell hooks take a snapshot after
every cell and push it to the attached frontends. Capture runs inside the
kernel because "Run All" queues every cell at once: a request sent by the
frontend after cell k would only run after the whole queue.

The helper's first law: it imports no torch and touches no device until the
user's code has (it waits for torch in ``sys.modules``, then for CUDA's
initialisation); it leaves the user's history, metadata and peak counters as
they were unless the settings say otherwise; it keeps a bounded log and
releases it on stop. Nothing here enters the user's namespace, history or
``Out``, and no exception, KeyboardInterrupt included, reaches the user's
cell: failures become an "error" status and the next cell captures again.
"""

import time
import traceback

from . import holders, process, protocol, torch_probe
from .block_index import Changes
from .channel import Frontends
from .log import SnapshotLog, collector_paused
from .replay import ReplayError, replay_from_environment
from .roles import UNKNOWN_ROLE, RolePass, allocated_keys, block_runs

METADATA_PREFIX = "cuda-memdiff cell "


class CellCapture:
    """Owns the hooks, the snapshot log and the attached frontends for one IPython shell."""

    def __init__(self, shell, settings=None, replay=None, frontends=None):
        self.shell = shell
        self.settings = dict(protocol.DEFAULT_SETTINGS, **(settings or {}))
        self.log = SnapshotLog(max_entries=self.settings["snapshots_kept"])
        self.roles = RolePass()
        self.frontends = frontends if frontends is not None else Frontends(self.log)
        self.frontends.log = self.log
        self.replay = replay
        self.status, self.message, self.facts = protocol.WAITING_TORCH, "", {}
        self.active = False
        self._registered = False
        self._cell = None
        self._oom = None  # [raw, oom fields] of the current cell's first OOM
        self._before = {}
        self._peak_before = {}
        self._metadata_set = False

    # -- lifecycle -------------------------------------------------------
    def start(self):
        """Hook the cell events and say where things stand; touches no device."""
        try:
            if self.replay is None:
                self.replay = replay_from_environment()
        except Exception as exc:  # a bad replay folder is a status, not an error in a cell
            self._set_status(protocol.HELPER_ERROR, f"cannot replay: {_describe(exc)}")
        else:
            self._settle()
        process.set_current(self)
        self.frontends.listen(self.handle_request, self.hello)
        if self.status != protocol.CAPTURE_OFF:
            self.shell.events.register("pre_run_cell", self._pre_run_cell)
            self.shell.events.register("post_run_cell", self._post_run_cell)
            self._registered = True
        return self.status

    def configure(self, settings):
        """New settings from the frontend, keeping the log and the attached frontends."""
        old = self.settings
        self.settings = dict(protocol.DEFAULT_SETTINGS, **(settings or {}))
        self.log.max_entries = max(1, int(self.settings["snapshots_kept"]))
        if self.active and old["history"] != self.settings["history"]:
            self._apply_history()
        self._settle(force=True)

    def stop(self):
        """Unhook; stop the history only if this helper started it; keep nothing."""
        if self._registered:
            for name, hook in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
                try:
                    self.shell.events.unregister(name, hook)
                except ValueError:
                    pass
            self._registered = False
        if process.current_capture() is self:
            process.set_current(None)
        self._restore_metadata()
        if process.state().history_by_helper:
            try:
                torch_probe.stop_history()
            except Exception:
                pass
            process.state().history_by_helper = False
        self._oom = None
        self.active = False
        self.frontends.close()

    def hello(self):
        """The status a frontend gets on attach (and on every change)."""
        extra = dict(self.facts)
        if self.replay is not None:
            extra["replay"] = self.replay.name
            extra["recording"] = _recording(self.replay.manifest)
        return protocol.status_message(
            self.status,
            self.message,
            run=process.state().run,
            installs=process.state().installs,
            kept=len(self.log.entries),
            dropped=self.log.dropped,
            peaks=self.settings["peaks"],
            history=self._history_owner(),
            **extra,
        )

    # -- where torch and CUDA stand -------------------------------------------
    def _settle(self, force=False):
        """Move on as far as the user's code has: waiting, no CUDA, or capturing."""
        if not self.settings["capture"]:
            return self._set_status(protocol.CAPTURE_OFF, "capture is turned off in the settings", force=force)
        if self.replay is not None:
            return self._set_status(protocol.READY, "", force=force)
        status, message, facts = torch_probe.phase()
        self.facts = facts
        if status == protocol.WAITING_CUDA and not process.state().init_queued:
            process.state().init_queued = torch_probe.on_cuda_init(process.forward_cuda_init)
        if status == protocol.READY and not self.active:
            self._activate()
        self._set_status(status, message, force=force)

    def on_cuda_init(self):
        """Inside torch's lazy CUDA initialisation: start history before the first allocation."""
        try:
            if self.settings["capture"] and self.replay is None:
                self._apply_history(initialising=True)
        except BaseException:  # never in the user's way, whatever happens
            pass

    def _activate(self):
        self._apply_history()
        state = process.state()
        if not state.oom_attached:
            state.oom_attached = torch_probe.attach_oom_observer(process.forward_oom)
        if not state.warmed_up:
            state.warmed_up = True
            torch_probe.warm_up_in_background()
        self.active = True

    def _apply_history(self, initialising=False):
        """Start the history the settings ask for, unless the user already records one."""
        state = process.state()
        enabled = torch_probe.history_enabled(initialising=initialising)
        wanted = self.settings["history"]
        if enabled and not state.history_by_helper:
            return  # the user's own history: theirs to configure and to stop
        if wanted == "off":
            if state.history_by_helper:
                torch_probe.stop_history()
                state.history_by_helper = False
            return
        if enabled is None and not initialising:
            return  # torch cannot say: leave it alone
        torch_probe.start_history(wanted, self.settings["stacks"], self.settings["max_entries"])
        state.history_by_helper = True

    def _history_owner(self):
        if self.replay is not None or not self.active:
            return None
        if process.state().history_by_helper:
            return "helper"
        return "user" if torch_probe.history_enabled() else "off"

    def _set_status(self, status, message, force=False):
        changed = (status, message) != (self.status, self.message)
        self.status, self.message = status, message
        if changed or force:
            self.frontends.status(self.hello())
        return status

    # -- IPython events --------------------------------------------------
    def _pre_run_cell(self, info):
        try:
            self._cell = {"cell_id": getattr(info, "cell_id", None), "source": getattr(info, "raw_cell", "") or ""}
            self._oom = None
            self._before, self._peak_before = {}, {}
            if self.active and self.replay is None:
                torch = torch_probe.loaded_torch()
                if self.settings["peaks"] == "per-cell":
                    torch_probe.reset_peaks(torch)
                usage = torch_probe.usage_by_device(torch)
                self._before = {d: (allocated, reserved) for d, (allocated, reserved, _) in usage.items()}
                self._peak_before = {d: peak for d, (_, _, peak) in usage.items()}
                self._stamp_metadata()
        except BaseException as exc:  # an interrupt in the helper's work is the helper's, not the cell's
            self._report(exc, self._cell)

    def _post_run_cell(self, result):
        try:
            cell = self._cell or {"cell_id": None, "source": getattr(getattr(result, "info", None), "raw_cell", "")}
            self._cell = None
            fields = {
                "cell_id": cell["cell_id"],
                "execution_count": result.execution_count,
                "error": _error_text(result),
                # The code its frames' lines count in: the frontend links them to the cell after it is edited.
                "source": self._kept_source(cell["source"]),
            }
            if self.replay is not None:
                if self.status == protocol.READY:
                    self._capture_replayed(cell, fields)
                return
            self._restore_metadata()
            if not self.active:
                self._settle()
                if not self.active:
                    return
            self._capture_live(fields)
        except BaseException as exc:
            self._report(exc, cell)

    def on_oom(self, device, alloc, device_allocated, device_free):
        """Inside the allocator: take the first OOM's snapshot of the cell; compact and send after it."""
        try:
            if self._oom is None:
                raw = torch_probe.raw_snapshot(include_traces=True)
                self._oom = [
                    raw,
                    {"device": int(device), "alloc": int(alloc), "device_free": int(device_free), "count": 1},
                ]
            else:
                self._oom[1]["count"] += 1
        except BaseException:
            pass

    # -- requests from a frontend -------------------------------------------
    def handle_request(self, request):
        """The reply to a frontend request; only ``holders`` exists. Bad requests get an error reply."""
        try:
            if not isinstance(request, dict) or request.get("type") != "holders-request":
                raise ValueError(f"unknown request {request!r:.80}")
            blocks = [{"device": int(d), "address": int(a), "size": int(n)} for d, a, n in request.get("blocks", [])]
            budget = min(float(request.get("budget_ms", holders.DEFAULT_BUDGET_S * 1000)), 30_000) / 1000
            if self.replay is not None:
                # A replayed session has no live tensors to ask about: what the recorder saved stands in.
                answer = self.replay.holders(blocks)
            elif torch_probe.loaded_torch() is None:
                answer = {"blocks": [], "partial": False, "elapsed_ms": 0.0}
            else:
                answer = holders.find_holders(self.shell, blocks, budget)
            reply = {"v": protocol.PROTOCOL_VERSION, "type": "holders", "id": request.get("id")}
            reply.update(answer)
        except BaseException as exc:
            reply = {
                "v": protocol.PROTOCOL_VERSION,
                "type": "holders",
                "id": request.get("id") if isinstance(request, dict) else None,
                "error": _describe(exc),
                "blocks": [],
                "partial": True,
                "elapsed_ms": 0.0,
            }
        return reply

    # -- capturing ---------------------------------------------------------
    def _capture_live(self, fields):
        started = time.perf_counter()
        torch = torch_probe.loaded_torch()
        before = [{"device": d, "allocated": a, "reserved": r} for d, (a, r) in sorted(self._before.items())]
        oom, self._oom = self._oom, None
        if oom is not None:
            devices = torch_probe.device_stats(torch)
            self._publish(oom[0], dict(fields, reason="oom", oom=oom[1], devices=devices, before=before))
        # The collector stays off until the raw snapshot is gone: turned on while it lives, its first
        # collection would walk every block's dict (40 ms at 100,000 blocks on an H200) to find nothing.
        with collector_paused():
            # the counts and the device figures: see reader.py and counted_snapshot
            allocations, raw, devices = torch_probe.counted_snapshot(self.settings["include_traces"], torch)
            fields.update(reason="cell", devices=devices, before=before, peak=self._cell_peak(devices))
            fields["capture_ms"] = round((time.perf_counter() - started) * 1000, 3)
            self._publish(raw, fields, allocations=allocations)
            del raw

    def _cell_peak(self, devices):
        """The cell's peak allocated bytes, exact or an upper bound, without resetting anything by default.

        With peaks 'passive' the counter is the process's high-water mark: when
        the cell raised it, its new value is the cell's peak; otherwise the
        cell's peak lies at or below the mark it found.
        """
        if self.settings["peaks"] == "per-cell":
            return {"bytes": sum(d["peak_allocated"] for d in devices), "exact": True}
        exact, total = True, 0
        for d in devices:
            found = self._peak_before.get(d["device"], 0)
            start = max(d["allocated"], self._before.get(d["device"], (0, 0))[0])
            if d["peak_allocated"] > found or d["peak_allocated"] == start:
                total += d["peak_allocated"]
            else:
                exact = False
                total += found
        return {"bytes": total, "exact": exact}

    def _capture_replayed(self, cell, fields):
        waiting, skipped = self.replay.peek(cell["source"])
        if waiting is not None and skipped is not None and fields["error"] and not waiting.get("error"):
            # Run before cells it needs (the recording ran others first), it failed where the recorded run did
            # not: those figures would not be this run's. The recorded run waits for the cell's next run. (A run
            # in order that fails, as code written for CUDA does on a machine without, gets the recorded figures:
            # that is what a replay stands in for.)
            message = (
                f"not replayed: this run raised {fields['error'].splitlines()[-1]}, and the recorded run in "
                f"{self.replay.name} did not: it ran after cells not run here yet (next in the recording: "
                f"{skipped[:60]}); the recorded run is kept for this cell's next run"
            )
            self._note(fields, "replay-raised", message)
            return
        recorded = self.replay.take(cell["source"])
        try:
            self._serve_recorded(recorded, cell, fields)
        except BaseException:
            if recorded is not None:
                self.replay.put_back(recorded)  # the cell run again gets this run, as a live one would
            raise

    def _kept_source(self, source):
        """The source, as the string a kept snapshot already holds when one ran the same code: a cell run
        again keeps one copy of its text, which goes with the last snapshot that names it."""
        if not isinstance(source, str):
            return None
        for entry in reversed(self.log.entries):
            if entry.fields.get("source") == source:
                return entry.fields["source"]
        return source

    def _note(self, fields, note, message):
        self.frontends.note(protocol.cell_note(fields["cell_id"], fields["execution_count"], note, message))

    def _serve_recorded(self, recorded, cell, fields):
        if recorded is None:
            name = self.replay.name
            note = self.replay.not_served(cell["source"])
            restart = (
                "a replay serves each recorded run once, in the recorded order; restart the kernel to replay from "
                "the start"
            )
            message = {
                "replayed-already": f"the replayed recording {name} has no later run of this cell: {restart}",
                "replay-skipped": (
                    f"the replayed recording {name} ran this cell before one that ran here first, so its run was "
                    f"skipped: {restart}"
                ),
                "not-recorded": f"this cell is not in the replayed recording {name}",
            }[note]
            self._note(fields, note, message)
            return
        if isinstance(recorded.get("source"), str):  # the recorded frames were compiled from the recorded code
            fields["source"] = self._kept_source(recorded["source"])
        devices = self.replay.device_stats(recorded)
        before = self.replay.before_stats(recorded)
        peak = {"bytes": sum(d["peak_allocated"] for d in devices), "exact": True}
        for name in recorded.get("oom_snapshots") or ():
            raw = self.replay.snapshot(name)
            with self.replay.reading(name):
                oom = _recorded_oom(raw)
                self._publish(
                    raw,
                    dict(
                        fields,
                        reason="oom",
                        devices=devices,
                        before=before,
                        replay=self.replay.name,
                        **({"oom": oom} if oom else {}),
                    ),
                )
        fields.update(
            error=fields["error"] or recorded.get("error"),
            reason="cell",
            devices=devices,
            before=before,
            peak=peak,
            replay=self.replay.name,
        )
        block_roles = None
        if "roles" in recorded:  # the recording's roles (the manifest's rule read them) stand in for the live pass
            fields["roles"] = recorded["roles"]
            block_roles = self.replay.block_roles(recorded)
        raw = self.replay.snapshot(recorded["snapshot_file"])
        with self.replay.reading(recorded["snapshot_file"]):
            self._publish(raw, fields, block_roles)

    def _publish(self, raw, fields, block_roles=None, allocations=None):
        before = self.log.version
        entry = self.log.add(raw, allocations=allocations, **fields)
        if fields["reason"] == "cell" and self.replay is None:
            # What each live block is for (roles.py): one additive field of the cell's snapshot message;
            # the blocks the capture saw born and freed spare the pass reading the whole table.
            changes = Changes(before, entry.born, entry.freed, self.log.version)
            roles = self.roles.after_cell(self.shell, self.log.current, changes)
            if roles is not None:
                entry.fields["roles"] = roles
        elif block_roles is not None:  # a recorded cell's roles file, sent as the live pass sends its roles
            runs = block_runs(block_roles.get(key, UNKNOWN_ROLE) for key in allocated_keys(self.log.current))
            entry.fields["roles"] = dict(entry.fields["roles"], blocks=runs)
        self.frontends.publish(entry)

    # -- metadata ------------------------------------------------------------
    def _stamp_metadata(self):
        """Tag the cell's allocations, only where the user set no metadata of their own."""
        current = torch_probe.memory_metadata()
        if current is None or not (current == "" or current.startswith(METADATA_PREFIX)):
            return
        torch_probe.set_memory_metadata(f"{METADATA_PREFIX}{self._cell['cell_id']}")
        self._metadata_set = True

    def _restore_metadata(self):
        if self._metadata_set:
            self._metadata_set = False
            try:
                if (torch_probe.memory_metadata() or "").startswith(METADATA_PREFIX):
                    torch_probe.set_memory_metadata("")
            except Exception:
                pass

    def _report(self, exc, cell=None):
        try:
            message = _describe(exc)
            if cell is not None:
                self.frontends.note(
                    protocol.cell_note(
                        cell.get("cell_id"), None, "capture-failed", f"no snapshot for this cell: {message}"
                    )
                )
            else:
                self.frontends.status(protocol.status_message(protocol.HELPER_ERROR, message))
        except BaseException:
            pass


def _recording(manifest):
    """What a replayed recording's manifest says of itself, for people: the notebook it ran (``scenario``), the
    GPU and how many; each None where the manifest does not say it plainly (the folder's name is ``replay``)."""

    def text(value):
        return value if isinstance(value, str) and 0 < len(value) <= protocol.MAX_RECORDING_TEXT else None

    count = manifest.get("device_count")
    return {
        "scenario": text(manifest.get("scenario")),
        "device": text(manifest.get("device")),
        "device_count": count if type(count) is int and count >= 0 else None,
    }


def _describe(exc):
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted while taking the snapshot"
    if isinstance(exc, ReplayError):  # the helper's own words, naming the file: no class path before them
        return str(exc)
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _recorded_oom(raw):
    """The failed allocation of a recorded OOM snapshot, from its history's last ``oom`` entry (None without)."""
    found = None
    for device, entries in enumerate(raw.get("device_traces") or ()):
        for e in entries:
            if e.get("action") == "oom":
                found = {
                    "device": device,
                    "alloc": int(e.get("size", 0)),
                    "device_free": int(e.get("device_free", 0)),
                    "count": 1,
                }
    return found


def _error_text(result):
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    return None if error is None else _describe(error)
