"""Give a session folder recorded by test_live_history.py the cell names ipykernel gives.

The GPU machine has no ipykernel, so the test names each cell's code
`/tmp/ipykernel_<pid>/<crc32 of the source>.py`; ipykernel (and the frontend,
src/engine/cells.ts) name it by the source's murmur2. This rewrites the names
in the folder's pickles and messages so the frontend finds the cells, as it
does in Jupyter. The murmur2 comes from the built engine (lib/), run by Node:

    python3 test-data/live/rename_cells.py test-data/live/history--python
"""

import gzip
import json
import pathlib
import pickle
import re
import subprocess
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def murmur2(sources):
    script = (
        "const c = require(process.argv[1]);"
        "process.stdout.write(JSON.stringify(JSON.parse(process.argv[2]).map(s => c.murmur2(s))))"
    )
    out = subprocess.run(
        ["node", "-e", script, str(ROOT / "lib" / "engine" / "cells.js"), json.dumps(sources)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def rename(text, names):
    return re.sub(
        r"(/ipykernel_\d+/)(\d+)(\.py)", lambda m: m.group(1) + names.get(m.group(2), m.group(2)) + m.group(3), text
    )


def rename_frames(obj, names):
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "filename" and isinstance(value, str):
                obj[key] = rename(value, names)
            else:
                rename_frames(value, names)
    elif isinstance(obj, list):
        for item in obj:
            rename_frames(item, names)


def main(folder):
    folder = pathlib.Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    sources = [cell["source"] for cell in manifest["cells"]]
    names = {str(zlib.crc32(s.encode())): str(m) for s, m in zip(sources, murmur2(sources))}
    for cell in manifest["cells"]:
        path = folder / cell["snapshot_file"]
        with gzip.open(path, "rb") as f:
            snapshot = pickle.load(f)
        rename_frames(snapshot, names)
        with gzip.open(path, "wb") as f:
            pickle.dump(snapshot, f, protocol=4)
    messages = folder / "messages.jsonl.gz"
    if messages.exists():
        with gzip.open(messages, "rt", encoding="utf-8") as f:
            text = f.read()
        with gzip.open(messages, "wt", encoding="utf-8") as f:
            f.write(rename(text, names))
    print(f"renamed {len(names)} cell codes in {folder}")


if __name__ == "__main__":
    main(sys.argv[1])
