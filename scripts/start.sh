#!/usr/bin/env bash
# One command for users: set everything up, then open JupyterLab with the
# extension on the demo notebook. With a CUDA GPU the demo captures live
# snapshots; without one, its kernel replays the demo's session recorded on an
# NVIDIA H200 (CUDA_MEMDIFF_REPLAY), so the badges show real GPU figures.
# Extra arguments go to `jupyter lab`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if ! .venv/bin/python -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  export CUDA_MEMDIFF_REPLAY="$PWD/test-data/recordings/gpu_memory_demo--python"
  echo "start: no CUDA GPU here, so the demo replays a session recorded on an NVIDIA H200"
fi
extra=()
if [ "$(id -u)" = 0 ]; then
  extra+=(--allow-root)
fi
exec .venv/bin/jupyter lab demo/gpu_memory_demo.ipynb "${extra[@]}" "$@"
