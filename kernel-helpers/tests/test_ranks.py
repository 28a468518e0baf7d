"""Per-rank capture in a real two-process gloo job on the CPU (ranks_job.py),
read back by the engine through the CLI. The allocator snapshots replay real
H200 recordings, since there is no GPU here; the hooks, the files, the
gathering through torch.distributed and the engine's reading are real."""

import gzip
import json
import os
import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from cuda_memdiff_kernel import ranks  # noqa: E402

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RECORDINGS = os.path.join(ROOT, "test-data", "recordings")
FLAT = os.path.join(RECORDINGS, "clean_training--python")  # flat after its first cell
GROWING = os.path.join(RECORDINGS, "rnn_hidden_no_detach--python")  # +300 MiB per cell


def _job(out, *extra):
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "ranks_job.py"), str(out), f"{FLAT}#1", f"{GROWING}#0", *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _cli(*args):
    result = subprocess.run(
        ["node", os.path.join(ROOT, "bin", "cuda-memdiff.js"), *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _allocated(recording, cell):
    with open(os.path.join(recording, "manifest.json"), encoding="utf-8") as f:
        name = json.load(f)["cells"][cell]["snapshot_file"]
    with gzip.open(os.path.join(recording, name), "rb") as f:
        snap = pickle.load(f)
    return sum(b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated")


def _manifest(folder):
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def test_every_rank_captures_at_every_optimizer_step_and_the_engine_reads_the_ranks(tmp_path):
    _job(tmp_path)
    for rank in (0, 1):
        manifest = _manifest(tmp_path / f"rank{rank}")
        assert manifest["rank"] == rank and manifest["world_size"] == 2
        assert [c["label"] for c in manifest["cells"]] == ["step 1", "step 2", "step 3", "after training"]
        assert [c["step"] for c in manifest["cells"]] == [1, 2, 3, 3]
        for cell in manifest["cells"]:
            assert (tmp_path / f"rank{rank}" / cell["snapshot_file"]).is_file()
    index = json.loads((tmp_path / "ranks.json").read_text())
    assert index["world_size"] == 2 and index["gathered"] is True
    assert [r["rank"] for r in index["ranks"]] == [0, 1]

    report = json.loads(_cli("session", str(tmp_path), "--json"))
    assert report["missing_ranks"] == []
    by_rank = {r["rank"]: r for r in report["ranks"]}
    # Each point shows what the rank's allocator held then: the replayed snapshots.
    assert [p["allocated_bytes"] for p in by_rank[0]["points"]] == [_allocated(FLAT, c) for c in (1, 2, 3, 4)]
    assert [p["allocated_bytes"] for p in by_rank[1]["points"]] == [_allocated(GROWING, c) for c in (0, 1, 2, 3)]
    assert report["verdict"] == {"code": "rank-grows", "growing": [1], "flat": [0]}
    growth = by_rank[1]["growth"]
    assert growth["steps"] == 2
    assert growth["bytes_per_step"] == (_allocated(GROWING, 2) - _allocated(GROWING, 0)) / 2
    top = growth["sites"][0]
    assert top["line"] == 3 and top["bytes_per_step"] > 250 * 2**20

    text = _cli("leaks", str(tmp_path))
    assert "rank 1 grows" in text and "rank 0 is flat" in text
    compared = json.loads(_cli("diff", str(tmp_path), "--ranks", "0,1", "--point", "2", "--json"))
    assert compared["point"] == 2
    assert sum(s["b_bytes"] for s in compared["sites"]) - sum(s["a_bytes"] for s in compared["sites"]) == _allocated(
        GROWING, 2
    ) - _allocated(FLAT, 3)
    one = json.loads(_cli("session", str(tmp_path), "--rank", "1", "--json"))
    assert len(one["cells"]) == 4


def test_a_rank_whose_folder_rank0_cannot_see_arrives_through_torch_distributed(tmp_path):
    _job(tmp_path, "--private")
    manifest = _manifest(tmp_path / "rank1")
    # The hand-placed mark never communicates, so rank 0 has rank 1's step points.
    assert [c["label"] for c in manifest["cells"]] == ["step 1", "step 2", "step 3"]
    for cell in manifest["cells"]:
        assert (tmp_path / "rank1" / cell["snapshot_file"]).is_file()
    report = json.loads(_cli("session", str(tmp_path), "--json"))
    assert [len(r["points"]) for r in report["ranks"]] == [4, 3]


class _Optimizer:
    def __init__(self):
        self.param = torch.nn.Parameter(torch.zeros(2))
        self.optimizer = torch.optim.SGD([self.param], lr=0.1)

    def step(self, times=1):
        for _ in range(times):
            self.param.sum().backward()
            self.optimizer.step()


def _snapshot():
    return {"segments": [], "device_traces": []}


def test_every_n_steps_and_no_index_without_a_process_group(tmp_path):
    capture = ranks.capture(tmp_path, every=2, snapshot=_snapshot)
    try:
        _Optimizer().step(5)
    finally:
        ranks.stop()
    assert [c["step"] for c in _manifest(tmp_path / "rank0")["cells"]] == [2, 4]
    assert capture.off is None
    # Without a group each rank keeps its own folder; nobody writes the index.
    assert not (tmp_path / "ranks.json").exists()


def test_a_failing_capture_turns_itself_off_and_training_goes_on(tmp_path, capsys):
    def broken():
        raise OSError("disk full")

    capture = ranks.capture(tmp_path, snapshot=broken)
    opt = _Optimizer()
    try:
        opt.step(3)
    finally:
        ranks.stop()
    assert capture.off == "OSError: disk full"
    assert capsys.readouterr().err.count("capture on rank 0 is off: OSError: disk full") == 1
    assert opt.param.grad is not None


def test_mark_needs_a_capture():
    ranks.stop()
    with pytest.raises(RuntimeError, match="call ranks.capture"):
        ranks.mark("x")
