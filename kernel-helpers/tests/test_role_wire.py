"""Each block's role on the wire: the ``roles.blocks`` runs of a cell's snapshot message.

The frontend keeps a snapshot's allocated blocks sorted by (device,
address); the runs name their roles in that order, one letter per role
(protocol.ROLE_CODES), a run of n equal letters as n and the letter. These
tests hold the encoding to the blocks the message describes, measure its
bytes at 40,000 blocks against a whole snapshot message (issue 13's wire
target: a cell that changes 300 of 40,000 blocks sends under 10% of it), and
check that the replay kernel sends a recording's per-block roles the same way.
"""

import json
import random
import re
import shutil

import pytest
from conftest import ROOT, FakeComm, attach
from cuda_memdiff_kernel import protocol
from cuda_memdiff_kernel.channel import Frontends
from cuda_memdiff_kernel.log import SnapshotLog
from cuda_memdiff_kernel.roles import RolePass, allocated_keys, block_runs

RECORDED = ROOT / "test-data" / "roles" / "training_roles--python"
BLOCK = 65536
PER_SEGMENT = 20


def expand(runs):
    """The test's own reading of the runs (the frontend's is src/engine/roles.ts)."""
    out = []
    for count, letter in re.findall(r"(\d*)([a-z])", runs["runs"]):
        out += [protocol.ROLES[protocol.ROLE_CODES.index(letter)]] * int(count or 1)
    assert len(out) == runs["count"]
    return out


def test_runs_name_each_block_in_address_order():
    codes = [0, 0, 0, 2, 4, 4, 9]
    runs = block_runs(codes)
    assert runs == {"count": 7, "runs": "3ac2ej"}
    assert expand(runs) == [protocol.ROLES[c] for c in codes]
    assert block_runs([]) == {"count": 0, "runs": ""}
    assert block_runs([1] * 12) == {"count": 12, "runs": "12b"}


def test_pending_frees_have_no_role_and_keys_go_in_device_then_address_order():
    blocks = {(1, 5): (1, 5, 8, 8, 0), (0, 9): (0, 9, 8, 8, 0), (0, 3): (0, 3, 8, 8, 1), (0, 1): (0, 1, 8, 8, 0)}
    assert allocated_keys(blocks) == [(0, 1), (0, 9), (1, 5)]


def raw_snapshot(addresses, frames):
    """A raw ``_snapshot()`` of 64 KiB blocks at ``addresses``, 20 to a 1.25 MiB segment, as torch writes it."""
    segments = {}
    for address in sorted(addresses):
        base = address - address % (BLOCK * PER_SEGMENT)
        segments.setdefault(base, []).append(
            {
                "address": address,
                "size": BLOCK,
                "requested_size": BLOCK - 16,
                "state": "active_allocated",
                "frames": frames[(address // BLOCK) % len(frames)],
            }
        )
    return {
        "segments": [
            {
                "device": 0,
                "address": base,
                "total_size": BLOCK * PER_SEGMENT,
                "stream": 0,
                "segment_type": "large",
                "segment_pool_id": (0, 0),
                "blocks": blocks,
                "frames": [],
            }
            for base, blocks in sorted(segments.items())
        ]
    }


def layout_roles(keys, changed, scattered):
    """Roles as training lays them out: whole segments of one role, the cell's new blocks another.

    ``scattered`` instead gives every block a role other than its neighbour's: the worst case.
    """
    if scattered:
        return [k % len(protocol.ROLES) for k in range(len(keys))]
    return [4 if key in changed else (key[1] // (BLOCK * PER_SEGMENT)) % 4 for key in keys]


def cell_messages(n_blocks, n_changed, scattered=False):
    """A cell's snapshot message as an attached frontend gets it (the change) and as a new one does (whole)."""
    rng = random.Random(14)
    frames = [
        [
            {"name": f"f{k}", "filename": f"/tmp/ipykernel_1/{k:08x}.py", "line": k},
            {"name": "forward", "filename": "/venv/torch/nn/modules/linear.py", "line": 125},
        ]
        for k in range(64)
    ]
    before = [BLOCK * k for k in range(n_blocks)]
    gone = set(rng.sample(before, n_changed // 2))
    after = [a for a in before if a not in gone] + [BLOCK * (n_blocks + 40 + k) for k in range(n_changed // 2)]
    log = SnapshotLog(max_entries=1)
    frontends = Frontends(log)
    fields = {"cell_id": "c", "execution_count": 1, "error": None, "reason": "cell", "devices": [], "before": []}
    log.add(raw_snapshot(before, frames), **fields)
    attached = FakeComm()
    frontends.attach(attached)
    entry = log.add(raw_snapshot(after, frames), **dict(fields, execution_count=2))
    keys = allocated_keys(log.current)
    born = {(0, a) for a in after if a >= BLOCK * n_blocks}
    expected = layout_roles(keys, born, scattered)
    runs = block_runs(expected)
    entry.fields["roles"] = {
        "bytes": {r: 0 for r in protocol.ROLES},
        "partial": False,
        "elapsed_ms": 1.0,
        "blocks": runs,
    }
    frontends.publish(entry)
    newcomer = FakeComm()
    frontends.attach(newcomer)  # the log keeps only this cell: it goes whole
    change, whole = attached.of_type("snapshot")[-1], newcomer.of_type("snapshot")[-1]
    assert change["prev"] is not None and whole["prev"] is None
    return change, whole, [protocol.ROLES[r] for r in expected]


def size(message):
    return len(json.dumps(message, separators=(",", ":")))


def test_a_cell_that_changes_300_of_40000_blocks_sends_its_roles_in_a_small_part_of_a_whole_snapshot(validate):
    change, whole, expected = cell_messages(40_000, 300)
    validate(change)
    validate(whole)
    assert len(expected) == 40_000 and change["roles"]["blocks"]["count"] == 40_000
    roles_bytes = size(change["roles"]["blocks"])
    without_roles = size({k: v for k, v in change.items() if k != "roles"})
    print(
        f"\n40,000 blocks, 300 changed: whole snapshot message {size(whole):,} B; the cell's message "
        f"{size(change):,} B ({size(change) / size(whole):.2%}), of which per-block roles {roles_bytes:,} B "
        f"(the change without them {without_roles:,} B)"
    )
    assert size(change) < 0.10 * size(whole)
    assert expand(change["roles"]["blocks"]) == expected  # every block's role, in the frontend's order


def test_even_when_every_block_differs_from_its_neighbour_the_roles_cost_one_byte_a_block(validate):
    change, whole, expected = cell_messages(40_000, 300, scattered=True)
    validate(change)
    assert expand(change["roles"]["blocks"]) == expected
    roles_bytes = size(change["roles"]["blocks"])
    print(
        f"\n40,000 blocks, every neighbour a different role: per-block roles {roles_bytes:,} B; the cell's "
        f"message {size(change):,} B ({size(change) / size(whole):.2%} of the whole {size(whole):,} B)"
    )
    assert 40_000 <= roles_bytes < 40_100
    assert size(change) < 0.10 * size(whole)


def replay_training(shell, folder, roles_files):
    """Replay the recorded training session as cells ``step_k = k`` (the Galata kernel's way); its snapshot messages."""
    from cuda_memdiff_kernel import install
    from cuda_memdiff_kernel.replay import ReplaySource

    manifest = json.loads((RECORDED / "manifest.json").read_text())
    for k, cell in enumerate(manifest["cells"]):
        cell["source"] = f"step_{k} = {k}"
        for name in (cell["snapshot_file"], cell["roles_file"]) if roles_files else (cell["snapshot_file"],):
            shutil.copy(RECORDED / name, folder / name)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    install(shell, replay=ReplaySource(str(folder)))
    comm = attach(shell)
    for k in range(len(manifest["cells"])):
        shell.run_cell(f"step_{k} = {k}", store_history=True)
    return comm.of_type("snapshot"), manifest["cells"]


def test_the_replay_kernel_sends_each_recorded_blocks_role(shell, tmp_path, validate):
    """The replay kernel (Galata, the demo) sends the roles of cellNN.roles.json on the blocks it replays."""
    sent, cells = replay_training(shell, tmp_path, roles_files=True)
    assert len(sent) == len(cells)
    for message, cell in zip(map(validate, sent), cells):
        columns = json.loads((RECORDED / cell["roles_file"]).read_text())
        recorded = [r for _, _, r in sorted(zip(columns["device"], columns["address"], columns["role"]))]
        assert expand(message["roles"]["blocks"]) == recorded, cell["roles_file"]
        assert message["roles"]["bytes"] == cell["roles"]["bytes"]
    last = sent[-1]["roles"]["blocks"]
    assert last["count"] == 49 and set(expand(last)) >= {"parameter", "gradient", "optimizer_state", "activation"}


def test_a_recording_without_roles_files_sends_its_bytes_per_role_alone(shell, tmp_path, validate):
    sent, cells = replay_training(shell, tmp_path, roles_files=False)
    assert [validate(m)["roles"] for m in sent] == [c["roles"] for c in cells]
    assert not any("blocks" in m["roles"] for m in sent)


def test_the_live_pass_sends_each_blocks_role_in_address_order(shell):
    """The per-block roles the pass sends are its own answer (``by_block``), block for block, also when reused."""
    torch = pytest.importorskip("torch")
    shell.run_cell("import torch\nm = torch.nn.Linear(8, 8)\nopt = torch.optim.AdamW(m.parameters())")
    shell.run_cell("m(torch.ones(2, 8)).sum().backward(); opt.step(); kept = torch.zeros(3)")
    ns = shell.user_ns
    tensors = [*ns["m"].parameters(), *(p.grad for p in ns["m"].parameters()), ns["kept"]]
    tensors += [t for s in ns["opt"].state.values() for t in s.values() if isinstance(t, torch.Tensor) and t.dim()]
    blocks = {}
    for t in tensors:
        key = (-1, t.untyped_storage().data_ptr())
        blocks[key] = (-1, key[1], t.untyped_storage().nbytes(), t.untyped_storage().nbytes(), 0, 0, key[1])
    rp = RolePass()
    answer = rp.run(shell, blocks)
    by_block = rp.by_block
    assert expand(answer["blocks"]) == [protocol.ROLES[by_block[k]] for k in sorted(by_block)]
    assert {"parameter", "gradient", "optimizer_state", "user"} <= set(expand(answer["blocks"]))
    again = rp.run(shell, blocks)
    assert again["reused"] and again["blocks"] == answer["blocks"]
    # a block on a second device, at a lower address: device order first, then address
    blocks[(5, 4096)] = (5, 4096, 512, 512, 0, 0, 4096)
    two = expand(rp.run(shell, blocks)["blocks"])
    assert two == [*expand(answer["blocks"]), "unknown"]


def test_encoding_cost_at_10000_and_40000_blocks():
    """A figure, not a timed test: what sorting and encoding the roles adds to the pass (this machine's CPU)."""
    import time

    for n in (10_000, 40_000):
        rng = random.Random(n)
        addresses = [BLOCK * k for k in range(n)]
        rng.shuffle(addresses)
        role_of = {a: (a // (BLOCK * PER_SEGMENT)) % 4 for a in addresses}
        times = []
        for _ in range(5):
            started = time.perf_counter()
            runs = block_runs(map(role_of.__getitem__, sorted(addresses)))
            times.append(time.perf_counter() - started)
        print(
            f"\n{n:,} blocks: roles encoded in {sorted(times)[2] * 1000:.1f} ms (median of 5), {len(runs['runs']):,} B"
        )
        assert runs["count"] == n
