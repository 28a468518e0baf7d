#!/usr/bin/env bash
# One command for users: set everything up, then open JupyterLab with the
# extension on the demo notebook. Extra arguments go to `jupyter lab`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
extra=()
if [ "$(id -u)" = 0 ]; then
  extra+=(--allow-root)
fi
exec .venv/bin/jupyter lab demo/gpu_memory_demo.ipynb "${extra[@]}" "$@"
