#!/usr/bin/env bash
# Installs everything the test suite needs into .venv and runs it: the README's test command.
#
# - Python deps: torch 2.13.0 first (a CPU wheel this machine kind carries; any other torch
#   would pull a multi-GB CUDA build), then the package with its test and embedding extras.
# - MariaDB (the MySQL path): Debian's mariadb-server-core, installed when missing and root.
# - seekdb needs nothing: tests start the server binary shipped in the pylibseekdb wheel.
#
# A failed install fails the script (pip's status is kept through the filter below), and
# pytest runs with -rs so every skip is listed; under CI=true a skipped engine or model
# test fails the run (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs a quiet pip command without its "WARNING: Location" noise, returning pip's own status.
pip_quiet() {
  local status=0
  "$@" 2>&1 | { grep -v "^WARNING: Location" || true; } || status=$?
  return "$status"
}

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server-core mariadb-client-core >/dev/null
  else
    echo "WARNING: MariaDB not installed and not root: the MySQL-path tests will be SKIPPED" \
         "(install mariadb-server-core mariadb-client-core as root; under CI=true they fail)" >&2
  fi
fi

python3 -m venv .venv
. .venv/bin/activate
pip_quiet python -m pip install -q --upgrade pip
pip_quiet pip install -q torch==2.13.0
pip_quiet pip install -q -e '.[test,embeddings]'
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m pytest -q -rs -p no:cacheprovider "$@"
