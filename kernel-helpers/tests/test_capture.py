"""The helper in a real IPython shell with the real CPU build of torch."""
import json
import shutil
import subprocess
import sys

import pytest
from conftest import RECORDINGS

import cuda_memdiff_kernel
from cuda_memdiff_kernel import install, protocol
from cuda_memdiff_kernel.replay import ReplaySource


def test_cpu_torch_reports_torch_without_cuda(shell, channel):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: test_live_cuda.py covers it")
    status = install(shell, channel=channel)
    assert status == protocol.NO_CUDA
    (msg,) = channel.messages
    assert msg["v"] == protocol.PROTOCOL_VERSION
    assert msg["status"] == "no-cuda" and msg["torch"].startswith("2.")
    # no hooks: running cells sends nothing
    shell.run_cell("x = 1", store_history=True)
    assert len(channel.messages) == 1


def test_kernel_without_torch_reports_no_torch(tmp_path):
    # sys.modules['torch'] = None makes `import torch` fail as in a kernel without it
    code = (
        "import sys, json; sys.modules['torch'] = None\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "from cuda_memdiff_kernel import install\n"
        "sent = []\n"
        "class C:\n"
        "    def send(self, m): sent.append(m)\n"
        "    def close(self): pass\n"
        "install(InteractiveShell.instance(), channel=C())\n"
        "print(json.dumps(sent))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    (msg,) = json.loads(out.stdout.strip().splitlines()[-1])
    assert msg["status"] == "no-torch"


def test_capture_off_in_settings(shell, channel):
    assert install(shell, settings={"capture": False}, channel=channel) == protocol.CAPTURE_OFF


def replay_folder(tmp_path, name):
    """A copy of a recording whose cell sources run on the CPU (the snapshots stay the H200's)."""
    src = RECORDINGS / name
    manifest = json.loads((src / "manifest.json").read_text())
    for k, cell in enumerate(manifest["cells"]):
        cell["source"] = f"step_{k} = {k}"
        for f in [cell["snapshot_file"], *cell.get("oom_snapshots", [])]:
            shutil.copy(src / f, tmp_path / f)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path, manifest


def test_replay_sends_one_snapshot_per_cell_and_leaves_no_trace(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    before_ns = set(shell.user_ns)
    assert install(shell, channel=channel, replay=ReplaySource(str(folder))) == protocol.READY
    assert channel.messages[0]["replay"] == folder.name
    for k, cell in enumerate(manifest["cells"]):
        assert shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}").success
    snaps = channel.of_type("snapshot")
    assert [m["cell_id"] for m in snaps] == [f"cell-{k}" for k in range(len(manifest["cells"]))]
    assert [m["execution_count"] for m in snaps] == [k + 1 for k in range(len(snaps))]
    for msg, cell in zip(snaps, manifest["cells"]):
        allocated = sum(size for size, state in zip(msg["blocks"]["size"], msg["blocks"]["state"]) if state == 0)
        assert allocated == cell["after"]["allocated"]
        assert sum(d["allocated"] for d in msg["devices"]) == cell["after"]["allocated"]
        json.dumps(msg)  # JSON-safe
    # frames and stacks are sent once: later messages only add new ones
    bases = [m["frames"]["base"] for m in snaps]
    assert bases == sorted(bases) and bases[-1] > 0
    added = set(shell.user_ns) - before_ns
    assert {f"step_{k}" for k in range(len(snaps))} <= added
    assert all(n.startswith(("step_", "_i")) for n in added), added  # the user's and IPython's own
    assert not any("memdiff" in name for name in shell.user_ns)
    assert shell.user_ns["Out"] == {}


def test_replay_sends_the_oom_snapshot_before_the_cell(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "oom--python")
    install(shell, channel=channel, replay=ReplaySource(str(folder)))
    for cell in manifest["cells"]:
        shell.run_cell(cell["source"], store_history=True)
    reasons = [m["reason"] for m in channel.of_type("snapshot")]
    assert reasons == ["cell", "oom", "cell", "cell"]
    assert "OutOfMemoryError" in channel.of_type("snapshot")[2]["error"]


def test_output_cache_holds_only_the_users_values(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, channel=channel, replay=ReplaySource(str(folder)))
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    shell.run_cell("41 + 1", store_history=True)
    assert shell.user_ns["Out"] == {2: 42}


def test_callbacks_never_raise_into_the_cell(shell, tmp_path):
    class Broken:
        def __init__(self):
            self.calls = 0

        def send(self, message):
            self.calls += 1
            if message["type"] == "snapshot":
                raise RuntimeError("comm closed")

        def close(self):
            pass

    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    broken = Broken()
    install(shell, channel=broken, replay=ReplaySource(str(folder)))
    result = shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    assert result.success and result.error_in_exec is None
    assert broken.calls == 3  # status, the failed snapshot, then the error status


def test_a_corrupt_recording_becomes_an_error_status(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    (folder / manifest["cells"][0]["snapshot_file"]).write_bytes(b"\x1f\x8bnot gzip")
    install(shell, channel=channel, replay=ReplaySource(str(folder)))
    assert shell.run_cell(manifest["cells"][0]["source"], store_history=True).success
    status = channel.of_type("status")[-1]
    assert status["status"] == "error" and status["message"]


def test_a_recording_that_imports_code_is_refused(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    (folder / manifest["cells"][0]["snapshot_file"]).write_bytes(b"\x80\x02cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.")
    install(shell, channel=channel, replay=ReplaySource(str(folder)))
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    assert "refused" in channel.of_type("status")[-1]["message"]


def test_unload_removes_the_hooks(shell, channel, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, channel=channel, replay=ReplaySource(str(folder)))
    cuda_memdiff_kernel.unload_ipython_extension(shell)
    assert channel.closed
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    assert channel.of_type("snapshot") == []


def test_load_ext_works_in_a_plain_shell(shell):
    # No kernel: the comm package hands out a comm that drops messages.
    shell.run_line_magic("load_ext", "cuda_memdiff_kernel")
    assert shell.run_cell("y = 2", store_history=True).success
