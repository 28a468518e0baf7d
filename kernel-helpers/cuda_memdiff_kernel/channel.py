"""The frontends attached to this kernel's helper: one comm each.

Each notebook (every view of it shares one) opens a comm to ``COMM_TARGET``
when it connects to the kernel: after opening the notebook, after a restart,
after a page reload, or a second notebook on the same kernel. The helper
answers on that comm alone: a ``hello`` status, then the kept snapshots and
the cells' notes that no later snapshot replaced, then each new one. What a
frontend has been sent (frames, stacks, the last snapshot) is tracked per
comm, so a new frontend never disturbs another, and a send that fails only
makes that comm's next message whole again.
"""

from . import protocol
from .compact import block_columns, segment_columns

# Frontends whose page went away never close their comm; keep the newest ones.
MAX_FRONTENDS = 16


class Frontend:
    """One attached comm and what it has been sent."""

    def __init__(self, comm):
        self.comm = comm
        self.reset()

    def reset(self):
        """Forget what was sent: the next message is whole, frames from 0."""
        self.frames_sent = 0
        self.stacks_sent = 1  # stack 0, the empty one, is implied
        self.last_seq = None


class Frontends:
    """Sends the log's snapshots and the helper's statuses to every attached frontend."""

    def __init__(self, log):
        self.log = log
        self.attached = []
        # cell id -> the note on the cell's latest run, until a snapshot of the cell replaces it: a frontend that
        # attaches after the run (Run All queued ahead of its comm, a reloaded page) still hears why it has none.
        self.notes = {}
        self._on_request = None
        self._hello = None
        self._registered = None

    # -- wiring -----------------------------------------------------------
    def listen(self, on_request, hello):
        """Accept frontends' comms; ``hello()`` is the status a new frontend gets first."""
        self._on_request = on_request
        self._hello = hello
        try:
            from comm import get_comm_manager  # noqa: PLC0415 - only kernels have one

            manager = get_comm_manager()
            manager.register_target(protocol.COMM_TARGET, self._open)
            self._registered = manager
        except Exception:  # a plain IPython shell, or no comm package: nobody can attach
            self._registered = None

    def close(self):
        if self._registered is not None:
            try:
                self._registered.unregister_target(protocol.COMM_TARGET, self._open)
            except Exception:
                pass
            self._registered = None
        self.notes = {}
        for frontend in self.attached:
            try:
                frontend.comm.close()
            except Exception:
                pass
        self.attached = []

    def _open(self, comm, open_msg=None):
        self.attach(comm)

    def attach(self, comm):
        """A frontend opened a comm: send it the helper's status and every kept snapshot."""
        frontend = Frontend(comm)
        comm.on_msg(lambda msg: self._message(frontend, msg))
        comm.on_close(lambda msg=None: self._detach(frontend))
        self.attached = [*self.attached, frontend][-MAX_FRONTENDS:]
        self.resend(frontend)
        return frontend

    def _detach(self, frontend):
        self.attached = [f for f in self.attached if f is not frontend]

    def _message(self, frontend, msg):
        data = msg.get("content", {}).get("data") if isinstance(msg, dict) else None
        if isinstance(data, dict) and data.get("type") == "resend":
            frontend.reset()
            self.resend(frontend)
        elif self._on_request is not None:
            reply = self._on_request(data)
            self._send(frontend, reply)

    # -- sending ------------------------------------------------------------
    def resend(self, frontend):
        """Everything a frontend needs from nothing: the status and the kept snapshots."""
        frontend.reset()
        if self._hello is not None and not self._send(frontend, self._hello()):
            return
        for entry in self.log.entries:
            if not self._send_entry(frontend, entry):
                return
        for note in list(self.notes.values()):  # after the snapshots: a note is newer than its cell's last one
            if not self._send(frontend, note):
                return

    def status(self, message):
        for frontend in list(self.attached):
            self._send(frontend, message)

    def note(self, message):
        """A cell's note (``protocol.cell_note``) to every frontend, kept for those that attach later.

        One note per cell, its latest, as many cells as the log keeps snapshots."""
        cell_id = message.get("cell_id")
        if cell_id is not None:
            self.notes.pop(cell_id, None)
            self.notes[cell_id] = message
            while len(self.notes) > max(1, self.log.max_entries):
                del self.notes[next(iter(self.notes))]
        self.status(message)

    def publish(self, entry):
        """A new snapshot (the log's newest entry) to every frontend."""
        # The cell's snapshot replaces its note, in the frontend's store as here.
        self.notes.pop(entry.fields.get("cell_id"), None)
        for frontend in list(self.attached):
            self._send_entry(frontend, entry)

    def _send_entry(self, frontend, entry):
        log = self.log
        if frontend.last_seq is not None and frontend.last_seq == entry.prev:
            message = self._message_for(frontend, entry, entry.born, entry.freed)
        elif entry.seq == log.version:  # by seq: a trim may have put a head entry in its place
            message = self._message_for(frontend, entry, log.current.values(), None)
        elif entry.seq == log.entries[0].seq:
            message = self._message_for(frontend, entry, log.base.values(), None)
        else:  # a gap in the middle of the kept ones: wait for the newest, which goes whole
            return False
        if self._send(frontend, message):
            frontend.last_seq = entry.seq
            frontend.frames_sent = message["frames"]["base"] + len(message["frames"]["items"])
            frontend.stacks_sent = message["stacks"]["base"] + len(message["stacks"]["items"])
            return True
        return False

    def _message_for(self, frontend, entry, rows, freed):
        table = self.log.table
        message = {
            "v": protocol.PROTOCOL_VERSION,
            "type": "snapshot",
            "seq": entry.seq,
            "prev": entry.prev if freed is not None else None,
            "frames": {"base": frontend.frames_sent, "items": table.frames[frontend.frames_sent :]},
            "stacks": {"base": frontend.stacks_sent, "items": table.stacks[frontend.stacks_sent :]},
            "segments": segment_columns(entry.segments),
            "blocks": block_columns(rows, entry.segments),
        }
        if freed is not None:
            message["freed"] = {"device": [k[0] for k in freed], "address": [k[1] for k in freed]}
        if entry.history is not None:
            # Trace entries are the cell's own (since the previous capture), whatever this frontend was sent before.
            message["traces"], message["history"] = entry.history
        message.update(entry.fields)
        return message

    def _send(self, frontend, message):
        """True when sent; a failure makes this frontend's next message whole."""
        try:
            frontend.comm.send(message)
            return True
        except Exception:
            frontend.reset()
            return False
