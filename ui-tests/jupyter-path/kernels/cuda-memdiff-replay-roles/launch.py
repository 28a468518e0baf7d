"""An ipykernel that replays the training notebook recorded on an H200 with
the helper's roles (test-data/roles/training_roles--python: a model, AdamW,
three steps, an eval pass outside no_grad), for the browser tests of the
badge tooltip and the chart by role. The cells are `step_0 = 0` ...
`step_5 = 5` (the recording's sources would train on the CPU); each replays
the recorded snapshot and the recorded roles."""

import json
import os
import pathlib
import tempfile

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
RECORDING = ROOT / "test-data" / "roles" / "training_roles--python"

folder = pathlib.Path(tempfile.mkdtemp(prefix="cuda-memdiff-replay-roles-"))
manifest = json.loads((RECORDING / "manifest.json").read_text())
for k, cell in enumerate(manifest["cells"]):
    cell["source"] = f"step_{k} = {k}"
    for name in (cell["snapshot_file"], cell["roles_file"]):
        (folder / name).symlink_to(RECORDING / name)
(folder / "manifest.json").write_text(json.dumps(manifest))
os.environ["CUDA_MEMDIFF_REPLAY"] = str(folder)
kernelapp.launch_new_instance()
