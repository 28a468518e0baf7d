"""One rule for a session folder's manifest.json, read by both languages.

kernel-helpers/cuda_memdiff_kernel/manifest_fields.json is the rule: the
replay kernel reads a manifest by it in Python (manifest.py), the CLI and the
panel in TypeScript (src/engine/manifest.ts). Hostile manifests made from a
real recording are refused by the built CLI and by the replay with the same
words after the folder; manifests both take read to the same value. The words
are written out here, so a change to the table is one a reviewer reads.
"""

import copy
import json
import os
import pathlib
import subprocess

import pytest
from cuda_memdiff_kernel.manifest import read_manifest
from cuda_memdiff_kernel.replay import ReplayError, ReplaySource

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLI = ROOT / "bin" / "cuda-memdiff.js"
ENGINE = ROOT / "dist" / "node" / "engine" / "manifest.js"
RECORDING = ROOT / "test-data" / "live" / "traceback_pin--holders"  # holders files, OOM snapshot lists, per device

pytestmark = pytest.mark.skipif(not ENGINE.exists(), reason="needs `npm run build:cli` (npm test runs it)")


def _cell(field, value):
    def change(m):
        m["cells"][2][field] = value

    return change


def _stats(which, field, value):
    def change(m):
        m["cells"][2][which][field] = value

    return change


def _device(field, value):
    def change(m):
        m["cells"][2]["after"]["per_device"][0][field] = value

    return change


def _roles(**summary):
    return _cell("roles", {"bytes": {"parameter": 4096}, "partial": False, "elapsed_ms": 0.5, **summary})


def _drop(field):
    def change(m):
        del m["cells"][2][field]

    return change


# (what is wrong, the change to the recording's manifest, the words after the folder's manifest.json)
REFUSED = [
    ("a list", lambda m: [m], "must be an object, not a list"),
    ("no cells", lambda m: {"device_count": 1}, "has no cells"),
    ("cells of null", lambda m: dict(m, cells=None), "has no cells"),
    ("cells not a list", lambda m: dict(m, cells={"0": m["cells"][0]}), "cells must be a list, not an object"),
    ("a cell of text", lambda m: m["cells"].__setitem__(2, "cell"), 'cells[2] must be an object, not "cell"'),
    ("no snapshot file", _drop("snapshot_file"), "cells[2] has no snapshot_file"),
    ("a null snapshot file", _cell("snapshot_file", None), "cells[2] has no snapshot_file"),
    (
        "a snapshot file of 5",
        _cell("snapshot_file", 5),
        "cells[2] snapshot_file must be a name inside the folder, not 5",
    ),
    ("an empty name", _cell("snapshot_file", ""), 'cells[2] snapshot_file must be a name inside the folder, not ""'),
    (
        "a name above",
        _cell("snapshot_file", "../x.pickle"),
        'cells[2] snapshot_file must be a name inside the folder, not "../x.pickle"',
    ),
    (
        "an absolute name",
        _cell("snapshot_file", "/etc/passwd"),
        'cells[2] snapshot_file must be a name inside the folder, not "/etc/passwd"',
    ),
    (
        "a drive",
        _cell("snapshot_file", "C:\\x.pickle"),
        'cells[2] snapshot_file must be a name inside the folder, not "C:\\\\x.pickle"',
    ),
    (
        "a long name",
        _cell("snapshot_file", "a/" * 30 + "../b"),
        'cells[2] snapshot_file must be a name inside the folder, not "' + "a/" * 20 + '"…',
    ),
    (
        "odd characters",
        _cell("snapshot_file", '../\u0007\U0001f600\u00e9"x'),
        'cells[2] snapshot_file must be a name inside the folder, not "../??é\\"x"',
    ),
    (
        "a NUL",  # no file system takes one: Node's and Python's own errors said so, naming no field
        _cell("snapshot_file", "cell02\0.pickle.gz"),
        'cells[2] snapshot_file must be a name inside the folder, not "cell02?.pickle.gz"',
    ),
    (
        "a shared snapshot",
        lambda m: m["cells"][2].update(snapshot_file=m["cells"][0]["snapshot_file"]),
        'cells[2] snapshot_file "cell00.pickle.gz" is cells[0]\'s too: each cell has a snapshot of its own',
    ),
    (
        "holders above",
        _cell("holders_file", "../x.json"),
        'cells[2] holders_file must be a name inside the folder, not "../x.json"',
    ),
    (
        "holders in a list",
        _cell("holders_file", ["a"]),
        "cells[2] holders_file must be a name inside the folder, not a list",
    ),
    (
        "OOM snapshots of text",
        _cell("oom_snapshots", "oom00.pickle.gz"),
        'cells[2] oom_snapshots must be a list of names, not "oom00.pickle.gz"',
    ),
    (
        "an OOM snapshot of 5",
        _cell("oom_snapshots", ["oom00.pickle.gz", 5]),
        "cells[2] oom_snapshots[1] must be a name inside the folder, not 5",
    ),
    (
        "an OOM snapshot of null",
        _cell("oom_snapshots", [None]),
        "cells[2] oom_snapshots[0] must be a name inside the folder, not null",
    ),
    ("a fractional index", _cell("index", 1.5), "cells[2] index must be an integer, not 1.5"),
    ("a quoted index", _cell("index", "2"), 'cells[2] index must be an integer, not "2"'),
    ("an index past 2^53", _cell("index", 2**70), "cells[2] index must be an integer, not a number beyond 2^53"),
    ("an index of true", _cell("index", True), "cells[2] index must be an integer, not true"),
    (
        "a negative count",
        _cell("execution_count", -1),
        "cells[2] execution_count must be a whole number or null, not -1",
    ),
    (
        "a count of text",
        _cell("execution_count", "3"),
        'cells[2] execution_count must be a whole number or null, not "3"',
    ),
    ("a source of 42", _cell("source", 42), "cells[2] source must be a string or a list of lines, not 42"),
    ("lines of numbers", _cell("source", [1, 2]), "cells[2] source must be a string or a list of lines, not a list"),
    ("a label of 4", _cell("label", 4), "cells[2] label must be text, not 4"),
    ("an error list", _cell("error", ["x"]), "cells[2] error must be the error's text or null, not a list"),
    ("a kernel of text", _cell("kernel_session", "one"), 'cells[2] kernel_session must be an integer, not "one"'),
    ("roles of text", _cell("roles", "x"), 'cells[2] roles must be an object, not "x"'),
    ("roles without bytes", _cell("roles", {"partial": False}), "cells[2] roles has no bytes"),
    ("roles of null bytes", _roles(bytes=None), "cells[2] roles has no bytes"),
    ("bytes in a list", _roles(bytes=[4096]), "cells[2] roles bytes must be an object, not a list"),
    ("an unknown role", _roles(bytes={"weights": 1}), 'cells[2] roles bytes must name only roles, not "weights"'),
    # JavaScript lists an object's integer keys first: the replay takes them in that order too.
    (
        "an integer role after an unknown one",
        _roles(bytes={"weights": 1, "7": 2}),
        'cells[2] roles bytes must name only roles, not "7"',
    ),
    (
        "a role of the wrong case",
        _roles(bytes={"user": 1, "Parameter": 2}),
        'cells[2] roles bytes must name only roles, not "Parameter"',
    ),
    (
        "negative role bytes",
        _roles(bytes={"parameter": -1}),
        "cells[2] roles bytes parameter must be a whole number of bytes, not -1",
    ),
    (
        "role bytes of text",
        _roles(bytes={"gradient": 0, "user": "5"}),
        'cells[2] roles bytes user must be a whole number of bytes, not "5"',
    ),
    (
        "role bytes of null",
        _roles(bytes={"activation": None}),
        "cells[2] roles bytes activation must be a whole number of bytes, not null",
    ),
    ("a partial of text", _roles(partial="no"), 'cells[2] roles partial must be true or false, not "no"'),
    ("an elapsed time of text", _roles(elapsed_ms="1ms"), 'cells[2] roles elapsed_ms must be a number, not "1ms"'),
    (
        "a roles file above",
        _cell("roles_file", "../cell02.roles.json"),
        'cells[2] roles_file must be a name inside the folder, not "../cell02.roles.json"',
    ),
    (
        "an absolute roles file",
        _cell("roles_file", "/etc/passwd"),
        'cells[2] roles_file must be a name inside the folder, not "/etc/passwd"',
    ),
    ("a roles file of 5", _cell("roles_file", 5), "cells[2] roles_file must be a name inside the folder, not 5"),
    ("an empty roles file", _cell("roles_file", ""), 'cells[2] roles_file must be a name inside the folder, not ""'),
    ("a history of text", _cell("history", "x"), 'cells[2] history must be an object, not "x"'),
    ("an empty history", _cell("history", {}), "cells[2] history has no since_us"),
    (
        "a history time of text",
        _cell("history", {"since_us": "yesterday", "until_us": 1, "complete": True}),
        'cells[2] history since_us must be a number or null, not "yesterday"',
    ),
    (
        "a history half done",
        _cell("history", {"since_us": None, "until_us": 1, "complete": "yes"}),
        'cells[2] history complete must be true or false, not "yes"',
    ),
    ("stats of text", _cell("before", "x"), 'cells[2] before must be an object, not "x"'),
    (
        "a negative peak",
        _stats("after", "peak_allocated", -5),
        "cells[2] after peak_allocated must be a whole number of bytes, not -5",
    ),
    (
        "half a byte",
        _stats("after", "allocated", 0.5),
        "cells[2] after allocated must be a whole number of bytes, not 0.5",
    ),
    (
        "a sliver of a byte",
        _stats("after", "reserved", 1e-7),
        "cells[2] after reserved must be a whole number of bytes, not a fraction near 0",
    ),
    (
        "bytes of text",
        _stats("before", "max_allocated", "x"),
        'cells[2] before max_allocated must be a whole number of bytes, not "x"',
    ),
    (
        "a peak flag of text",
        _stats("after", "peak_exact", "no"),
        'cells[2] after peak_exact must be true or false, not "no"',
    ),
    (
        "devices of text",
        _stats("before", "per_device", "x"),
        'cells[2] before per_device must be a list of objects, not "x"',
    ),
    ("a device of 5", _stats("before", "per_device", [5]), "cells[2] before per_device[0] must be an object, not 5"),
    (
        "a device number of text",
        _device("device", "x"),
        'cells[2] after per_device[0] device must be a whole number, not "x"',
    ),
    (
        "negative device bytes",
        _device("allocated", -1),
        "cells[2] after per_device[0] allocated must be a whole number of bytes, not -1",
    ),
]


def _refusals(folder):
    """What the CLI (`cuda-memdiff session`) and the replay say about ``folder``, each after its folder prefix."""
    run = subprocess.run(["node", str(CLI), "session", str(folder)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == "", (run.returncode, run.stdout[:300], run.stderr)
    cli_prefix = f"cuda-memdiff: {folder}{os.sep}"
    assert run.stderr.startswith(cli_prefix) and run.stderr.count("\n") == 1, run.stderr
    with pytest.raises(ReplayError) as refused:
        ReplaySource(str(folder))
    replay = str(refused.value)
    assert replay.startswith(f"{folder}: "), replay
    return run.stderr[len(cli_prefix) :].rstrip("\n"), replay[len(f"{folder}: ") :]


@pytest.mark.parametrize("what, change, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_hostile_manifest_is_refused_by_both_in_the_same_words(tmp_path, what, change, words):
    manifest = json.loads((RECORDING / "manifest.json").read_text())
    changed = copy.deepcopy(manifest)
    changed = change(changed) or changed  # a change of the whole file gives the new one
    # Only the manifest: both refuse it before reading a snapshot.
    (tmp_path / "manifest.json").write_text(json.dumps(changed))
    assert _refusals(tmp_path) == (f"manifest.json {words}",) * 2


@pytest.mark.parametrize("text", ['{"cells": [NaN]}', '{"cells": [{"snapshot_file": "a"}', '{"cells": Infinity}'])
def test_text_that_is_no_json_is_refused_by_both(tmp_path, text):
    # The reason in brackets is each language's parser's own.
    (tmp_path / "manifest.json").write_text(text)
    cli, replay = _refusals(tmp_path)
    assert cli.startswith("manifest.json is not valid JSON (") and replay.startswith(
        "manifest.json is not valid JSON ("
    )


def _engine_reads(paths):
    """The engine's reading of each manifest file, as the CLI reads one (bytes through TextDecoder)."""
    script = (
        "const fs = require('fs'); const { readManifest } = require(process.argv[1]);\n"
        "const read = JSON.parse(fs.readFileSync(0, 'utf-8')).map(file =>\n"
        "  readManifest(new TextDecoder().decode(fs.readFileSync(file))));\n"
        "process.stdout.write(JSON.stringify(read));\n"
    )
    run = subprocess.run(
        ["node", "-e", script, str(ENGINE)], input=json.dumps([str(p) for p in paths]), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


# Manifests both take, each read alike: what null, '' and absence mean, nbformat's lines, JSON's 2.0, the bytes.
TAKEN = {
    "lines": lambda m: m["cells"][2].update(source=["x = 1\n", "y = 2"]),
    "nulls": lambda m: m["cells"][2].update(
        error=None,
        holders_file=None,
        history=None,
        before=None,
        kernel_session=None,
        label=None,
        oom_snapshots=None,
        roles=None,
        roles_file=None,
    ),
    "roles": lambda m: m["cells"][2].update(
        roles={"bytes": {"user": 0, "parameter": 4096.0}, "reused": True, "partial": None}, roles_file="r.json"
    ),
    "absent": lambda m: [m["cells"][2].pop(k) for k in ("index", "execution_count", "source", "error", "before")],
    "empty label": lambda m: m["cells"][2].update(label=""),
    "history": lambda m: m["cells"][2].update(history={"since_us": None, "until_us": 12.5, "complete": False}),
    "whole floats": lambda m: m["cells"][2]["after"].update(allocated=1024.0, peak_exact=False),
}


def test_the_manifests_both_take_read_the_same(tmp_path):
    manifest = json.loads((RECORDING / "manifest.json").read_text())
    paths = sorted((ROOT / "test-data").glob("**/manifest.json"))
    for name, change in TAKEN.items():
        changed = copy.deepcopy(manifest)
        change(changed)
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(changed))
    # TextDecoder's reading: a BOM dropped, a byte that is no UTF-8 replaced.
    text = json.dumps(manifest).replace('"source": "', '"source": "\udcff', 1).encode("utf-8", "surrogateescape")
    paths.append(tmp_path / "bytes.json")
    paths[-1].write_bytes(b"\xef\xbb\xbf" + text)
    engine = _engine_reads(paths)
    for path, read in zip(paths, engine):
        assert read_manifest(path.read_bytes()) == read, path.name
    taken = dict(zip([p.stem for p in paths[-len(TAKEN) - 1 :]], engine[-len(TAKEN) - 1 :]))
    assert taken["lines"]["cells"][2]["source"] == "x = 1\ny = 2"
    assert "label" not in taken["nulls"]["cells"][2] and taken["nulls"]["cells"][2]["error"] is None
    absent = taken["absent"]["cells"][2]
    assert (absent["index"], absent["execution_count"], absent["source"], "error" in absent) == (2, None, "", False)
    assert "label" not in taken["empty label"]["cells"][2]
    assert "roles" not in taken["nulls"]["cells"][2] and "roles_file" not in taken["nulls"]["cells"][2]
    assert taken["roles"]["cells"][2]["roles"] == {"bytes": {"user": 0, "parameter": 4096}, "reused": True}
    assert taken["bytes"]["cells"][0]["source"].startswith("\ufffd")
