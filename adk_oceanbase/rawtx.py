"""Driver-level transactions for the two hottest calls: ``append_event`` and ``create_session``.

An append is a session UPDATE, an event INSERT, maybe a state upsert, and a
COMMIT; seekdb answers them in about a millisecond together.  Through
SQLAlchemy's async Core the same statements took ~2.8 ms, the difference being
statement compilation, result wrapping and a greenlet hop per call; and each
statement sent on its own costs a network round trip (~0.3 ms on loopback).
So these paths send plain SQL text (the ``RAW_*`` constants in
``sessions/queries.py``, ``%(name)s`` parameters escaped by the driver) on the
aiomysql connection underneath a pooled SQLAlchemy connection, and several
statements in one packet with :meth:`RawTransaction.batch` (aiomysql always
negotiates multi-statements; ``Config.batch_statements`` turns batching off).

The connection still comes from, and goes back to, the engine's one pool, so
pool size, per-connection settings (UTC, timeouts) and disposal stay in one
place; it is checked out of the pool directly (``AsyncEngine.raw_connection``),
without a SQLAlchemy ``Connection`` around it: 14 us instead of 49 us of CPU
per checkout and return (measured, issue #11).  Everything else keeps using
SQLAlchemy Core: the saving only matters where a call is a handful of
milliseconds and runs once per event.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any, AsyncIterator, Mapping, Sequence

import pymysql
from aiomysql.cursors import RE_INSERT_VALUES
from pymysql.constants import CLIENT, SERVER_STATUS
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy import text as sa_text
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.util.concurrency import greenlet_spawn

from .errors import CLIENT_ERRORS_FROM, PacketTooLargeError, is_connection_lost, typed_errors

__all__ = ["COMMIT", "ConnectionLease", "closed_by_server", "RawTransaction", "Result", "raw_transaction"]

COMMIT = "COMMIT"
"""Ends a :meth:`RawTransaction.batch`: the batch then commits in the same round trip."""

Result = tuple[int, list[tuple[Any, ...]]]
"""``(affected or selected row count, rows)`` of one statement."""


class RawTransaction:
    """One open transaction on a driver connection; see :func:`raw_transaction`.

    The connection is in autocommit 0, as SQLAlchemy assumes on MySQL, except
    a :class:`ConnectionLease`'s own, which :meth:`single` may leave in
    autocommit 1: then a ``BEGIN`` opens each transaction (in the same packet
    as its first statements), so every method behaves the same on both.
    """

    __slots__ = ("_cursor", "_dialect", "_max_packet", "_multi", "_may_autocommit", "finished")

    def __init__(self, cursor: Any, dialect: Any, batch: bool = True, max_packet: int = 0, may_autocommit: bool = False):
        self._cursor = cursor
        self._dialect = dialect
        self._max_packet = max_packet
        self._multi = batch and bool(cursor.connection.client_flag & CLIENT.MULTI_STATEMENTS)
        self._may_autocommit = may_autocommit
        self.finished = False
        """True once a batch ended with COMMIT: the context manager then commits nothing more.

        Any statement after that starts a new transaction, which the context
        manager commits (or rolls back) as usual."""

    async def batch(self, statements: Sequence[tuple[str | Executable, Any]], *, read_only: bool = False) -> list[Result]:
        """Runs ``statements`` in order, in one round trip when the connection allows it.

        Each item is ``(sql, params)``: ``params`` a mapping, or a list of
        mappings for a multi-row ``INSERT ... VALUES`` (sent as one statement,
        like ``executemany``); ``sql`` plain text with ``%(name)s``
        parameters, or a SQLAlchemy Core statement (``text()`` with
        ``:name``), compiled for the driver.  ``(COMMIT, None)`` as the last item commits in
        the same round trip.  The server stops at the first failing statement
        and the error is raised here; the statements before it stay part of
        the open transaction, which the context manager then rolls back.
        ``read_only``: the statements change nothing, so on a connection in
        autocommit mode they go without the ``BEGIN`` and the ``COMMIT``
        (each statement sees the latest committed data either way, as under
        READ COMMITTED): ``BEGIN; SELECT; SELECT; COMMIT`` cost a
        ``get_tuple`` ~10% more than ``SELECT; SELECT``.

        Raises:
            PacketTooLargeError: a packet would exceed the server's
                ``max_allowed_packet``; checked before anything is sent.
        """
        commits = bool(statements) and statements[-1][0] == COMMIT
        self.finished = False
        begins = _needs_begin(self._cursor.connection)
        dropped = 0
        if begins and read_only:
            begins = False
            if commits and len(statements) > 1:
                statements, dropped = statements[:-1], 1
        texts = [self._render(sql, params) for sql, params in statements]
        if begins:
            texts.insert(0, _BEGIN)
        if self._multi:
            texts = [";\n".join(texts)]
        for text in texts:
            self._check_size(text)
        if not self._multi:
            results = []
            for text in texts:
                results.append(await self._run_text(text))
        else:
            results = [await self._run_text(texts[0])]
            while await self._cursor.nextset():
                results.append(await self._collect())
        if commits:
            self.finished = True
        if dropped:
            results.append((0, []))  # the COMMIT's answer, as if it had been sent
        return results[1:] if begins else results

    async def single(self, sql: str, params: Any) -> Result:
        """Runs one statement as a transaction of its own, committed: in autocommit mode where that is allowed.

        seekdb commits a one-statement autocommit transaction cheaper than the
        same statement followed by ``COMMIT``: 0.54 against 0.61 ms for a
        LangGraph put's checkpoint row, and 0.69 for the blob row, the
        checkpoint row and ``COMMIT`` (bare aiomysql, interleaved, load 2.0,
        2026-11-28).  Switching per call costs what it saves (``SET
        autocommit=1; ...; SET autocommit=0``: 0.72 ms), so only a
        :class:`ConnectionLease`'s own connection is switched, once, and stays
        in autocommit 1 while the lease keeps it (it is put back in autocommit
        0 before it goes back to the pool).  Elsewhere: the statement and
        ``COMMIT`` in one packet.  Must be the transaction's first statement.
        """
        self.finished = False
        conn = self._cursor.connection
        text = self._render(sql, params)
        if conn.get_autocommit():
            texts = [text]
        elif self._may_autocommit:
            texts = [_AUTOCOMMIT_ON, text]
        else:
            texts = [text, COMMIT]
        for t in texts:
            self._check_size(t)
        if self._multi:
            results = [await self._run_text(texts[0] if len(texts) == 1 else ";\n".join(texts))]
            while await self._cursor.nextset():
                results.append(await self._collect())
        else:
            results = [await self._run_text(t) for t in texts]
        self.finished = True
        return results[-1] if texts[-1] is text else results[0]

    async def run(self, stmt: Executable) -> Result:
        """A SQLAlchemy Core statement, compiled for the driver.

        For the rare branches inside a hot transaction (stale-copy checks,
        compaction bookkeeping) whose SQL is built from arguments.
        """
        self.finished = False
        if _needs_begin(self._cursor.connection):
            await self._cursor.execute(_BEGIN)
        compiled = stmt.compile(dialect=self._dialect, compile_kwargs={"render_postcompile": True})
        params = compiled.params
        args = tuple(params[name] for name in compiled.positiontup or ())
        await self._cursor.execute(str(compiled), args)
        return await self._collect()

    async def rollback(self) -> None:
        """Discards the writes so far; statements after it start afresh (and commit at the end)."""
        await self._cursor.connection.rollback()

    # ------------------------------------------------------------------ internals
    def _check_size(self, text: str) -> None:
        """Refuses a statement the server would reject with 1153, before sending any of it.

        ``n`` characters are ``n`` to ``4n`` bytes of UTF-8, so only texts
        that could be too big are encoded to measure them.
        """
        budget = self._max_packet - _PACKET_OVERHEAD
        if self._max_packet and len(text) * 4 > budget:
            size = len(text.encode("utf-8"))
            if size > budget:
                raise PacketTooLargeError(size, self._max_packet)

    def _render(self, sql: str | Executable, params: Any) -> str:
        if isinstance(sql, TextClause) and not any(b.expanding for b in sql._bindparams.values()):
            template, names = _compiled_text(self._dialect, sql.text)
            values = {name: b.effective_value for name, b in sql._bindparams.items()}
            values.update(params or {})
            return self._cursor.mogrify(template, tuple(values[name] for name in names))
        if isinstance(sql, Executable):
            # expanding parameters (``IN :list``) become one placeholder per value here
            state = sql.compile(dialect=self._dialect).construct_expanded_state(dict(params or {}))
            values = state.parameters
            return self._cursor.mogrify(state.statement, tuple(values[name] for name in state.positiontup or ()))
        if params is None:
            return sql
        if isinstance(params, Mapping):
            return self._cursor.mogrify(sql, params)
        match = RE_INSERT_VALUES.match(sql)
        if match is None or not params:
            raise ValueError("a list of rows needs a non-empty multi-row 'INSERT ... VALUES (...)' statement")
        prefix, values, suffix = match.group(1), match.group(2).rstrip(), match.group(3)
        return prefix + ",".join(self._cursor.mogrify(values, row) for row in params) + suffix

    async def _run_text(self, text: str) -> Result:
        await self._cursor.execute(text)
        return await self._collect()

    async def _collect(self) -> Result:
        cur = self._cursor
        rows = list(await cur.fetchall()) if cur.description else []
        return cur.rowcount, rows


_BEGIN = "BEGIN"
_AUTOCOMMIT_ON = "SET autocommit = 1"


def _needs_begin(conn: Any) -> bool:
    """True when ``conn`` is in autocommit mode outside a transaction: statements would each commit alone."""
    status = conn.server_status
    return bool(status & SERVER_STATUS.SERVER_STATUS_AUTOCOMMIT) and not status & SERVER_STATUS.SERVER_STATUS_IN_TRANS


@lru_cache(maxsize=512)
def _compiled_text(dialect: Any, sql: str) -> tuple[str, tuple[str, ...]]:
    """``text(sql)`` compiled for the driver: the ``%s`` template and its parameter names in order.

    A search statement is ~6 kB with ~90 named parameters, and SQLAlchemy compiles
    a ``text()`` with a regular-expression pass each time (0.37 ms per search at
    100k rows); the statement shapes repeat, so each is compiled once per dialect.
    Only for texts without expanding (``IN :list``) parameters, whose template
    depends on the values.
    """
    compiled = sa_text(sql).compile(dialect=dialect)
    return str(compiled), tuple(compiled.positiontup or ())


_PACKET_OVERHEAD = 1024
"""Bytes of ``max_allowed_packet`` kept for the command byte and the protocol's framing."""


def closed_by_server(dbapi_conn: Any) -> bool:
    """True when the server has closed an idle pooled connection; costs no round trip.

    The server's FIN (or RST) reaches the aiomysql connection's stream reader
    as end-of-file (or an error) while the connection sits in the pool, so
    checkout can look at that flag instead of pinging: a pre-ping is one more
    round trip on every checkout of the append hot path.  What this misses (a
    close racing the checkout, a silent network) fails the first statement
    instead; reads are then re-run on a fresh connection (``DatabaseService._read``).
    """
    reader = getattr(getattr(dbapi_conn, "driver_connection", None), "_reader", None)
    return reader is not None and (reader.at_eof() or reader.exception() is not None)


class ConnectionLease:
    """One pooled connection kept checked out between the transactions of one owner, on one event loop.

    Checking a connection out of SQLAlchemy's pool and back in costs ~75 us of
    CPU per transaction (two greenlet hops and the pool's bookkeeping; seekdb,
    2 vCPU, 2026-11-28), ~4% of a LangGraph ``put``.  An owner whose calls
    mostly come one at a time (the saver: a graph's puts are a chain) keeps
    the connection its last transaction used; a transaction that finds it in
    use, or one the server closed while it sat idle (the check the pool makes
    at checkout), takes one from the pool as before.  It stays one of the
    pool's connections (``pool_size`` counts it) and goes back by
    :meth:`release`, when it is older than ``recycle_s`` (the pool's
    ``pool_recycle``), or is invalidated after an error as any other.
    """

    __slots__ = ("_pooled", "_engine", "_busy", "_since", "recycle_s")

    def __init__(self, recycle_s: float = -1) -> None:
        self._pooled: Any = None
        self._engine: AsyncEngine | None = None
        self._busy = False
        self._since = 0.0
        self.recycle_s = recycle_s

    def take(self, engine: AsyncEngine) -> Any:
        """The kept connection, marked in use, when it is free and fit; else None."""
        pooled = self._pooled
        if pooled is None or self._busy:
            return None
        stale = 0 <= self.recycle_s < time.monotonic() - self._since or engine is not self._engine
        if pooled.driver_connection is None or closed_by_server(pooled) or stale:
            self._pooled = None  # the server closed it (or it is due for recycling): back to the pool
            return _Returning(pooled)
        self._busy = True
        return pooled

    def done(self, engine: AsyncEngine, pooled: Any, reusable: bool) -> bool:
        """``pooled``'s transaction ended; True when the lease keeps it (the caller must not check it in)."""
        if pooled is self._pooled:
            self._busy = False
            if not reusable:
                self._pooled = None
            return reusable
        if reusable and self._pooled is None:
            self._pooled, self._engine, self._busy, self._since = pooled, engine, False, time.monotonic()
            return True
        return False

    async def release(self) -> None:
        """Checks the kept connection back in (before the engine is disposed)."""
        pooled, self._pooled, self._busy = self._pooled, None, False
        if pooled is not None:
            await _check_in(pooled)


class _Returning:
    """A kept connection found unfit: to be checked back in before a fresh one is taken."""

    __slots__ = ("pooled",)

    def __init__(self, pooled: Any) -> None:
        self.pooled = pooled


async def _checkout(engine: AsyncEngine, lease: ConnectionLease | None) -> Any:
    if lease is not None:
        kept = lease.take(engine)
        if isinstance(kept, _Returning):
            await _check_in(kept.pooled)
        elif kept is not None:
            return kept
    return await engine.raw_connection()


@asynccontextmanager
async def raw_transaction(
    engine: AsyncEngine, *, batch: bool = True, max_packet: int = 0, lease: ConnectionLease | None = None
) -> AsyncIterator[RawTransaction]:
    """A transaction on a pooled connection: committed on success, rolled back on any error.

    ``batch=False`` makes :meth:`RawTransaction.batch` send one statement per
    round trip; ``max_packet`` is the server's ``max_allowed_packet`` (0:
    unchecked).  Driver errors, failing to get a connection included, come
    out as our typed errors (by error number, like ``DatabaseService._tx``).
    A connection whose conversation with the server may be out of step
    (cancelled mid-statement, network error, failed rollback) is invalidated
    instead of being returned to the pool.  With a ``lease``, the connection
    comes from it when it is free, and stays with it afterwards
    (:class:`ConnectionLease`).
    """
    with typed_errors():
        pooled = await _checkout(engine, lease)
        checked_in = False
        try:
            driver = pooled.driver_connection
            cursor = await driver.cursor()
            tx = RawTransaction(cursor, engine.dialect, batch, max_packet, may_autocommit=lease is not None)
            try:
                yield tx
                if not tx.finished:
                    await driver.commit()
            except BaseException as exc:
                rolled_back = False
                try:
                    rolled_back = await _rolled_back(driver, exc)
                finally:
                    # Also when the rollback itself is cancelled: checked back in, the
                    # connection would carry this transaction's writes into the next
                    # user's COMMIT (or a reply nobody read).
                    if not rolled_back:
                        if lease is not None:
                            lease.done(engine, pooled, False)
                        if is_connection_lost(exc):
                            # What SQLAlchemy does on a disconnect: the server likely dropped
                            # its siblings too, so connections opened before now are replaced
                            # at their next checkout (a re-run must not meet another dead one).
                            engine.sync_engine.pool._invalidate(pooled, exc, _checkin=False)
                        # closes the driver connection (awaited inside: hence the greenlet)
                        # and hands the pool record back, so there is nothing left to check in
                        checked_in = True
                        await greenlet_spawn(pooled.invalidate, exc)
                raise
            finally:
                await cursor.close()
        finally:
            if not checked_in and not (lease is not None and lease.done(engine, pooled, True)):
                await _check_in(pooled)


async def _check_in(pooled: Any) -> None:
    """Returns ``pooled`` to the pool in autocommit 0, as SQLAlchemy and every other user expect.

    A lease's connection may be in autocommit 1 (:meth:`RawTransaction.single`);
    if switching it back fails, it is discarded instead.
    """
    driver = pooled.driver_connection
    if driver is not None and driver.get_autocommit():
        try:
            await driver.autocommit(False)
        except Exception as exc:  # noqa: BLE001 - closed by the server, say: it is discarded, not returned
            await greenlet_spawn(pooled.invalidate, exc)
            return
        except BaseException as exc:  # cancelled mid-way: the reply may be unread
            await greenlet_spawn(pooled.invalidate, exc)
            raise
    # Check-in may close the connection (overflow, recycle): the driver's
    # close is awaited inside, so it runs in SQLAlchemy's greenlet.
    await greenlet_spawn(pooled.close)


async def _rolled_back(driver: Any, exc: BaseException) -> bool:
    """Rolls back after ``exc`` when the connection can still be trusted; False means discard it."""
    if _connection_suspect(exc):
        return False
    try:
        await driver.rollback()
    except Exception:  # noqa: BLE001 - any failure here means the connection is unusable
        return False
    return True


def _connection_suspect(exc: BaseException) -> bool:
    """True when a reply may be left unread: cancellation, socket or client-side driver errors.

    Server errors (numbers below 2000) and our own checks between statements
    leave the protocol in step; client errors (2000 and up, e.g. 2013 lost
    connection), ``OSError`` and anything that is not an ``Exception``
    (``CancelledError``) may not.
    """
    if isinstance(exc, pymysql.err.MySQLError):
        args = getattr(exc, "args", ())
        return not (args and isinstance(args[0], int) and args[0] < CLIENT_ERRORS_FROM)
    return isinstance(exc, OSError) or not isinstance(exc, Exception)
