#!/usr/bin/env bash
# One command for every test, from a fresh checkout: sets up (scripts/setup.sh),
# installs Debian's Chromium for the browser tests when it is missing, then runs
# the linters (npm run lint:check), jest (engine, CLI), pytest (Python
# packages) and Galata (a real JupyterLab and ipykernel driven in Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

if ! command -v chromium >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

# Keep Jupyter's, IPython's and Chromium's state out of the home folder.
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
export JUPYTER_CONFIG_DIR="$state/config" JUPYTER_RUNTIME_DIR="$state/runtime" \
  IPYTHONDIR="$state/ipython" XDG_CONFIG_HOME="$state/xdg-config" XDG_CACHE_HOME="$state/xdg-cache"

# Lint before the tests: ESLint (with the TypeScript and React rules), Prettier,
# stylelint and ruff, all read-only here (`npm run lint` fixes what they can).
echo "== lint: ESLint, Prettier, stylelint, ruff"
npm run lint:check

echo "== jest: engine and CLI"
npm test

echo "== pytest: Python packages"
python -m pytest -q tests kernel-helpers

echo "== Galata: JupyterLab in Chromium"
(cd ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund && CI=true npx playwright test)
