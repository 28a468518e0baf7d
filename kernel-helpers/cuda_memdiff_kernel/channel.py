"""Transport to the frontend: a comm the helper opens toward the target the
frontend registered. In a plain IPython shell (no kernel) the comm package
hands out a comm that drops messages, so loading never fails there."""
from . import protocol


class CommChannel:
    """Sends JSON-safe messages over one comm."""

    def __init__(self, target=protocol.COMM_TARGET):
        self._target = target
        self._comm = None
        self._on_request = None

    def on_request(self, callback):
        """Call ``callback(data)`` for each message the frontend sends over the comm."""
        self._on_request = callback
        if self._comm is not None:
            self._comm.on_msg(self._dispatch)

    def send(self, message):
        if self._comm is None:
            from comm import create_comm  # noqa: PLC0415 - only kernels need it

            self._comm = create_comm(target_name=self._target, data={"v": protocol.PROTOCOL_VERSION, "type": "open"})
            self._comm.on_msg(self._dispatch)
        self._comm.send(message)

    def _dispatch(self, msg):
        if self._on_request is not None:
            self._on_request(msg.get("content", {}).get("data"))

    def close(self):
        if self._comm is not None:
            self._comm.close()
            self._comm = None
