import pathlib

import pytest
from IPython.core.interactiveshell import InteractiveShell

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "test-data" / "recordings"


class ListChannel:
    """A channel that keeps what the helper sends, in order."""

    def __init__(self):
        self.messages = []
        self.closed = False

    def send(self, message):
        self.messages.append(message)

    def on_request(self, callback):
        self._on_request = callback

    def request(self, data):
        """Send ``data`` as the frontend would; returns the helper's reply."""
        self._on_request(data)
        return self.messages[-1]

    def close(self):
        self.closed = True

    def of_type(self, kind):
        return [m for m in self.messages if m["type"] == kind]


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    yield ip
    from cuda_memdiff_kernel import unload_ipython_extension

    unload_ipython_extension(ip)
    InteractiveShell.clear_instance()


@pytest.fixture
def channel():
    return ListChannel()
