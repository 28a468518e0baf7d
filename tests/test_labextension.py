"""The Python distribution ships the prebuilt labextension JupyterLab loads."""

import json
import pathlib
import subprocess
import sys

import jupyterlab_cuda_memdiff

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = json.loads((ROOT / "package.json").read_text())


def test_labextension_paths_point_at_a_built_extension():
    (path,) = jupyterlab_cuda_memdiff._jupyter_labextension_paths()
    assert path["dest"] == PACKAGE["name"]
    built = pathlib.Path(jupyterlab_cuda_memdiff.__file__).parent / path["src"]
    meta = json.loads((built / "package.json").read_text())
    assert meta["name"] == PACKAGE["name"]
    assert meta["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")
    assert (built / "schemas" / PACKAGE["name"] / "plugin.json").is_file()


def test_version_follows_package_json():
    assert jupyterlab_cuda_memdiff.__version__ == PACKAGE["version"]


def test_jupyterlab_lists_the_extension_enabled_and_ok():
    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in (out.stdout + out.stderr).splitlines() if PACKAGE["name"] + " v" in line]
    assert lines, out.stdout + out.stderr
    assert "enabled" in lines[0] and "OK" in lines[0], lines[0]
