"""An ipykernel whose GPU snapshots are replayed from the demo notebook's
session recorded on an H200 (CUDA_MEMDIFF_REPLAY), for machines without a GPU.
The recording is the one made with the kernel's holders after each cell, so
Find Leaking Cell names what held the memory as a live kernel would.

demo/jupyter-path goes on JUPYTER_PATH in two places: scripts/start.sh, which
opens the demo with this kernel when there is no GPU (other notebooks keep the
ordinary python3 kernel), and ui-tests/playwright.config.js for the browser
tests."""

import os
import pathlib

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
os.environ["CUDA_MEMDIFF_REPLAY"] = str(ROOT / "test-data" / "live" / "gpu_memory_demo--holders")
kernelapp.launch_new_instance()
