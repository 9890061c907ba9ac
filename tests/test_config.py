"""Config parsing, redaction and the public surface (pure: no database)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adk_oceanbase import Config, ConfigurationError


def test_url_forms():
    emb = Config.from_url("seekdb:///var/lib/adk")
    assert emb.flavor == "seekdb" and emb.db_dir == Path("/var/lib/adk") and emb.is_oceanbase
    rel = Config.from_url("seekdb://data/dir")
    assert rel.db_dir == (Path.cwd() / "data" / "dir").resolve()
    ob = Config.from_url("oceanbase://root%40sys:p%40ss@10.0.0.1:2881/adk?charset=utf8mb4")
    assert (ob.flavor, ob.user, ob.password, ob.host, ob.port, ob.database) == ("oceanbase", "root@sys", "p@ss", "10.0.0.1", 2881, "adk")
    assert ob.query == {"charset": "utf8mb4"}
    my = Config.from_url("mysql+aiomysql://u:pw@db/app")
    assert (my.flavor, my.port, my.is_oceanbase) == ("mysql", 3306, False)
    assert Config.from_url("oceanbase://h").port == 2881


def test_default_home_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ADK_OCEANBASE_URL", raising=False)
    monkeypatch.setenv("ADK_OCEANBASE_HOME", str(tmp_path))
    assert Config.from_env().db_dir == tmp_path / "seekdb"
    env = {"ADK_OCEANBASE_URL": "oceanbase://root@h:1/x", "ADK_OCEANBASE_POOL_SIZE": "3", "ADK_OCEANBASE_QUERY_TIMEOUT_S": "5.5"}
    cfg = Config.from_env(env)
    assert cfg.host == "h" and cfg.pool_size == 3 and cfg.query_timeout_s == 5.5
    with pytest.raises(ConfigurationError):
        Config.from_env({"ADK_OCEANBASE_POOL_SIZE": "many"})


@pytest.mark.parametrize(
    "bad",
    ["postgres://x/y", "seekdb://", "oceanbase:///nohost", "oceanbase://h:notaport/x", "oceanbase://root@test#obcluster:pw@h/adk"],
)
def test_bad_urls_raise(bad):
    with pytest.raises(ConfigurationError):
        Config.from_url(bad)


def test_password_never_in_repr():
    cfg = Config.from_url("oceanbase://root:topsecret@h:2881/db")
    assert "topsecret" not in repr(cfg) and "topsecret" not in cfg.redacted_url()
    assert "***" in cfg.redacted_url()


def test_import_has_no_side_effects():
    """Importing the package connects to nothing and starts no seekdb (checked in a clean interpreter)."""
    code = (
        "import sys, adk_oceanbase, threading;"
        "assert 'pylibseekdb' not in sys.modules, 'seekdb imported';"
        "assert 'adk_oceanbase.memory' not in sys.modules;"
        "assert threading.active_count() == 1, threading.enumerate();"
        "print(sorted(adk_oceanbase.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "OceanBaseSessionService" in out and "upgrade" in out


def test_adk_service_registry_schemes():
    from google.adk.cli.service_registry import ServiceRegistry

    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.adk_services import register

    registry = ServiceRegistry()
    register(registry)
    svc = registry.create_session_service("seekdb:///tmp/adk-registry-test", agents_dir="/tmp")
    assert isinstance(svc, OceanBaseSessionService)
    assert svc.config.flavor == "seekdb"
    svc2 = registry.create_session_service("oceanbase://root@127.0.0.1:2881/adk")
    assert svc2.config.database == "adk"


def test_batch_statements_url_option():
    assert Config.from_url("oceanbase://root@h:1/db").batch_statements is True
    cfg = Config.from_url("oceanbase://root@h:1/db?batch_statements=false&charset=utf8mb4")
    assert cfg.batch_statements is False and dict(cfg.query) == {"charset": "utf8mb4"}
    with pytest.raises(ConfigurationError):
        Config.from_url("oceanbase://root@h:1/db?batch_statements=maybe")
