"""docker/: no Docker engine runs here, so the compose file is checked statically (YAML, image, ports, health)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

DOCKER = Path(__file__).resolve().parent.parent / "docker"


def test_compose_file_passes_its_static_check():
    out = subprocess.run([sys.executable, str(DOCKER / "check_compose.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_compose_publishes_only_loopback_and_mounts_init_sql():
    svc = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())["services"]["oceanbase"]
    assert svc["image"].startswith("${OB_IMAGE:-oceanbase/oceanbase-ce:4.3.5")
    assert all(p.startswith("${OB_BIND:-127.0.0.1}") for p in svc["ports"])
    assert "./init.d:/root/boot/init.d:ro" in svc["volumes"]
    assert "CREATE DATABASE IF NOT EXISTS adk" in (DOCKER / "init.d" / "01-adk.sql").read_text()
