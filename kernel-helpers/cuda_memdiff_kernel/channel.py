"""Transport to the frontend: a comm the helper opens toward the target the
frontend registered. In a plain IPython shell (no kernel) the comm package
hands out a comm that drops messages, so loading never fails there."""
from . import protocol


class CommChannel:
    """Sends JSON-safe messages over one comm."""

    def __init__(self, target=protocol.COMM_TARGET):
        self._target = target
        self._comm = None

    def send(self, message):
        if self._comm is None:
            from comm import create_comm  # noqa: PLC0415 - only kernels need it

            self._comm = create_comm(target_name=self._target, data={"v": protocol.PROTOCOL_VERSION, "type": "open"})
        self._comm.send(message)

    def close(self):
        if self._comm is not None:
            self._comm.close()
            self._comm = None
