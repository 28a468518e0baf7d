#!/usr/bin/env bash
# Sets up a development checkout from nothing but Python 3, Node.js 20 and npm:
# a virtualenv in .venv with JupyterLab, ipykernel and torch, the npm packages
# from package-lock.json, the built extension, installed in development mode.
#
# Safe and quick to run again: each step leaves a stamp (the hash of its
# inputs) inside what it made, and is skipped while its inputs and outputs are
# unchanged. A fresh clone has no stamps, so every step runs; deleting .venv,
# node_modules or lib/ (npm run clean) makes its steps run again.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in python3 node npm; do
  command -v "$tool" >/dev/null || { echo "setup: $tool is required but not installed" >&2; exit 1; }
done

# fingerprint PATH...: one hash of the named files and of every file under the
# named folders (caches and the files the build generates left out: they would
# change the fingerprint of the step that writes them).
fingerprint() {
  python3 - "$@" <<'EOF'
import hashlib, os, sys

SKIP = {
    "__pycache__",
    ".pytest_cache",
    ".ipynb_checkpoints",
    "helper.generated.json",
    "protocol.generated.ts",
    "manifest.generated.ts",
}
total = hashlib.sha256()

def add(path):
    with open(path, "rb") as f:
        total.update(path.encode() + b"\0" + hashlib.sha256(f.read()).digest())

for top in sys.argv[1:]:
    if os.path.isfile(top):
        add(top)
        continue
    if not os.path.isdir(top):
        total.update(b"missing:" + top.encode())
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name not in SKIP:
                add(os.path.join(folder, name))
print(total.hexdigest())
EOF
}

# current STAMP INPUTS: true when the step that writes STAMP last finished on these inputs.
current() {
  [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]
}

changed=false

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
export PATH="$PWD/.venv/bin:$PATH"

stamp=.venv/.setup-requirements
inputs="$(python --version 2>&1) $(fingerprint requirements-dev.txt)"
if current "$stamp" "$inputs"; then
  echo "setup: Python packages already match requirements-dev.txt"
else
  python -m pip install -q --upgrade pip
  python -m pip install -q -r requirements-dev.txt
  echo "$inputs" >"$stamp"
  changed=true
fi
# The browser tests' Bash kernel (a kernel that is not Python) is theirs alone, in ui-tests/jupyter-path; one
# that an earlier setup put in .venv would be offered, even preselected, for a new notebook in the demo.
rm -rf .venv/share/jupyter/kernels/bash

# npm ci empties node_modules first, so the stamp inside it goes with it.
stamp=node_modules/.setup-package-lock
inputs="node $(node --version) $(fingerprint package-lock.json)"
if current "$stamp" "$inputs"; then
  echo "setup: node_modules already matches package-lock.json"
else
  npm ci --no-audit --no-fund
  echo "$inputs" >"$stamp"
  changed=true
fi

# The build's inputs: the frontend, the kernel helper embedded into it, and
# the build's own configuration and packages (the stamp above).
stamp=lib/.setup-build
inputs="$(fingerprint src style schema kernel-helpers/cuda_memdiff_kernel scripts/embed-helper.js \
  package.json tsconfig.json tsconfig.node.json node_modules/.setup-package-lock)"
# The generated files are outputs too: the fingerprint leaves them out, so one deleted alone is seen here.
outputs=(lib/index.js dist/node/cli/main.js src/capture/helper.generated.json src/engine/protocol.generated.ts
  src/engine/manifest.generated.ts jupyterlab_cuda_memdiff/labextension/package.json)
built=true
for output in "${outputs[@]}"; do
  [ -f "$output" ] || built=false
done
if $built && current "$stamp" "$inputs"; then
  echo "setup: the extension is already built from these sources"
else
  npm run build
  echo "$inputs" >"$stamp"
  changed=true
fi

# Editable installs: `npm run build` is then all a change to src/ needs before
# reloading JupyterLab. The version and metadata come from package.json.
# SKIP_JUPYTER_BUILDER: the build above is current, so pip need not run it again.
stamp=.venv/.setup-editable
inputs="$(fingerprint pyproject.toml package.json kernel-helpers/pyproject.toml)"
if current "$stamp" "$inputs"; then
  echo "setup: the extension and the kernel helper are already installed in development mode"
else
  SKIP_JUPYTER_BUILDER=1 python -m pip install -q --no-build-isolation -e .
  # The kernel helper, importable in the venv's kernels (%load_ext cuda_memdiff_kernel) and by pytest.
  python -m pip install -q --no-build-isolation -e ./kernel-helpers
  echo "$inputs" >"$stamp"
  changed=true
fi

# The venv's labextensions entry links to the build output (what `jupyter labextension develop` made; it is
# deprecated now, and a link is all it did for a built extension).
link=.venv/share/jupyter/labextensions/jupyterlab-cuda-memdiff
if [ "$(readlink "$link" 2>/dev/null)" != "$PWD/jupyterlab_cuda_memdiff/labextension" ]; then
  mkdir -p "$(dirname "$link")"
  rm -rf "$link"
  ln -s "$PWD/jupyterlab_cuda_memdiff/labextension" "$link"
  changed=true
fi

# Ask JupyterLab itself after any change (it takes seconds, so not on a rerun that changed nothing).
if $changed; then
  jupyter labextension list 2>&1 | grep -q 'jupyterlab-cuda-memdiff .*enabled.*OK' || {
    echo "setup: the extension is not enabled and OK in JupyterLab" >&2
    jupyter labextension list >&2
    exit 1
  }
fi
echo "setup: done (virtualenv .venv, extension built and enabled)"
