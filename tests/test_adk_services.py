"""ADK's own ways of loading services reach ours: ``services.yaml``, ``services.py`` (``adk-init``), ``adk api_server``.

Every test goes through ADK's code (``load_services_module``,
``create_*_service_from_options``, the ``adk`` command), not our factories
alone.  The ``oceanbase://`` URL of the test seekdb server is used so no test
creates an embedded directory.  Issue 24.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from adk_oceanbase import ConfigurationError, OceanBaseMemoryService, OceanBaseSessionService
from adk_oceanbase.cli import main

APP = "adk_app"
AGENT = """from google.adk.agents import Agent

root_agent = Agent(name="adk_app", model="gemini-2.0-flash", instruction="Answer briefly.")
"""


def run_in_fresh_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """ADK imports ``services`` as a module once per process: each route is tried in a process of its own."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


LOAD_AND_CREATE = """
import asyncio, sys
from google.adk.cli.service_registry import load_services_module
from google.adk.cli.utils.service_factory import create_memory_service_from_options, create_session_service_from_options

agents_dir, url = sys.argv[1], sys.argv[2]
load_services_module(agents_dir)
svc = create_session_service_from_options(base_dir=agents_dir, session_service_uri=url)
mem = create_memory_service_from_options(base_dir=agents_dir, memory_service_uri=url)

async def main():
    s = await svc.create_session(app_name="adk_app", user_id="u1", state={"user:lang": "en"})
    got = await svc.get_session(app_name="adk_app", user_id="u1", session_id=s.id)
    print(type(svc).__name__, type(mem).__name__, got.state["user:lang"])
    await mem.close(); await svc.close()

asyncio.run(main())
"""


def test_services_yaml_with_our_classes(tmp_path, migrated_url):
    """ADK builds a services.yaml class as ``cls(uri=..., agents_dir=...)``: it used to fail on ``uri``."""
    (tmp_path / "services.yaml").write_text(
        "services:\n"
        "  - {scheme: oceanbase, type: session, class: adk_oceanbase.OceanBaseSessionService}\n"
        "  - {scheme: oceanbase, type: memory, class: adk_oceanbase.OceanBaseMemoryService}\n"
    )
    done = run_in_fresh_python(LOAD_AND_CREATE, str(tmp_path), migrated_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["OceanBaseSessionService", "OceanBaseMemoryService", "en"]


def test_adk_init_writes_a_services_py_that_adk_loads(tmp_path, migrated_url, capsys):
    assert main(["adk-init", str(tmp_path), "--url", migrated_url]) == 0
    out = capsys.readouterr()
    assert f"wrote {tmp_path / 'services.py'}" in out.err
    assert out.out.startswith("adk api_server --session_service_uri oceanbase://") and str(tmp_path) in out.out
    done = run_in_fresh_python(LOAD_AND_CREATE, str(tmp_path), migrated_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["OceanBaseSessionService", "OceanBaseMemoryService", "en"]

    assert main(["adk-init", str(tmp_path)]) == 0  # a second run changes nothing
    assert "already registers adk_oceanbase" in capsys.readouterr().err
    assert (tmp_path / "services.py").read_text().count("register()") == 1


def test_adk_init_keeps_an_existing_services_py(tmp_path, capsys):
    own = "from google.adk.cli.service_registry import get_service_registry\n# the user's own registrations\n"
    (tmp_path / "services.py").write_text(own)
    assert main(["adk-init", str(tmp_path)]) == 0
    text = (tmp_path / "services.py").read_text()
    assert text.startswith(own) and "from adk_oceanbase.adk_services import register\n\nregister()\n" in text
    assert main(["adk-init", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_database_session_service_keywords_are_accepted_or_mapped(tmp_path):
    """``session_db_kwargs`` written for ADK's DatabaseSessionService (SQLAlchemy engine keywords)."""
    from google.adk.cli.service_registry import ServiceRegistry
    from google.adk.cli.utils.service_factory import create_session_service_from_options

    from adk_oceanbase.adk_services import register

    register()
    url = "oceanbase://root@127.0.0.1:2881/adk"
    svc = create_session_service_from_options(
        base_dir=tmp_path, session_service_uri=url,
        session_db_kwargs={"pool_pre_ping": True, "echo": False, "pool_size": 3, "pool_recycle": 600,
                           "connect_args": {"connect_timeout": 5}, "future": True},
    )
    assert isinstance(svc, OceanBaseSessionService)
    assert (svc.config.pool_size, svc.config.pool_recycle, dict(svc.config.query)) == (3, 600, {"connect_timeout": "5"})
    for bad, named in (({"isolation_level": "SERIALIZABLE"}, "'isolation_level'"),
                       ({"connect_args": {"init_command": "SET x=1"}}, "'init_command'")):
        with pytest.raises(ConfigurationError, match=named):
            create_session_service_from_options(base_dir=tmp_path, session_service_uri=url, session_db_kwargs=bad)
    registry = ServiceRegistry()
    register(registry)
    mem = registry.create_memory_service(url, agents_dir=str(tmp_path), pool_pre_ping=True)
    assert isinstance(mem, OceanBaseMemoryService)


def test_uri_and_url_together_must_agree():
    assert OceanBaseSessionService(uri="oceanbase://root@h:1/db", agents_dir="/x").config.database == "db"
    with pytest.raises(ConfigurationError, match="not both"):
        OceanBaseSessionService("oceanbase://root@h:1/a", uri="oceanbase://root@h:1/b")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
async def test_adk_api_server_creates_sessions_in_our_database(tmp_path, migrated_url, database):
    """``adk-oceanbase adk-init`` then ADK's real server: a session made over REST is a row of ours."""
    agents = tmp_path / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "__init__.py").write_text("from . import agent\n")
    (agents / APP / "agent.py").write_text(AGENT)
    assert await asyncio.to_thread(main, ["adk-init", str(agents)]) == 0
    port = _free_port()
    adk = Path(sys.executable).with_name("adk")
    server = subprocess.Popen(
        [str(adk), "api_server", "--host", "127.0.0.1", "--port", str(port), "--no-reload",
         "--session_service_uri", migrated_url, "--memory_service_uri", migrated_url, str(agents)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "GOOGLE_API_KEY": "unused"},
    )
    try:
        body = await asyncio.to_thread(_post_when_up, f"http://127.0.0.1:{port}/apps/{APP}/users/u1/sessions", server)
    finally:
        server.terminate()
        log = server.communicate(timeout=60)[0]
    assert body is not None, log[-3000:]
    created = json.loads(body)
    stored = await OceanBaseSessionService(database=database).get_session(app_name=APP, user_id="u1", session_id=created["id"])
    assert stored is not None and "Traceback" not in log


def _post_when_up(url: str, server: subprocess.Popen, limit_s: float = 120.0) -> str | None:
    """POSTs once the server answers; ``None`` if it exits or does not answer within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and server.poll() is None:
        try:
            req = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.read().decode()
        except OSError:
            time.sleep(0.5)
    return None


ENTRY_POINT_CHECK = """
import sys
from google.adk.cli.utils.service_factory import create_session_service_from_options
try:
    create_session_service_from_options(base_dir=sys.argv[1], session_service_uri="seekdb:///nowhere/db")
except ValueError as exc:
    print(type(exc.__cause__).__name__, exc.__cause__)
"""


def test_an_unregistered_seekdb_url_names_adk_init(tmp_path):
    """ADK without services.py falls back to its DatabaseSessionService, i.e. to SQLAlchemy's dialect lookup.

    The wheel declares the ``seekdb`` entry point (pyproject.toml); here the same
    declaration is put on ``sys.path`` as installed metadata, as pip would.
    """
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["sqlalchemy.dialects"]["seekdb"]
    dist = tmp_path / "site" / "adk_oceanbase_entry_points-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: adk-oceanbase-entry-points\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[sqlalchemy.dialects]\nseekdb = {target}\n")
    agents = tmp_path / "agents"
    agents.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", ENTRY_POINT_CHECK, str(agents)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.stdout.startswith("ConfigurationError seekdb:///nowhere/db is an adk-oceanbase URL"), done.stderr
    assert "adk-oceanbase adk-init AGENTS_DIR" in done.stdout
    assert not Path("/nowhere").exists()
