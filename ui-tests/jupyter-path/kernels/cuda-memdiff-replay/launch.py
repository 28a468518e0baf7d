"""An ipykernel whose GPU snapshots are replayed from the demo notebook's
session recorded on an H200 (CUDA_MEMDIFF_REPLAY), for the browser tests on
machines without a GPU."""
import os
import pathlib

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
os.environ["CUDA_MEMDIFF_REPLAY"] = str(ROOT / "test-data" / "recordings" / "gpu_memory_demo--python")
kernelapp.launch_new_instance()
