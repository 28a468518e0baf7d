#!/usr/bin/env bash
# Sets up a development checkout from nothing but Python 3, Node.js 20 and npm:
# a virtualenv in .venv with JupyterLab, ipykernel and torch, the npm packages
# from package-lock.json, the built extension, installed in development mode.
# Safe to run again: each step is quick when its work is done.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in python3 node npm; do
  command -v "$tool" >/dev/null || { echo "setup: $tool is required but not installed" >&2; exit 1; }
done

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements-dev.txt
export PATH="$PWD/.venv/bin:$PATH"
[ -d .venv/share/jupyter/kernels/bash ] || python -m bash_kernel.install --sys-prefix >/dev/null

npm ci --no-audit --no-fund
npm run build
# Editable install plus a link into the venv's labextensions: `npm run build`
# is then all a change to src/ needs before reloading JupyterLab.
python -m pip install -q --no-build-isolation -e .
# The kernel helper, importable in the venv's kernels (%load_ext cuda_memdiff_kernel) and by pytest.
python -m pip install -q --no-build-isolation -e ./kernel-helpers
jupyter labextension develop --overwrite . >/dev/null
jupyter labextension list 2>&1 | grep -q 'jupyterlab-cuda-memdiff .*enabled.*OK' || {
  echo "setup: the extension is not enabled and OK in JupyterLab" >&2
  jupyter labextension list >&2
  exit 1
}
echo "setup: done (virtualenv .venv, extension built and enabled)"
