"""The wire protocol between this helper and the frontend (src/capture/protocol.ts).

Every message is JSON-safe and carries ``v``, the protocol version; the
frontend refuses messages of another version and says so. The message shapes
are in ``protocol.schema.json`` beside this file, which the frontend and the
tests validate against. The frontend opens one comm per notebook to
``COMM_TARGET``; the helper answers on it (see channel.py).
"""

PROTOCOL_VERSION = 2
COMM_TARGET = "cuda-memdiff"

# The largest integer a message may carry: the frontend reads every JSON number as a double, exact only up to
# 2**53 - 1 (protocol.schema.json's ``count`` says the same). Real CUDA addresses stay below 2**48.
MAX_EXACT_INTEGER = 2**53 - 1
# Why a larger one is refused, in the words the frontend's refusals end with (src/engine/consistency.ts).
PAST_EXACT = "past 2^53 - 1, where numbers stop being exact"

# The most bytes of pickle or JSON (after gunzip) a snapshot file may hold by default: the CLI's and the panel's
# --max-bytes, and the replay's one limit (a gzip bomb costs this, not what it inflates to).
MAX_SNAPSHOT_BYTES = 2 * 2**30

# Statuses, in the words the frontend shows.
WAITING_TORCH = "waiting-for-torch"
WAITING_CUDA = "waiting-for-cuda"
READY = "ready"
NO_CUDA = "no-cuda"
TORCH_TOO_OLD = "torch-too-old"
CAPTURE_OFF = "capture-off"
HELPER_ERROR = "error"
STATUSES = (WAITING_TORCH, WAITING_CUDA, READY, NO_CUDA, TORCH_TOO_OLD, CAPTURE_OFF, HELPER_ERROR)

# Block states, as small integers in the columnar block table.
BLOCK_STATES = ("active_allocated", "active_pending_free")

# Holder kinds: what keeps a block alive (holders.py), in the words the engine's findings use.
HOLDER_KINDS = (
    "variable",
    "graph",
    "output-cache",
    "traceback",
    "parameter",
    "gradient",
    "optimizer",
    "hook",
    "unreachable",
    "native",
    "hidden",
)

# What no variable shows at the start of a holder's path (walk.py, sent as the holder's ``reference``): an entry of
# IPython's output history (``Out[n]``) or a name its displayhook set (``_2``, ``_``), a kept exception or the last
# traceback, what a function's default argument, a closure, a paused generator, a function cache or a
# functools.partial keeps, a container a module's hook appends to, or the locals of a function running in another
# thread.
HOLDER_REFERENCES = (
    "output",
    "output-name",
    "exception",
    "last-traceback",
    "default-argument",
    "closure",
    "generator",
    "lru-cache",
    "partial",
    "hook",
    "thread",
)

# Why a cell has no snapshot (cell_note's ``note``): not in the replayed recording, its recorded runs all
# replayed already, its recorded run skipped (a later cell ran first), this run raised where the recorded one did
# not, capture failed.
CELL_NOTES = ("not-recorded", "replayed-already", "replay-skipped", "replay-raised", "capture-failed")

# What a live block is for, after a cell (roles.py); the order is the precedence when several
# things keep one block.
ROLES = (
    "parameter",
    "buffer",
    "gradient",
    "optimizer_state",
    "activation",
    "output_cache",
    "traceback",
    "user",
    "workspace",
    "unknown",
)
# Each block's role on the wire (roles.py ``block_runs``): one letter per role, in ROLES order.
ROLE_CODES = "abcdefghij"

# The helper's settings and their defaults; schema/plugin.json offers the same keys in camelCase
# (a test holds its defaults and choices to these).
DEFAULT_SETTINGS = {
    "capture": True,
    "history": "all",  # 'all' | 'state' | 'off'; a history the user started is never changed
    "stacks": "python",  # 'python' | 'all' (C++ frames too, much slower)
    "max_entries": 100000,
    "include_traces": False,
    "peaks": "passive",  # 'passive' never resets torch's peak counters; 'per-cell' resets them before each cell
    "snapshots_kept": 200,  # snapshots the kernel keeps for frontends that attach later
}

# The values a string setting may take.
SETTING_CHOICES = {
    "history": ("all", "state", "off"),
    "stacks": ("python", "all"),
    "peaks": ("passive", "per-cell"),
}

# The names the frontend reads from this module (scripts/embed-helper.js generates them into
# src/engine/protocol.generated.ts), so both languages share one definition.
FRONTEND_CONSTANTS = (
    "PROTOCOL_VERSION",
    "COMM_TARGET",
    "MAX_SNAPSHOT_BYTES",
    "STATUSES",
    "BLOCK_STATES",
    "HOLDER_KINDS",
    "HOLDER_REFERENCES",
    "CELL_NOTES",
    "ROLES",
    "ROLE_CODES",
    "DEFAULT_SETTINGS",
    "SETTING_CHOICES",
)


# Longest text a replay's ``recording`` passes on from its manifest (a scenario or a GPU's name).
MAX_RECORDING_TEXT = 200


def status_message(status, message="", **extra):
    """A status message: waiting, ready, no CUDA, too old, off, or an error."""
    msg = {"v": PROTOCOL_VERSION, "type": "status", "status": status, "message": message}
    msg.update(extra)
    return msg


def cell_note(cell_id, execution_count, note, message):
    """A word about one cell that has no snapshot (not in the replayed recording, capture failed)."""
    return {
        "v": PROTOCOL_VERSION,
        "type": "cell-note",
        "cell_id": cell_id,
        "execution_count": execution_count,
        "note": note,
        "message": message,
    }
