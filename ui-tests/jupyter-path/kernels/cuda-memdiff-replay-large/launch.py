"""An ipykernel that replays the many_blocks session recorded on an H200
(20,000-40,500 live blocks a cell), for the browser test that interrupts the
kernel while the helper takes its snapshot: reading one of these snapshots
takes about a second, the cells themselves no time. The cells are
`step_0 = 0` ... `step_3 = 3` (the recording's sources need a GPU); the last
one then creates MARKER, so the test knows the cell is over and the helper's
work has begun, and interrupts right then."""

import json
import os
import pathlib
import tempfile

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
RECORDING = ROOT / "test-data" / "recordings" / "many_blocks--python"

folder = pathlib.Path(tempfile.mkdtemp(prefix="cuda-memdiff-replay-large-"))
manifest = json.loads((RECORDING / "manifest.json").read_text())
MARKER = "/tmp/cuda-memdiff-replay-large.marker"
for k, cell in enumerate(manifest["cells"]):
    cell["source"] = f"step_{k} = {k}"
    if k == len(manifest["cells"]) - 1:
        cell["source"] += f"\nopen({MARKER!r}, 'w').close()"
    (folder / cell["snapshot_file"]).symlink_to(RECORDING / cell["snapshot_file"])
(folder / "manifest.json").write_text(json.dumps(manifest))
os.environ["CUDA_MEMDIFF_REPLAY"] = str(folder)
kernelapp.launch_new_instance()
