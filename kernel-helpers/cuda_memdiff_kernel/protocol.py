"""The wire protocol between this helper and the frontend (src/capture/protocol.ts).

Every message is JSON-safe and carries ``v``, the protocol version; the
frontend ignores messages of another version and says so.
"""

PROTOCOL_VERSION = 1
COMM_TARGET = "cuda-memdiff"

# Statuses, in the words the frontend shows.
READY = "ready"
NO_TORCH = "no-torch"
NO_CUDA = "no-cuda"
TORCH_TOO_OLD = "torch-too-old"
CAPTURE_OFF = "capture-off"
HELPER_ERROR = "error"

# Block states, as small integers in the columnar block table.
BLOCK_STATES = ("active_allocated", "active_pending_free")


def status_message(status, message="", **extra):
    """A status message: ready, no torch, no CUDA, too old, off, or an error."""
    msg = {"v": PROTOCOL_VERSION, "type": "status", "status": status, "message": message}
    msg.update(extra)
    return msg
