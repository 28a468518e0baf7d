"""An ipykernel that replays the session recorded on an H200 with allocation
history (test-data/live/history--python): cells [2] and [3] free and allocate
256 MiB again at the same address, cell [4] peaks at 808 MiB with a 512 MiB
temporary (its line 2) freed before it ends. For the browser test of the peak
anatomy and of re-runs told apart. The cells keep their recorded sources, so
frames name the notebook's cells; without CUDA here their own code fails, and
the replayed snapshots tell what the H200 did."""

import os
import pathlib

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
os.environ["CUDA_MEMDIFF_REPLAY"] = str(ROOT / "test-data" / "live" / "history--python")
kernelapp.launch_new_instance()
