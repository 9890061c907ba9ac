#!/usr/bin/env bash
# Installs everything the test suite needs into .venv and runs it: the README's test command.
#
# - Python deps: torch 2.13.0 first (a CPU wheel this machine kind carries; any other torch
#   would pull a multi-GB CUDA build), then the package with its test and embedding extras.
# - MariaDB (the MySQL path): Debian's mariadb-server-core, installed when missing and root.
# - seekdb needs nothing: tests start the server binary shipped in the pylibseekdb wheel.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server-core mariadb-client-core >/dev/null
  else
    echo "note: MariaDB not installed and not root: MySQL-path tests will be skipped" >&2
  fi
fi

python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
pip install -q torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
pip install -q -e '.[test,embeddings]' 2>&1 | grep -v "^WARNING: Location" || true
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python -m pytest -q -p no:cacheprovider "$@"
