"""The embedded seekdb child process: started once per data directory, shared, restarted if it dies.

:class:`EmbeddedSeekdb` owns the ``pylibseekdb`` handles; the pool hooks
below (:func:`embedded_connector`, :func:`watch_embedded`) let a
:class:`~adk_oceanbase.engine.Database`'s engine follow the child across a
restart, and :func:`embedded_log_statements` bounds the engine's own log.
The directory checks before a start are :mod:`.embedded_dir`'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomysql
from sqlalchemy import event
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine

from .embedded_dir import check_directory
from .errors import NO_SERVER, ConfigurationError, ConnectionFailedError, driver_error_code

__all__ = ["EmbeddedSeekdb", "embedded_connector", "embedded_log_statements", "watch_embedded"]

logger = logging.getLogger(__name__)


@dataclass
class _Child:
    """One running embedded seekdb: the pylibseekdb handle, its socket, its process id (when found)."""

    inst: Any
    options: dict[str, Any]
    pid: int | None
    refs: int = 1
    generation: int = 0
    """Bumped on every restart: pooled connections of an older generation are stale."""
    log_mb: int = 0
    """``Config.seekdb_log_mb`` of the service that started it (restarts trim the log alike)."""

    def running(self) -> bool:
        """Cheap liveness check (one ``waitpid`` syscall, no I/O); ``True`` when the pid is unknown.

        seekdb is this process's own child, so ``WNOHANG`` tells a live one
        from a dead one (and reaps the dead one instead of leaving a zombie).
        """
        if self.pid is None:
            return True
        try:
            done, _status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: gone
            return False
        return done == 0


class EmbeddedSeekdb:
    """One seekdb child process per data directory, shared inside this process, restarted if it dies.

    ``pylibseekdb.open`` starts seekdb on a private Unix socket (about 1.5 s
    measured here).  Two services on the same directory must share the
    instance: a second ``open`` of the same directory would fight over its
    files.  Reference counted; the last ``release`` closes the process.

    If the child dies (killed, OOM), every service on the directory would
    otherwise fail until all were closed.  Instead the next connection
    checkout notices (``_Child.running``), one caller restarts seekdb on the
    same directory (``close`` + ``open`` again works: measured, a new process
    and a new socket path in ~2 s), and connections find the new socket.
    Data committed before the death is recovered from seekdb's log.
    """

    _lock = threading.Lock()
    _instances: dict[Path, _Child] = {}
    _restart_locks: dict[Path, threading.Lock] = {}

    @classmethod
    async def acquire(cls, db_dir: Path, log_mb: int = 0, *, create: bool = True) -> dict[str, Any]:
        """Starts (or reuses) seekdb for ``db_dir``; returns pymysql-style connection options.

        ``create=False`` refuses (``DatabaseNotFoundError``) a directory that
        holds no seekdb database instead of creating one there.
        ``log_mb`` (``Config.seekdb_log_mb``): a log file left by earlier runs past half of it is set
        aside first, replacing the one set aside before, so the directory's log stays near that size.
        """
        db_dir = db_dir.resolve()
        with cls._lock:
            entry = cls._instances.get(db_dir)
            if entry is not None:
                entry.refs += 1
        if entry is not None:
            return await cls.live_options(db_dir)
        try:
            import pylibseekdb  # noqa: F401  (presence check; started in _open)
        except ImportError as exc:  # a dependency on Linux only (the wheels are Linux-only)
            raise ConfigurationError(
                f"embedded seekdb ({db_dir}) needs the pylibseekdb package (Linux only: "
                "pip install 'adk-oceanbase[embedded]'); elsewhere use oceanbase://user:pw@host:2881/db "
                "or mysql+aiomysql://user:pw@host:3306/db"
            ) from exc
        check_directory(db_dir, create=create)
        db_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            inst, pid = await asyncio.to_thread(_open, db_dir, log_mb)
        except Exception as exc:
            raise ConnectionFailedError(
                f"could not start embedded seekdb in {db_dir}: {exc} (its log is in {db_dir / 'log'})"
            ) from exc
        with cls._lock:
            entry = cls._instances.get(db_dir)
            if entry is not None:  # lost a race: another task opened it meanwhile
                entry.refs += 1
                inst.close()
                return dict(entry.options)
            cls._instances[db_dir] = _Child(inst, dict(inst.connection_options()), pid, log_mb=log_mb)
        logger.info("started embedded seekdb in %s (pid %s)", db_dir, pid)
        return dict(inst.connection_options())

    @classmethod
    async def live_options(cls, db_dir: Path) -> dict[str, Any]:
        """Connection options of the running seekdb for ``db_dir``, restarting it first if it died."""
        db_dir = db_dir.resolve()
        entry = cls._entry(db_dir)
        if not entry.running():
            await cls.restart(db_dir, entry.generation)
        return dict(cls._entry(db_dir).options)

    @classmethod
    def live_generation(cls, db_dir: Path) -> int:
        """The running seekdb's generation, or -1 when it is dead or gone (no I/O: a checkout hook)."""
        entry = cls._instances.get(db_dir)
        return entry.generation if entry is not None and entry.running() else -1

    @classmethod
    async def restart(cls, db_dir: Path, seen_generation: int) -> None:
        """Restarts a dead seekdb once: a caller that saw an older generation finds it restarted already."""
        await asyncio.to_thread(cls._restart, db_dir.resolve(), seen_generation)

    @classmethod
    def _restart(cls, db_dir: Path, seen_generation: int) -> None:
        with cls._lock:
            restart_lock = cls._restart_locks.setdefault(db_dir, threading.Lock())
        with restart_lock:
            entry = cls._entry(db_dir)
            if entry.generation != seen_generation or not _gone(entry):
                return  # restarted by another caller meanwhile, or alive
            logger.warning("embedded seekdb in %s (pid %s) died; restarting it", db_dir, entry.pid)
            try:
                entry.inst.close()
            except Exception:  # the process is gone; its handle may be too
                logger.debug("closing the dead seekdb handle failed", exc_info=True)
            try:
                inst, pid = _open(db_dir, entry.log_mb)
            except Exception as exc:
                raise ConnectionFailedError(
                    f"embedded seekdb in {db_dir} died and could not be restarted: {exc}; "
                    "close every service on this directory and check its log/ folder"
                ) from exc
            with cls._lock:
                entry.inst, entry.options, entry.pid = inst, dict(inst.connection_options()), pid
                entry.generation += 1
            logger.warning("restarted embedded seekdb in %s (pid %s)", db_dir, pid)

    @classmethod
    def _entry(cls, db_dir: Path) -> _Child:
        entry = cls._instances.get(db_dir)
        if entry is None:
            raise ConnectionFailedError(f"embedded seekdb in {db_dir} was released; start the service again")
        return entry

    @classmethod
    async def release(cls, db_dir: Path) -> None:
        """Drops one reference; closes the seekdb process when it was the last."""
        db_dir = db_dir.resolve()
        with cls._lock:
            entry = cls._instances.get(db_dir)
            if entry is None:
                return
            if entry.refs > 1:
                entry.refs -= 1
                return
            del cls._instances[db_dir]
        await asyncio.to_thread(entry.inst.close)
        logger.info("stopped embedded seekdb in %s", db_dir)


def _gone(entry: _Child, dying_s: float = 10.0) -> bool:
    """Whether the child is dead for good (blocking: runs in a worker thread).

    A refused socket while the pid still runs is a child being torn down (a
    SIGKILLed seekdb takes up to a second to end its threads): wait for it.
    Without a pid a refused socket is all there is to go on.  Never restart
    while the old process lives: two processes on one directory corrupt it.
    """
    if entry.pid is not None and not entry.running():
        return True
    if _socket_answers(entry.options):
        return False
    if entry.pid is None:
        return True
    deadline = time.monotonic() + dying_s
    while time.monotonic() < deadline:
        if not entry.running():
            return True
        time.sleep(0.05)
    return False


def _open(db_dir: Path, log_mb: int = 0) -> tuple[Any, int | None]:
    """``pylibseekdb.open`` (blocking, ~1.5 s) and the pid of the child it started."""
    import pylibseekdb

    if log_mb > 0:
        _set_log_aside(db_dir / "log" / "seekdb.log", log_mb * 2**20 // 2)

    inst = pylibseekdb.open(str(db_dir))
    return inst, _child_pid(db_dir)


def _set_log_aside(log: Path, limit: int) -> None:
    """Renames a log past ``limit`` bytes to ``seekdb.log.previous`` (replacing it); seekdb starts a new one.

    ``pylibseekdb.open`` takes no engine parameters, and a restart logs at the
    engine's default level before ``syslog_level`` is read back: 34 MB per
    restart of a small directory, measured (benchmarks/first_use.py).  A
    rename is safe even if another process's seekdb still writes the file.
    """
    try:
        if log.stat().st_size > limit:
            os.replace(log, log.with_name(log.name + ".previous"))
    except OSError:  # no log yet, or not ours to move: the engine's own rotation still applies
        return


def _child_pid(db_dir: Path) -> int | None:
    """The seekdb child serving ``db_dir`` (its command line names the directory); ``None`` without ``/proc``."""
    want = f"--base-dir={db_dir}".encode()
    me = str(os.getpid())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = f.read().rsplit(b")", 1)[1].split()[1].decode()
            if ppid != me:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if want in f.read().split(b"\0"):
                    return int(pid)
        except (OSError, IndexError):
            continue
    return None


def _socket_answers(options: dict[str, Any]) -> bool:
    """Whether something accepts connections on seekdb's Unix socket (the check where no pid is known)."""
    path = options.get("unix_socket")
    if not path:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        try:
            sock.connect(path)
        except OSError:
            return False
    return True


def embedded_connector(db_dir: Path, url: str, connect_args: dict[str, Any]) -> Any:
    """The pool's connect function for embedded seekdb: the current socket, restarting a dead seekdb first.

    The socket path changes when seekdb restarts, so it is looked up on every
    new connection; everything else is exactly what SQLAlchemy's aiomysql
    dialect would pass (``FOUND_ROWS`` above all: rowcounts are matched rows).
    """
    from sqlalchemy.engine import make_url

    sa_url = make_url(url)
    cargs, cparams = sa_url.get_dialect()().create_connect_args(sa_url)
    cparams.update(connect_args)

    async def connect() -> Any:
        options = await EmbeddedSeekdb.live_options(db_dir)
        try:
            return await aiomysql.connect(*cargs, **{**cparams, "unix_socket": options["unix_socket"]})
        except aiomysql.OperationalError as exc:
            if driver_error_code(exc) not in NO_SERVER:
                raise
            # Died without our noticing (no pid known): restart once, connect once more.
            await EmbeddedSeekdb.restart(db_dir, EmbeddedSeekdb._entry(db_dir).generation)
            options = await EmbeddedSeekdb.live_options(db_dir)
            return await aiomysql.connect(*cargs, **{**cparams, "unix_socket": options["unix_socket"]})

    return connect


def watch_embedded(engine: AsyncEngine, db_dir: Path) -> None:
    """Pooled connections remember seekdb's generation; a checkout after a death or restart reconnects.

    Raising ``InvalidatePoolError`` on checkout makes the pool drop the
    connection (and every older one) and connect anew, through
    :func:`embedded_connector`, which restarts seekdb if it is dead.  So the
    first call after a crash works instead of failing on a dead socket.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _stamp(_dbapi_conn: Any, record: Any) -> None:  # pragma: no cover - pool callback
        record.info["seekdb_generation"] = EmbeddedSeekdb.live_generation(db_dir)

    @event.listens_for(engine.sync_engine, "checkout")
    def _check(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:  # pragma: no cover - pool callback
        if record.info.get("seekdb_generation") != EmbeddedSeekdb.live_generation(db_dir):
            raise InvalidatePoolError("embedded seekdb died or was restarted")


def embedded_log_statements(log_mb: int) -> list[str]:
    """What bounds embedded seekdb's own log (``Config.seekdb_log_mb``); persisted in the directory.

    Measured (benchmarks/first_use.py): at the default level EDIAG one setup
    wrote 61 MB of INFO lines, and the files rotate at 256 MB with two kept.
    """
    if log_mb <= 0:
        return []
    return ["ALTER SYSTEM SET syslog_level = 'WARN'", f"ALTER SYSTEM SET syslog_disk_size = '{int(log_mb)}M'"]
