#!/usr/bin/env bash
# One command for users: set everything up, then open JupyterLab with the
# extension on the demo notebook. Extra arguments go to `jupyter lab`.
#
# The demo runs on a copy in .demo-work/ (git-ignored), the server's root
# folder, so its autosaves and exports stay out of the repository. The copy is
# made once: your edits there survive the next start (delete .demo-work/ to
# begin again from demo/).
#
# With a CUDA GPU the demo's kernel is the ordinary python3 one and captures
# live snapshots. Without one, the demo opens with the kernel "Python 3
# (replaying an H200 session)" from demo/jupyter-path, which replays the
# demo's session recorded on an NVIDIA H200, so its badges show real GPU
# figures; every other notebook keeps the ordinary python3 kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

root=$PWD
work=$root/.demo-work
if .venv/bin/python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  kernel=python3
else
  kernel=cuda-memdiff-replay
  export JUPYTER_PATH="$root/demo/jupyter-path${JUPYTER_PATH:+:$JUPYTER_PATH}"
  echo "start: no CUDA GPU here, so the demo replays a session recorded on an NVIDIA H200"
fi

# Copy each demo notebook that .demo-work/ lacks, with this machine's demo
# kernel. A copy already there is left as it is, except that it follows a move
# between the two demo kernels (a GPU appeared or went away).
.venv/bin/python - "$root/demo" "$work" "$kernel" <<'EOF'
import json, pathlib, sys

demo, work, kernel = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
replay = json.loads((demo / "jupyter-path/kernels/cuda-memdiff-replay/kernel.json").read_text(encoding="utf-8"))
specs = {
    "python3": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "cuda-memdiff-replay": {"display_name": replay["display_name"], "language": "python", "name": "cuda-memdiff-replay"},
}
work.mkdir(exist_ok=True)
for original in sorted(demo.glob("*.ipynb")):
    copy = work / original.name
    kept = copy.exists()
    nb = json.loads((copy if kept else original).read_text(encoding="utf-8"))
    was = nb["metadata"].get("kernelspec", {}).get("name")
    if kept and (was == kernel or was not in specs):
        continue
    nb["metadata"]["kernelspec"] = specs[kernel]
    # What the kernel reports on start; JupyterLab writes it into the notebook
    # (marking it modified) unless it is there already.
    from ipykernel.ipkernel import IPythonKernel  # here: the import takes a moment

    nb["metadata"]["language_info"] = IPythonKernel.language_info
    # The layout nbformat writes, so that JupyterLab's first save changes nothing.
    copy.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    what = f"kernel of {copy} set to" if kept else f"{original.name} copied to {work}/ with kernel"
    print(f"start: {what} {specs[kernel]['display_name']}")
EOF

# Snapshot files to open from the file browser (the server's root is .demo-work/, so test-data/ is out of
# its reach): a training session's file with its allocation history, and one written at an out-of-memory error.
mkdir -p "$work/snapshots"
for pair in clean_training--python/cell04.pickle.gz:training_history.pickle.gz oom--python/oom00.pickle.gz:out_of_memory.pickle.gz; do
  if [ ! -e "$work/snapshots/${pair#*:}" ]; then
    cp "$root/test-data/recordings/${pair%%:*}" "$work/snapshots/${pair#*:}"
  fi
done
echo "start: snapshot files to open are in $work/snapshots/ (double-click them in the file browser)"
echo "start: the demo notebook is at /lab/tree/gpu_memory_demo.ipynb on the server's address (printed below)"

extra=()
if [ "$(id -u)" = 0 ]; then
  extra+=(--allow-root)
fi
cd "$work"
# The demo's layout is kept beside it: the workspaces of your other JupyterLab sessions are not restored into
# it, and it does not change them.
exec "$root/.venv/bin/jupyter" lab gpu_memory_demo.ipynb --LabApp.workspaces_dir="$work/.workspaces" "${extra[@]}" "$@"
