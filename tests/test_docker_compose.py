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
    assert svc["image"] == "${OB_IMAGE:-oceanbase/oceanbase-ce:4.3.5.3-103000092025080818}"
    assert all(p.startswith("${OB_BIND:-127.0.0.1}") for p in svc["ports"])
    assert "./init.d:/root/boot/init.d:ro" in svc["volumes"]
    assert "CREATE DATABASE IF NOT EXISTS adk" in (DOCKER / "init.d" / "01-adk.sql").read_text()


def test_check_knows_the_version_gate_minimum():
    from adk_oceanbase.server_version import MINIMUMS

    spec = __import__("importlib.util").util.spec_from_file_location("check_compose", DOCKER / "check_compose.py")
    mod = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.MINIMUM == MINIMUMS["oceanbase"]


def test_odp_profile_service_and_tenant_login():
    doc = yaml.safe_load((DOCKER / "docker-compose.yml").read_text())
    odp, user = doc["services"]["obproxy"], doc["services"]["proxyro-user"]
    assert odp["profiles"] == ["odp"] == user["profiles"]
    assert odp["environment"]["RS_LIST"] == "172.28.0.10:2881"
    assert doc["services"]["oceanbase"]["networks"]["adk"]["ipv4_address"] == "172.28.0.10"
    assert odp["depends_on"]["proxyro-user"]["condition"] == "service_completed_successfully"
    assert "root%40test%23obcluster" in (DOCKER / "docker-compose.yml").read_text()
