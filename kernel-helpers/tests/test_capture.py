"""The helper in a real IPython shell with the real CPU build of torch, and
replayed H200 recordings standing in for the device."""

import gzip
import json
import os
import pickle
import re
import shutil
import subprocess
import sys

import cuda_memdiff_kernel
import pytest
from conftest import LIVE, RECORDINGS, ROOT, attach, read_as_recorded
from cuda_memdiff_kernel import current, install, process, protocol
from cuda_memdiff_kernel.replay import ReplayError, ReplaySource

IN_FRESH_KERNEL = (
    "import sys, json\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "from cuda_memdiff_kernel import install, current\n"
    "shell = InteractiveShell.instance()\n"
    "class Comm:\n"
    "    sent = []\n"
    "    def send(self, m): self.sent.append(m)\n"
    "    def on_msg(self, f): pass\n"
    "    def on_close(self, f): pass\n"
    "    def close(self): pass\n"
    "install(shell)\n"
    "comm = Comm(); current(shell).frontends.attach(comm)\n"
)


def run_fresh(code):
    """Run ``code`` after installing the helper in a fresh process; returns its last printed JSON line."""
    out = subprocess.run([sys.executable, "-c", IN_FRESH_KERNEL + code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_loading_imports_no_torch_and_waits_for_it():
    pytest.importorskip("torch")
    seen = run_fresh(
        "loaded = 'torch' in sys.modules\n"
        "first = comm.sent[-1]['status']\n"
        "shell.run_cell('x = 1', store_history=True)\n"
        "still = 'torch' in sys.modules\n"
        "shell.run_cell('import torch', store_history=True)\n"
        "print(json.dumps({'loaded': loaded, 'still': still, 'first': first,\n"
        "                  'statuses': [m['status'] for m in comm.sent if m['type'] == 'status']}))\n"
    )
    assert seen["loaded"] is False and seen["still"] is False
    assert seen["first"] == "waiting-for-torch"
    # the cell that imports torch is followed by the status the frontend shows
    torch = pytest.importorskip("torch")
    assert seen["statuses"][-1] == ("no-cuda" if torch.version.cuda is None else "waiting-for-cuda")


def test_a_kernel_without_torch_keeps_waiting():
    seen = run_fresh(
        "sys.modules['torch'] = None\n"
        "shell.run_cell('import math', store_history=True)\n"
        "print(json.dumps([m['status'] for m in comm.sent if m['type'] == 'status']))\n"
    )
    assert seen == ["waiting-for-torch"]


def test_cpu_torch_reports_torch_without_cuda(shell, validate):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: test_live_cuda.py covers it")
    status = install(shell)
    comm = attach(shell)
    assert status == protocol.NO_CUDA
    (msg,) = comm.messages
    validate(msg)
    assert msg["status"] == "no-cuda" and msg["torch"].startswith("2.")
    assert msg["run"] == process.state().run
    shell.run_cell("x = 1", store_history=True)
    assert comm.of_type("snapshot") == []


def test_capture_off_in_settings(shell):
    assert install(shell, settings={"capture": False}) == protocol.CAPTURE_OFF


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


def holders_request(comm, blocks, request_id=1):
    """Ask the helper, as the leak finder does, who holds these (device, address, size) blocks."""
    return comm.request({"type": "holders-request", "id": request_id, "blocks": [list(b) for b in blocks]})


def test_replay_answers_holders_with_those_recorded_after_the_last_cell(shell, tmp_path, validate):
    # exception_kept, recorded with `recorder --holders`: after cell 1, err.__traceback__ holds x and h.
    src = LIVE / "exception_kept--holders"
    manifest = json.loads((src / "manifest.json").read_text())
    for k, cell in enumerate(manifest["cells"]):
        cell["source"] = f"step_{k} = {k}"
        for f in [cell["snapshot_file"], cell["holders_file"]]:
            shutil.copy(src / f, tmp_path / f)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(tmp_path)))
    comm = attach(shell)
    for k in range(2):
        shell.run_cell(f"step_{k} = {k}", store_history=True, cell_id=f"cell-{k}")
    recorded = json.loads((src / "cell01.holders.json").read_text())["blocks"]
    asked = [(b["device"], b["address"], 1) for b in recorded[1:]] + [(0, 12345, 1)]  # one it never saw
    reply = holders_request(comm, asked)
    validate(reply)
    assert reply["replay"] == tmp_path.name and "error" not in reply
    assert reply["blocks"] == recorded[1:]
    assert any(h["path"].startswith("err.__traceback__") for b in reply["blocks"] for h in b["holders"])
    # a holders file that is not one: one line that names it, nothing guessed
    (tmp_path / manifest["cells"][2]["holders_file"]).write_text("{not json")
    shell.run_cell("step_2 = 2", store_history=True, cell_id="cell-2")
    broken = holders_request(comm, asked, 2)
    assert broken["blocks"] == [] and "cell02.holders.json is not a holders answer" in broken["error"]
    # rows the frontend would refuse are refused here, by the file's name
    rows = json.loads((src / "cell02.holders.json").read_text())
    rows["blocks"][0]["address"] = str(rows["blocks"][0]["address"])
    (tmp_path / "cell02.holders.json").write_text(json.dumps(rows))
    assert "cell02.holders.json is not a holders answer" in holders_request(comm, asked, 3)["error"]
    rows = json.loads((src / "cell02.holders.json").read_text())
    rows["blocks"][0]["holders"][0]["reference"] = {"type": "a guess"}
    (tmp_path / "cell02.holders.json").write_text(json.dumps(rows))
    refused = holders_request(comm, asked, 4)["error"]
    assert "cell02.holders.json is not a holders answer (a holder's reference is of no known type" in refused
    rows["blocks"][0]["holders"][0]["reference"] = None  # the schema has no null reference, nor has the frontend
    (tmp_path / "cell02.holders.json").write_text(json.dumps(rows))
    assert "a holder's reference is of no known type" in holders_request(comm, asked, 5)["error"]
    # a holders file outside the folder is refused when the replay starts, as a snapshot file is
    manifest["cells"][0]["holders_file"] = "../cell00.holders.json"
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ReplayError, match=r"cells\[0\] holders_file must be a name inside the folder"):
        ReplaySource(str(tmp_path))


def test_replay_refuses_a_recorded_holders_row_past_2_53_by_the_file(tmp_path):
    # Sent on, the frontend would round the address, and the row would name another block, or none.
    src = LIVE / "exception_kept--holders"
    manifest = json.loads((src / "manifest.json").read_text())
    for cell in manifest["cells"]:
        for f in [cell["snapshot_file"], cell["holders_file"]]:
            shutil.copy(src / f, tmp_path / f)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    rows = json.loads((src / "cell00.holders.json").read_text())
    asked = [{"device": b["device"], "address": b["address"]} for b in rows["blocks"]]
    rows["blocks"][0]["address"] = 2**53
    (tmp_path / "cell00.holders.json").write_text(json.dumps(rows))
    source = ReplaySource(str(tmp_path))
    source.take(manifest["cells"][0]["source"])
    with pytest.raises(ReplayError, match=r"cell00\.holders\.json is not a holders answer \(a row's address is out of"):
        source.holders(asked)


def test_replay_of_a_recording_without_holders_names_none(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    shell.run_cell(manifest["cells"][0]["source"], store_history=True, cell_id="cell-0")
    reply = holders_request(comm, [(0, 1 << 40, 512)])
    assert reply["blocks"] == [] and reply["replay"] == folder.name and "error" not in reply


class Tables:
    """What a frontend rebuilds from the messages: the active blocks of each snapshot."""

    def __init__(self):
        self.blocks = {}
        self.frames = 0
        self.by_seq = {}

    def apply(self, msg):
        assert msg["frames"]["base"] <= self.frames, "a gap in the frames"
        self.frames = max(self.frames, msg["frames"]["base"] + len(msg["frames"]["items"]))
        if msg["prev"] is None:
            self.blocks = {}
        else:
            assert msg["prev"] == self.last, "a delta against a snapshot this frontend does not have"
            for d, a in zip(msg["freed"]["device"], msg["freed"]["address"]):
                del self.blocks[(d, a)]
        seg = msg["segments"]
        b = msg["blocks"]
        for i, address in enumerate(b["address"]):
            self.blocks[(seg["device"][b["segment"][i]], address)] = (b["size"][i], b["state"][i])
        self.last = msg["seq"]
        self.by_seq[msg["seq"]] = dict(self.blocks)
        return sum(size for size, state in self.blocks.values() if state == 0)


def test_a_replay_says_what_was_recorded_where_not_only_its_folder(shell, tmp_path, validate):
    # Before: the frontend had only the folder's name (gpu_memory_demo--holders) to show people.
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    assert install(shell, replay=ReplaySource(str(folder))) == protocol.READY
    hello = attach(shell).messages[0]
    validate(hello)
    assert hello["replay"] == folder.name
    assert hello["recording"] == {"scenario": "eval_without_no_grad", "device": "NVIDIA H200", "device_count": 1}


@pytest.mark.parametrize(
    "about, said",
    [
        ({}, (None, None, None)),
        ({"scenario": 3, "device": ["H200"], "device_count": -1}, (None, None, None)),
        ({"scenario": "x" * 5000, "device": "NVIDIA H200", "device_count": True}, (None, "NVIDIA H200", None)),
    ],
)
def test_a_replay_says_only_what_its_manifest_says_plainly(shell, tmp_path, validate, about, said):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    for key in ("scenario", "device", "device_count"):
        manifest.pop(key, None)
    manifest.update(about)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert install(shell, replay=ReplaySource(str(folder))) == protocol.READY
    hello = attach(shell).messages[0]
    validate(hello)
    assert hello["recording"] == dict(zip(("scenario", "device", "device_count"), said))


def test_replay_sends_each_cell_once_as_changes_and_leaves_no_trace(shell, tmp_path, validate):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    before_ns = set(shell.user_ns)
    assert install(shell, replay=ReplaySource(str(folder))) == protocol.READY
    comm = attach(shell)
    assert comm.messages[0]["replay"] == folder.name
    for k, cell in enumerate(manifest["cells"]):
        assert shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}").success
    snaps = comm.of_type("snapshot")
    assert [m["cell_id"] for m in snaps] == [f"cell-{k}" for k in range(len(manifest["cells"]))]
    assert [m["execution_count"] for m in snaps] == [k + 1 for k in range(len(snaps))]
    assert snaps[0]["prev"] is None and all(m["prev"] == p["seq"] for p, m in zip(snaps, snaps[1:]))
    tables = Tables()
    for msg, cell in zip(snaps, manifest["cells"]):
        validate(msg)
        assert tables.apply(msg) == cell["after"]["allocated"]
        assert sum(d["allocated"] for d in msg["devices"]) == cell["after"]["allocated"]
        assert sum(d["allocated"] for d in msg["before"]) == cell["before"]["allocated"]
    # a cell that changes few blocks sends few
    assert min(len(m["blocks"]["size"]) for m in snaps[1:]) < len(tables.blocks)
    added = set(shell.user_ns) - before_ns
    assert all(n.startswith(("step_", "_i")) for n in added), added  # the user's and IPython's own
    assert not any("memdiff" in name for name in shell.user_ns)
    assert shell.user_ns["Out"] == {}


def test_a_replayed_export_with_roles_sends_messages_the_frontend_takes(shell, tmp_path, validate):
    # The panel's export writes a cell's roles as {bytes, partial}: no pass ran, so no elapsed_ms. The replay
    # sends them as recorded; a message the frontend's schema refused would be asked for again, and again.
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    for cell in manifest["cells"]:
        cell["roles"] = {"bytes": {"activation": cell["after"]["allocated"]}, "partial": False}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for k, cell in enumerate(manifest["cells"]):
        shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")
    snaps = comm.of_type("snapshot")
    assert len(snaps) == len(manifest["cells"])
    for msg, cell in zip(snaps, manifest["cells"]):
        validate(msg)
        assert msg["roles"]["bytes"] == {"activation": cell["after"]["allocated"]}


def test_each_snapshot_names_the_code_its_frames_were_compiled_from(shell, tmp_path, validate):
    # The frontend links an earlier run's frames to its cell by this code once the cell is edited. A replayed
    # run's frames are the recording's: its code is the recorded one (served for a source equal but for
    # surrounding blanks). The cell run again (the recording's third and fifth) keeps one copy of its text.
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    sources = ["step_0 = 0", "step_1 = 1", "preds = []\npreds.append(2)", "step_3 = 3", "", "step_5 = 5"]
    sources[4] = sources[2]
    for cell, source in zip(manifest["cells"], sources):
        cell["source"] = source + "\n"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for k, source in enumerate(sources):
        shell.run_cell(source, store_history=True, cell_id=f"cell-{k}")
    snaps = comm.of_type("snapshot")
    for msg in snaps:
        validate(msg)
    assert [m["source"] for m in snaps] == [s + "\n" for s in sources]
    assert snaps[4]["source"] is snaps[2]["source"]
    # a frontend that attaches later (a reloaded page) gets the code with each kept snapshot
    assert [m["source"] for m in attach(shell).of_type("snapshot")] == [s + "\n" for s in sources]


def run_replayed(shell, tmp_path, cells):
    """Install a replay of eval_without_no_grad, attach a frontend, run its first ``cells`` cells."""
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for k, cell in enumerate(manifest["cells"][:cells]):
        shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")
    return comm, manifest


def test_a_frontend_that_attaches_later_gets_every_kept_snapshot(shell, tmp_path):
    first, manifest = run_replayed(shell, tmp_path, 3)
    second = attach(shell)  # a reloaded page, a second notebook on this kernel
    assert second.messages[0]["type"] == "status" and second.messages[0]["kept"] == 3
    late, early = Tables(), Tables()
    for m in second.of_type("snapshot"):
        late.apply(m)
    for m in first.of_type("snapshot"):
        early.apply(m)
    assert late.by_seq == early.by_seq
    shell.run_cell(manifest["cells"][3]["source"], store_history=True, cell_id="cell-3")
    assert early.apply(first.of_type("snapshot")[-1]) == late.apply(second.of_type("snapshot")[-1])
    # the second frontend's frames started from 0; the first's went on where they were
    assert second.of_type("snapshot")[0]["frames"]["base"] == 0
    assert first.of_type("snapshot")[-1]["frames"]["base"] > 0


def test_the_log_is_bounded(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    install(shell, settings={"snapshots_kept": 2}, replay=ReplaySource(str(folder)))
    first = attach(shell)
    for k, cell in enumerate(manifest["cells"]):
        shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")
    log = current(shell).log
    assert len(log.entries) == 2 and log.dropped == len(manifest["cells"]) - 2
    late = attach(shell)
    tables = Tables()
    sums = [tables.apply(m) for m in late.of_type("snapshot")]
    assert sums == [c["after"]["allocated"] for c in manifest["cells"][-2:]]
    assert late.messages[0]["dropped"] == len(manifest["cells"]) - 2
    assert len(first.of_type("snapshot")) == len(manifest["cells"])


def test_with_one_snapshot_kept_a_failed_send_heals_with_the_next_snapshot():
    # a trim puts a head entry in place of the new one: it is still the newest, sent whole
    from conftest import FakeComm
    from cuda_memdiff_kernel.channel import Frontends
    from cuda_memdiff_kernel.log import SnapshotLog
    from test_reader import SEGMENT, snapshot

    log = SnapshotLog(max_entries=1)
    frontends = Frontends(log)
    comm = FakeComm()
    frontends.attach(comm)
    layout = {(0, SEGMENT): [(0, 512, ("a", 1))]}
    frontends.publish(log.add(snapshot(layout), 1))
    comm.fail_next = 1
    layout[(0, SEGMENT)].append((1024, 512, ("a", 2)))
    frontends.publish(log.add(snapshot(layout), 2))
    layout[(0, SEGMENT)].append((2048, 512, ("a", 3)))
    frontends.publish(log.add(snapshot(layout), 3))
    sent = comm.of_type("snapshot")
    assert [m["seq"] for m in sent] == [1, 3] and sent[-1]["prev"] is None
    assert len(sent[-1]["blocks"]["address"]) == 3


def test_a_failed_send_heals_with_a_whole_message(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "eval_without_no_grad--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    cells = manifest["cells"]
    shell.run_cell(cells[0]["source"], store_history=True, cell_id="cell-0")
    comm.fail_next = 1
    assert shell.run_cell(cells[1]["source"], store_history=True, cell_id="cell-1").success  # lost on the way
    shell.run_cell(cells[2]["source"], store_history=True, cell_id="cell-2")
    snaps = comm.of_type("snapshot")
    assert [m["cell_id"] for m in snaps] == ["cell-0", "cell-2"]
    assert snaps[1]["prev"] is None and snaps[1]["frames"]["base"] == 0  # whole again, frames from the start
    tables = Tables()
    assert [tables.apply(m) for m in snaps] == [cells[0]["after"]["allocated"], cells[2]["after"]["allocated"]]


def test_a_frontend_can_ask_for_everything_again(shell, tmp_path):
    comm, _ = run_replayed(shell, tmp_path, 2)
    count = len(comm.messages)
    comm.request({"type": "resend"})
    again = comm.messages[count:]
    assert again[0]["type"] == "status"
    assert [m["cell_id"] for m in again[1:]] == ["cell-0", "cell-1"] and again[1]["frames"]["base"] == 0


def test_an_interrupt_inside_the_helper_never_reaches_the_cell(shell, tmp_path, capsys, monkeypatch):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    log = current(shell).log
    real_add = log.add
    calls = []

    def interrupted(raw, **fields):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real_add(raw, **fields)

    monkeypatch.setattr(log, "add", interrupted)
    result = shell.run_cell(manifest["cells"][0]["source"], store_history=True, cell_id="cell-0")
    assert result.success
    out = capsys.readouterr()
    assert "Error in callback" not in out.out + out.err and "KeyboardInterrupt" not in out.out + out.err
    note = comm.of_type("cell-note")[-1]
    assert note["note"] == "capture-failed" and "interrupted" in note["message"]
    # capture goes on with the next cell
    shell.run_cell(manifest["cells"][1]["source"], store_history=True, cell_id="cell-1")
    (snap,) = comm.of_type("snapshot")
    assert snap["cell_id"] == "cell-1" and Tables().apply(snap) == manifest["cells"][1]["after"]["allocated"]
    assert comm.of_type("status")[-1]["status"] == "ready"


def test_replay_sends_the_oom_snapshot_before_the_cell(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "oom--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for cell in manifest["cells"]:
        shell.run_cell(cell["source"], store_history=True)
    reasons = [m["reason"] for m in comm.of_type("snapshot")]
    assert reasons == ["cell", "oom", "cell", "cell"]
    assert "OutOfMemoryError" in comm.of_type("snapshot")[2]["error"]
    # the failed request, from the recorded history's oom entry: 60 GiB with 39.29 GiB free
    assert comm.of_type("snapshot")[1]["oom"] == {
        "device": 0,
        "alloc": 60 * 2**30,
        "device_free": 42183294976,
        "count": 1,
    }
    # the recording's history travels with each cell: the first cell's five 20 GiB allocations
    first = comm.of_type("snapshot")[0]
    actions = [first["traces"]["actions"][a] for a in first["traces"]["action"]]
    assert actions.count("alloc") == 5 and first["history"]["complete"]


def test_a_cell_not_in_the_recording_gets_a_note(shell, tmp_path, validate):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    shell.run_cell("not_recorded = 1", store_history=True, cell_id="new-cell")
    (note,) = comm.of_type("cell-note")
    validate(note)
    assert note["cell_id"] == "new-cell" and note["note"] == "not-recorded"


def test_a_frontend_that_attaches_after_a_note_still_gets_it(shell, tmp_path, validate):
    # Restart & Run All queues every cell ahead of the frontend's comm, and a reloaded page attaches after the
    # runs: the cell not in the recording must still say so, and a note a later snapshot replaced must not.
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    cells = manifest["cells"]
    install(shell, replay=ReplaySource(str(folder)))
    shell.run_cell(cells[0]["source"], store_history=True, cell_id="cell-0")
    shell.run_cell("not_recorded = 1", store_history=True, cell_id="new-cell")
    shell.run_cell(cells[2]["source"], store_history=True, cell_id="cell-2")
    shell.run_cell(cells[1]["source"], store_history=True, cell_id="cell-1")  # skipped: a note
    shell.run_cell(cells[3]["source"], store_history=True, cell_id="cell-1")  # the same cell, edited: a snapshot
    comm = attach(shell)
    kinds = [m["type"] for m in comm.messages]
    assert kinds == ["status"] + ["snapshot"] * 3 + ["cell-note"]  # the notes after the snapshots they follow
    (note,) = comm.of_type("cell-note")
    validate(note)
    assert (note["cell_id"], note["note"], note["execution_count"]) == ("new-cell", "not-recorded", 2)
    # a later run of the cell that is a snapshot replaces the note, for frontends attached now and later
    shell.run_cell(cells[4]["source"], store_history=True, cell_id="new-cell")
    assert [m["cell_id"] for m in attach(shell).of_type("cell-note")] == []
    # stopping keeps nothing
    current(shell).stop()
    assert current(shell).frontends.notes == {}


def test_the_notes_kept_are_bounded_by_the_snapshots_kept(shell, tmp_path):
    folder, _ = replay_folder(tmp_path, "clean_training--python")
    install(shell, settings={"snapshots_kept": 2}, replay=ReplaySource(str(folder)))
    for k in range(5):
        shell.run_cell(f"not_recorded_{k} = {k}", store_history=True, cell_id=f"new-{k}")
    assert [m["cell_id"] for m in attach(shell).of_type("cell-note")] == ["new-3", "new-4"]


def test_a_second_run_all_gets_notes_not_the_first_runs_figures_again(shell, tmp_path, validate):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    cells = manifest["cells"]
    for k, cell in enumerate(cells):
        shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")
    assert len(comm.of_type("snapshot")) == len(cells) and not comm.of_type("cell-note")
    # Run All again: the recording has no second run of these cells, and says so for each
    for k, cell in enumerate(cells):
        shell.run_cell(cell["source"], store_history=True, cell_id=f"cell-{k}")
    assert len(comm.of_type("snapshot")) == len(cells)
    notes = comm.of_type("cell-note")
    for note in notes:
        validate(note)
    assert [n["cell_id"] for n in notes] == [f"cell-{k}" for k in range(len(cells))]
    assert {n["note"] for n in notes} == {"replayed-already"}
    assert "restart the kernel" in notes[0]["message"]
    # a restart (a new helper on the same folder) replays from the start
    assert ReplaySource(str(folder)).take(cells[0]["source"])["snapshot_file"] == cells[0]["snapshot_file"]


def replay_with_source(shell, tmp_path, index, source):
    """A replay of clean_training whose recorded cell ``index`` has ``source``, attached: (comm, cells)."""
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    manifest["cells"][index]["source"] = source
    (folder / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(folder)))
    return attach(shell), manifest["cells"]


def test_a_run_that_raised_is_not_given_the_recorded_figures_and_the_recording_waits(shell, tmp_path, validate):
    # The demo's trap: a cell run before the cell it needs raises NameError here, where the recorded run did not.
    comm, cells = replay_with_source(shell, tmp_path, 1, "step_1 = step_0 + 1")
    shell.run_cell(cells[1]["source"], store_history=True, cell_id="needs-step-0")
    assert comm.of_type("snapshot") == []
    (note,) = comm.of_type("cell-note")
    validate(note)
    assert note["note"] == "replay-raised" and note["cell_id"] == "needs-step-0"
    assert "NameError: name 'step_0' is not defined" in note["message"]
    assert "next in the recording: step_0 = 0" in note["message"]
    # run in order, both get their recorded runs, the second one included
    shell.run_cell(cells[0]["source"], store_history=True, cell_id="first")
    shell.run_cell(cells[1]["source"], store_history=True, cell_id="needs-step-0")
    served = comm.of_type("snapshot")
    assert [m["cell_id"] for m in served] == ["first", "needs-step-0"]
    assert [m["devices"][0]["allocated"] for m in served] == [c["after"]["allocated"] for c in cells[:2]]
    assert len(comm.of_type("cell-note")) == 1


def test_a_run_in_order_that_raised_gets_the_recorded_figures(shell, tmp_path):
    # Code written for CUDA fails on a machine without it: standing in for the device is what a replay is for.
    comm, cells = replay_with_source(shell, tmp_path, 0, "x = torch_cuda_only()")
    shell.run_cell(cells[0]["source"], store_history=True, cell_id="first")
    (served,) = comm.of_type("snapshot")
    assert served["devices"][0]["allocated"] == cells[0]["after"]["allocated"]
    assert "NameError" in served["error"] and comm.of_type("cell-note") == []


def test_a_skipped_recorded_run_says_it_was_skipped_not_replayed(shell, tmp_path, validate):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    cells = manifest["cells"]
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    shell.run_cell(cells[2]["source"], store_history=True, cell_id="third")
    shell.run_cell(cells[1]["source"], store_history=True, cell_id="second")
    (note,) = comm.of_type("cell-note")
    validate(note)
    assert note["note"] == "replay-skipped" and note["cell_id"] == "second"
    assert "restart the kernel" in note["message"]


def test_a_replay_follows_the_recorded_runs_in_order(tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    cells = manifest["cells"]
    replay = ReplaySource(str(folder))
    # skipping ahead serves the later cell; the skipped one then has no run left, and says so
    assert replay.peek(cells[0]["source"]) == (cells[0], None)
    first_line = next(line for line in cells[0]["source"].splitlines() if line.strip()).strip()
    assert replay.peek(cells[2]["source"]) == (cells[2], first_line)
    assert replay.peek("never recorded") == (None, None)
    assert replay.take(cells[2]["source"])["snapshot_file"] == cells[2]["snapshot_file"]
    assert replay.take(cells[1]["source"]) is None
    assert replay.not_served(cells[1]["source"]) == "replay-skipped"
    assert replay.not_served(cells[2]["source"]) == "replayed-already"
    assert replay.not_served("never recorded") == "not-recorded"
    # a run whose capture failed (an interrupt) is served again
    served = replay.take(cells[3]["source"])
    replay.put_back(served)
    assert replay.take(cells[3]["source"]) is served


def test_output_cache_holds_only_the_users_values(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    shell.run_cell("41 + 1", store_history=True)
    assert shell.user_ns["Out"] == {2: 42}


def test_a_corrupt_recording_is_a_note_and_capture_goes_on(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    (folder / manifest["cells"][0]["snapshot_file"]).write_bytes(b"\x1f\x8bnot gzip")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    assert shell.run_cell(manifest["cells"][0]["source"], store_history=True).success
    assert comm.of_type("cell-note")[-1]["message"]
    shell.run_cell(manifest["cells"][1]["source"], store_history=True)
    assert len(comm.of_type("snapshot")) == 1


def note_for_a_spoilt_cell(shell, tmp_path, spoil, why):
    """Replay a recording whose second cell's file ``spoil(path)`` changed: that cell's note names the folder
    and the file, then says ``why`` (a pattern) in words, and the cells before and after it still replay."""
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    name = manifest["cells"][1]["snapshot_file"]
    spoil(folder / name)
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for cell in manifest["cells"][:3]:
        assert shell.run_cell(cell["source"], store_history=True).success
    note = comm.of_type("cell-note")[-1]["message"]
    assert re.fullmatch(rf"no snapshot for this cell: {re.escape(str(folder))}: {name} {why}.*", note), note
    assert "Error:" not in note
    assert len(comm.of_type("snapshot")) == 2
    return folder, manifest


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda data: data[: len(data) // 2], r"cannot be read as a snapshot \(pickle data was truncated\)"),
        (lambda data: b"", r"cannot be read as a snapshot \(cut short"),
        (
            lambda data: pickle.dumps({"device_traces": []}),
            r"is not a snapshot as torch writes it \(no key 'segments'\)",
        ),
        (lambda data: pickle.dumps({"segments": [{"address": 1}]}), r"is not a snapshot as torch writes it"),
    ],
)
def test_a_damaged_recording_is_a_note_that_names_the_file(shell, tmp_path, damage, why):
    # Found by bench/fuzz_files.py. Before: "no snapshot for this cell: _pickle.UnpicklingError: pickle data was
    # truncated" or "KeyError: 'segments'", naming neither the folder nor the file.
    folder, manifest = note_for_a_spoilt_cell(
        shell, tmp_path, lambda path: path.write_bytes(damage(gzip.decompress(path.read_bytes()))), why
    )


def _moved_past_exact(raw):
    """The last segment, its blocks with it, moved to 2**60: past 2**53 - 1, which a JavaScript number holds."""
    segment = raw["segments"][-1]
    shift = 2**60 - segment["address"]
    segment["address"] += shift
    for block in segment["blocks"]:
        block["address"] += shift
    return re.escape(f"segment {len(raw['segments']) - 1} address is out of range ({2**60})")


def _block_size_past_exact(raw):
    raw["segments"][0]["blocks"][0]["size"] = 2**53
    return re.escape(f"segment 0 block 0 size is out of range ({2**53})")


def _trace_address_past_exact(raw):
    raw["device_traces"][0][0]["addr"] = 2**64 - 1
    return re.escape(f"device 0 trace entry 0 addr is out of range ({2**64 - 1})")


def _frame_line_past_exact(raw):
    frames = next(b["frames"] for s in raw["segments"] for b in s["blocks"] if b.get("frames"))
    frames[0] = dict(frames[0], line=2**53)
    return re.escape(f"a frame's line is out of range ({2**53})")


@pytest.mark.parametrize(
    "damage", [_moved_past_exact, _block_size_past_exact, _trace_address_past_exact, _frame_line_past_exact]
)
def test_a_recording_with_an_integer_past_2_53_is_a_note_that_names_the_file_and_field(shell, tmp_path, damage):
    # Sent on, the frontend's JSON.parse would round it (a number is exact only to 2**53 - 1): two blocks at two
    # addresses would arrive at one, and a diff would merge them. Refused here by file and field, as the CLI does.
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    name = manifest["cells"][1]["snapshot_file"]
    raw = pickle.loads(gzip.decompress((folder / name).read_bytes()))
    field = damage(raw)  # a pattern
    (folder / name).write_bytes(gzip.compress(pickle.dumps(raw)))
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for cell in manifest["cells"][:3]:
        assert shell.run_cell(cell["source"], store_history=True).success
    note = comm.of_type("cell-note")[-1]["message"]
    past = r"past 2\^53 - 1, where numbers stop being exact"
    assert re.fullmatch(rf"no snapshot for this cell: {re.escape(str(folder))}: {name} {field}: {past}", note), note
    assert len(comm.of_type("snapshot")) == 2  # the cells before and after it still replay


@pytest.mark.parametrize(
    "field, value, why",
    [
        (
            "oom_snapshots",
            "oom00.pickle.gz",
            r'cells\[1\] oom_snapshots must be a list of names, not "oom00\.pickle\.gz"',
        ),
        ("before", "x", r'cells\[1\] before must be an object, not "x"'),
        ("after", {"per_device": [5]}, r"cells\[1\] after per_device\[0\] must be an object, not 5"),
        ("after", {"peak_allocated": "x"}, r'cells\[1\] after peak_allocated must be a whole number of bytes, not "x"'),
        ("before", {"allocated": -1}, r"cells\[1\] before allocated must be a whole number of bytes, not -1"),
        (
            "after",
            {"per_device": [{"device": 0, "reserved": 2**53}]},
            r"cells\[1\] after per_device\[0\] reserved must be a whole number of bytes, not a number beyond 2\^53",
        ),
        ("error", ["x"], r"cells\[1\] error must be the error's text or null, not a list"),
    ],
)
def test_a_manifest_field_of_the_wrong_type_is_refused_by_name(tmp_path, field, value, why):
    # Found by bench/fuzz_files.py. Before: each cell note said "AttributeError: 'str' object has no attribute
    # 'get'", and a string of OOM snapshots was read letter by letter ("no such file .../o").
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    manifest["cells"][1][field] = value
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ReplayError, match=rf"^{re.escape(str(folder))}: manifest\.json {why}$"):
        ReplaySource(str(folder))


def test_a_manifest_nested_past_the_stack_is_refused_by_name(tmp_path):
    # Found by bench/fuzz_files.py. Before: "cannot replay: RecursionError: maximum recursion depth exceeded
    # while decoding a JSON array from a unicode string", naming no folder.
    (tmp_path / "manifest.json").write_text('{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(ReplayError, match=rf"^{re.escape(str(tmp_path))}: manifest\.json is nested too deep"):
        ReplaySource(str(tmp_path))


def test_a_recording_that_imports_code_is_refused(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    (folder / manifest["cells"][0]["snapshot_file"]).write_bytes(b"\x80\x02cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    assert "refused" in comm.of_type("cell-note")[-1]["message"]


def _fifo(path):
    os.mkfifo(path)


def _endless(path):
    os.symlink("/dev/zero", path)


def _bomb(path):
    path.write_bytes(gzip.compress(bytes(3 * 2**20)))  # 3 MiB of zeros in a few KiB; the limit here is 1 MiB


def _huge_integer(path):
    path.write_bytes(pickle.dumps({"segments": [{"device": 0, "address": 2**800_000, "total_size": 1, "blocks": []}]}))


def _deep_json(path):
    path.write_bytes(b'{"segments": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def _long_json_number(path):
    path.write_bytes(b'{"segments": [{"address": ' + b"9" * 5000 + b"}]}")


@pytest.mark.parametrize(
    "make, why",
    [
        (_fifo, "is not a regular file"),  # before: the kernel waited for a writer, forever
        (_endless, "is not a regular file"),  # before: read until memory ran out
        (_bomb, "decompresses to more than the 1,048,576 bytes a snapshot may hold"),
        (_huge_integer, r"segment 0 address is out of range \(a 800,001-bit integer\): past 2\^53 - 1"),
        (_deep_json, "is JSON nested too deep to be a snapshot"),  # (helper-74) before: a bare RecursionError
        (_long_json_number, "holds a number of more than 4,300 digits"),
    ],
)
def test_a_hostile_recording_is_refused_by_name_without_waiting_or_filling_memory(
    shell, tmp_path, monkeypatch, make, why
):
    # Found by helper-73's hand-made files: before, a pipe hung the kernel, /dev/zero or a gzip bomb filled its
    # memory ("MemoryError: Unable to allocate output buffer"), and a huge integer gave Python's own ValueError
    # about digit limits, naming no file.
    monkeypatch.setattr(protocol, "MAX_SNAPSHOT_BYTES", 2**20)
    note_for_a_spoilt_cell(shell, tmp_path, lambda path: path.unlink() or make(path), why)


def test_a_recording_in_json_replays_as_its_pickle(shell, tmp_path):
    # docs/session-format.md: a snapshot file may be the same dict as JSON, plain or gzipped; the CLI read it,
    # the replay refused it ("invalid load key, '{'").
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for cell in manifest["cells"][:3]:
        shell.run_cell(cell["source"], store_history=True)
    as_pickles = comm.of_type("snapshot")
    shell.run_cell("%reset -f", store_history=False)
    for k, cell in enumerate(manifest["cells"][:3]):
        raw = pickle.loads(gzip.decompress((folder / cell["snapshot_file"]).read_bytes()))
        cell["snapshot_file"] = f"cell{k:02d}.json" + (".gz" if k % 2 else "")
        text = json.dumps(raw).encode()
        (folder / cell["snapshot_file"]).write_bytes(gzip.compress(text) if k % 2 else b"\n " + text)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for cell in manifest["cells"][:3]:
        shell.run_cell(cell["source"], store_history=True)
    as_json = comm.of_type("snapshot")
    assert comm.of_type("cell-note") == []
    assert [m["devices"] for m in as_json] == [m["devices"] for m in as_pickles]
    for key in ("segments", "blocks", "frames", "stacks"):
        assert [m[key] for m in as_json] == [m[key] for m in as_pickles], key


@pytest.mark.parametrize("name", ["../outside.pickle.gz", "/etc/passwd", "a/../../b.pickle.gz", ""])
def test_replay_refuses_files_outside_its_folder(tmp_path, name):
    (tmp_path / "manifest.json").write_text(json.dumps({"cells": [{"source": "x", "snapshot_file": name}]}))
    with pytest.raises(ReplayError, match="inside the folder"):
        ReplaySource(str(tmp_path))


def test_a_bad_replay_folder_is_a_status_not_an_error_in_a_cell(shell, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_MEMDIFF_REPLAY", str(tmp_path / "missing"))
    assert install(shell) == protocol.HELPER_ERROR
    comm = attach(shell)
    assert "cannot replay" in comm.messages[0]["message"]
    assert shell.run_cell("z = 3", store_history=True).success


def test_unload_removes_the_hooks_and_closes_the_comms(shell, tmp_path):
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    cuda_memdiff_kernel.unload_ipython_extension(shell)
    assert comm.closed and process.current_capture() is None
    shell.run_cell(manifest["cells"][0]["source"], store_history=True)
    assert comm.of_type("snapshot") == []


def test_injecting_again_keeps_the_running_helper(shell, tmp_path, monkeypatch):
    """Another notebook or a reloaded page injects again: same source, same helper, same log."""
    folder, manifest = replay_folder(tmp_path, "clean_training--python")
    monkeypatch.setenv("CUDA_MEMDIFF_REPLAY", str(folder))
    # What the frontend injects, as the build embeds it: the modules and the data they read (manifest_fields.json).
    subprocess.run(["node", str(ROOT / "scripts" / "embed-helper.js")], check=True, cwd=ROOT)
    payload = json.loads((ROOT / "src" / "capture" / "helper.generated.json").read_text())
    modules, bootstrap = payload["modules"], payload["bootstrap"]

    def inject(source_hash, settings=None):
        payload = json.dumps({"modules": modules, "hash": source_hash, "settings": settings or {}})
        exec(
            compile(bootstrap, "<bootstrap>", "exec"),
            {"__name__": "_cuda_memdiff_boot", "_payload": payload, "get_ipython": lambda: shell},
        )
        return sys.modules["_cuda_memdiff_kernel"].current(shell)

    installs = process.state().installs
    helper = inject("abc")
    shell.run_cell(manifest["cells"][0]["source"], store_history=True, cell_id="cell-0")
    assert inject("abc", {"snapshots_kept": 50}) is helper and len(helper.log.entries) == 1
    assert helper.log.max_entries == 50
    assert process.state().installs == installs + 1
    upgraded = inject("def")  # a new version of the extension replaces the helper
    assert upgraded is not helper and process.state().installs == installs + 2
    for name in [n for n in sys.modules if n.startswith("_cuda_memdiff_kernel")]:
        del sys.modules[name]


def test_load_ext_works_in_a_plain_shell(shell):
    # No kernel: no frontend can attach, and nothing fails.
    shell.run_line_magic("load_ext", "cuda_memdiff_kernel")
    assert shell.run_cell("y = 2", store_history=True).success


def test_recorded_manifests_follow_the_manifest_rule_and_holders_files_the_schema(validate):
    for manifest_path in sorted(RECORDINGS.glob("*/manifest.json")):
        manifest = read_as_recorded(manifest_path)
        for cell in manifest["cells"]:
            if cell.get("holders_file"):
                validate(json.loads((manifest_path.parent / cell["holders_file"]).read_text()), "holdersFile")
