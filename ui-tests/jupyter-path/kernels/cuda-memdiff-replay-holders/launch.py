"""An ipykernel that replays a session recorded on an H200 with the kernel's
holders after each cell (test-data/live/exception_kept--holders, recorded with
``recorder --holders``): cell [2] keeps an exception (`err = e`) whose
traceback holds train_step's locals x and h, h with its autograd graph. A
holders request is answered with what the kernel named then. For the browser
test of leaks only the kernel can name. The cells keep their recorded sources,
so frames name the notebook's cells; without CUDA here their own code fails,
and the replayed snapshots tell what the H200 did."""

import os
import pathlib

from ipykernel import kernelapp

ROOT = pathlib.Path(__file__).resolve().parents[4]
os.environ["CUDA_MEMDIFF_REPLAY"] = str(ROOT / "test-data" / "live" / "exception_kept--holders")
kernelapp.launch_new_instance()
