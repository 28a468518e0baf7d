"""Holders named live on a GPU (skipped without CUDA).

Each leak scenario notebook is recorded with the project's recorder and
``--holders``, in its own process as a user would run it; after the cell the
finder should point at, the kernel must name the holder the notebook's
metadata expects. Set CUDA_MEMDIFF_LIVE_SESSIONS to a folder to keep the
session folders (the engine's tests read them from test-data/live/).
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, names_holder, read_as_recorded

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

NOTEBOOKS = [
    p
    for p in sorted((ROOT / "test-data" / "notebooks").glob("*.ipynb")) + [ROOT / "demo" / "gpu_memory_demo.ipynb"]
    if json.loads(p.read_text())["metadata"]["cuda_memdiff"]["expected"].get("holder")  # not the control
]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_recorder_names_the_holder(notebook, tmp_path):
    keep = os.environ.get("CUDA_MEMDIFF_LIVE_SESSIONS")
    out = os.path.join(keep, f"{notebook.stem}--holders") if keep else str(tmp_path / notebook.stem)
    subprocess.run(
        [sys.executable, "-m", "cuda_memdiff_kernel.recorder", str(notebook), out, "--holders"],
        check=True,
        cwd=ROOT / "kernel-helpers",
    )
    manifest = read_as_recorded(os.path.join(out, "manifest.json"))
    expected = manifest["expected"]
    top = manifest["cells"][expected["top_leak_cell"]]
    with open(os.path.join(out, top["holders_file"]), encoding="utf-8") as f:
        answer = json.load(f)
    assert not answer["partial"]
    named = [h for b in answer["blocks"] for h in b["holders"] if names_holder(h["path"], expected["holder"])]
    kinds = sorted({h["kind"] for h in named})
    held = {
        (b["device"], b["address"])
        for b in answer["blocks"]
        if any(names_holder(h["path"], expected["holder"]) for h in b["holders"])
    }
    print(
        f"{notebook.stem}: after cell {top['index']} the kernel names {expected['holder']!r} as "
        f"{', '.join(kinds)} for {len(held)} "
        f"of {len(answer['blocks'])} live blocks in {answer['elapsed_ms']} ms; e.g. "
        f"{sorted({h['path'] for h in named})[:3]}"
    )
    assert named
