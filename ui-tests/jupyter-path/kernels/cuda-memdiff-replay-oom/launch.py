"""An ipykernel that replays the oom session recorded on an H200: five 20 GiB
tensors from cell [1], line 3, then a 60 GiB request with 39.29 GiB free,
for the browser test of the out-of-memory view. The cells keep their
recorded sources, so frames name the notebook's cells; without CUDA here
their own code fails, and the replayed snapshots tell what the H200 did."""

import os
import pathlib

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
os.environ["CUDA_MEMDIFF_REPLAY"] = str(ROOT / "test-data" / "recordings" / "oom--python")
kernelapp.launch_new_instance()
