"""Prints, as JSON lines, the messages the helper sends while replaying a
session folder in a real IPython shell (used by the engine's wire tests).

usage: python dump_replay.py SESSION_FOLDER
"""

import json
import pathlib
import shutil
import sys
import tempfile

from cuda_memdiff_kernel import current, install
from cuda_memdiff_kernel.replay import ReplaySource
from IPython.core.interactiveshell import InteractiveShell


class Printer:
    """A frontend's comm that prints what the helper sends."""

    def send(self, message):
        print(json.dumps(message))

    def on_msg(self, callback):
        pass

    def on_close(self, callback):
        pass

    def close(self):
        pass


def main():
    src = pathlib.Path(sys.argv[1])
    manifest = json.loads((src / "manifest.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        # Same snapshots, sources that run anywhere.
        for k, cell in enumerate(manifest["cells"]):
            cell["source"] = f"step_{k} = {k}"
            # With its per-block roles, which the helper sends as a live kernel does.
            roles = [cell["roles_file"]] if cell.get("roles_file") else []
            for name in [cell["snapshot_file"], *cell.get("oom_snapshots", []), *roles]:
                shutil.copy(src / name, pathlib.Path(tmp) / name)
        (pathlib.Path(tmp) / "manifest.json").write_text(json.dumps(manifest))
        shell = InteractiveShell.instance()
        install(shell, replay=ReplaySource(tmp))
        current(shell).frontends.attach(Printer())
        for k, cell in enumerate(manifest["cells"]):
            shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")


if __name__ == "__main__":
    main()
