"""Config parsing, redaction and the public surface (pure: no database)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adk_oceanbase import Config, ConfigurationError
from adk_oceanbase.dialects import dialect_for_config


def test_url_forms():
    emb = Config.from_url("seekdb:///var/lib/adk")
    assert emb.flavor == "seekdb" and emb.db_dir == Path("/var/lib/adk")
    rel = Config.from_url("seekdb://data/dir")
    assert rel.db_dir == (Path.cwd() / "data" / "dir").resolve()
    ob = Config.from_url("oceanbase://root%40sys:p%40ss@10.0.0.1:2881/adk?charset=utf8mb4")
    assert (ob.flavor, ob.user, ob.password, ob.host, ob.port, ob.database) == ("oceanbase", "root@sys", "p@ss", "10.0.0.1", 2881, "adk")
    assert ob.query == {"charset": "utf8mb4"}
    my = Config.from_url("mysql+aiomysql://u:pw@db/app")
    assert (my.flavor, my.port) == ("mysql", 3306)
    assert Config.from_url("oceanbase://h").port == 2881


def test_the_url_names_the_engine_family_through_the_dialect():
    """Engine identity before connecting comes from the dialect seam, not from ``Config``."""
    assert not hasattr(Config, "is_oceanbase")
    family = {url: dialect_for_config(Config.from_url(url)) for url in (
        "seekdb:///var/lib/adk", "oceanbase://root@h:2881/adk", "mysql+aiomysql://u:pw@db/app", "mariadb://u@db/app")}
    assert {url: (d.name, d.db_system, d.native_vectors) for url, d in family.items()} == {
        "seekdb:///var/lib/adk": ("oceanbase", "oceanbase", True),
        "oceanbase://root@h:2881/adk": ("oceanbase", "oceanbase", True),
        "mysql+aiomysql://u:pw@db/app": ("mysql", "mysql", False),
        "mariadb://u@db/app": ("mysql", "mysql", False),
    }


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


def test_url_query_options_set_config_fields():
    """``?pool_size=3`` used to reach aiomysql.connect and fail there with a bare TypeError."""
    cfg = Config.from_url("oceanbase://root@h:1/db?pool_size=3&query_timeout_s=2.5&ssl_ca=/ca.pem&charset=utf8mb4")
    assert (cfg.pool_size, cfg.query_timeout_s) == (3, 2.5)
    assert dict(cfg.query) == {"ssl_ca": "/ca.pem", "charset": "utf8mb4"}  # driver options pass through
    assert Config.from_url("seekdb:///tmp/x?max_overflow=0&embedding_dim=768").embedding_dim == 768


@pytest.mark.parametrize(
    "url, words",
    [
        ("oceanbase://root@h:1/db?pool_sze=3", ["'pool_sze'", "pool_size", "ssl_ca"]),
        ("oceanbase://root@h:1/db?pool_size=three", ["pool_size", "integer", "'three'"]),
        ("oceanbase://root@h:1/db?pool_size=0", ["pool_size", "at least 1"]),
        ("oceanbase://root@h:1/db?query_timeout_s=soon", ["query_timeout_s", "number"]),
    ],
)
def test_bad_url_options_name_the_option(url, words):
    with pytest.raises(ConfigurationError) as err:
        Config.from_url(url)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_precedence_keywords_then_url_then_environment():
    env = {"ADK_OCEANBASE_POOL_SIZE": "4", "ADK_OCEANBASE_MAX_OVERFLOW": "7", "ADK_OCEANBASE_BATCH_STATEMENTS": "off"}
    cfg = Config.from_url("seekdb:///tmp/x?pool_size=5", environ=env)
    assert (cfg.pool_size, cfg.max_overflow, cfg.batch_statements) == (5, 7, False)
    assert Config.from_url("seekdb:///tmp/x?pool_size=5", environ=env, pool_size=6).pool_size == 6
    assert Config.from_env({**env, "ADK_OCEANBASE_URL": "oceanbase://root@h:1/db"}).max_overflow == 7
    with pytest.raises(ConfigurationError, match="pool_sze"):
        Config.from_url("seekdb:///tmp/x", pool_sze=3)


def test_environment_applies_when_a_url_is_given(monkeypatch):
    """``adk web`` always passes a URL; ADK_OCEANBASE_* used to be ignored then."""
    from adk_oceanbase import OceanBaseSessionService

    monkeypatch.setenv("ADK_OCEANBASE_POOL_SIZE", "3")
    monkeypatch.setenv("ADK_OCEANBASE_QUERY_TIMEOUT_S", "9")
    svc = OceanBaseSessionService("oceanbase://root@127.0.0.1:1/db")
    assert (svc.config.pool_size, svc.config.query_timeout_s) == (3, 9.0)
    monkeypatch.setenv("ADK_OCEANBASE_POOL_SIZE", "lots")
    with pytest.raises(ConfigurationError, match="ADK_OCEANBASE_POOL_SIZE"):
        OceanBaseSessionService("oceanbase://root@127.0.0.1:1/db")


def test_misspelled_service_arguments_are_refused():
    """``**_`` in the constructor used to swallow them."""
    from adk_oceanbase import OceanBaseSessionService

    with pytest.raises(TypeError, match="auto_setpu"):
        OceanBaseSessionService("seekdb:///tmp/x", auto_setpu=False)


def test_adk_options_reach_our_services_through_adks_own_factory(tmp_path):
    """ADK's ``create_*_service_from_options`` (what ``adk web`` calls) with our registered schemes."""
    from google.adk.cli.utils.service_factory import (
        create_memory_service_from_options,
        create_session_service_from_options,
    )

    from adk_oceanbase import OceanBaseMemoryService, OceanBaseSessionService
    from adk_oceanbase.adk_services import register

    register()
    url = f"seekdb://{tmp_path}/db?query_timeout_s=7"
    svc = create_session_service_from_options(
        base_dir=tmp_path, session_service_uri=url, session_db_kwargs={"pool_size": 2, "compaction_overlap": 3}
    )
    assert isinstance(svc, OceanBaseSessionService)
    assert (svc.config.pool_size, svc.config.query_timeout_s, svc._overlap) == (2, 7.0, 3)
    mem = create_memory_service_from_options(base_dir=tmp_path, memory_service_uri=url)
    assert isinstance(mem, OceanBaseMemoryService) and mem.config.db_dir == tmp_path / "db"
    with pytest.raises(ConfigurationError, match="'isolation_level'"):  # echo, pool_pre_ping: tests/test_adk_services.py
        create_session_service_from_options(
            base_dir=tmp_path, session_service_uri=url, session_db_kwargs={"isolation_level": "SERIALIZABLE"}
        )
