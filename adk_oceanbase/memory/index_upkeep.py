"""Keeps the HNSW index fresh as memories grow: bounded, one-at-a-time ``DBMS_VECTOR.REBUILD_INDEX`` calls.

seekdb adds new vectors to an index's incremental part; an index grown row
by row searched slower and, on the pre-0007 layout, lost candidates until it
was rebuilt (issue #13; the server rebuilds on its own only once a day).
The vectorizer tells :class:`IndexUpkeep` how many vectors it stored; every
``index_upkeep_rows`` of them it starts one background call of
``REBUILD_INDEX(..., delta_rate_threshold)``.  The *server* then decides: it
rebuilds only when the rows added since the index was last built exceed
that fraction of the table, a state it keeps itself, so nothing is stored
on our side (no schema change) and several processes asking is harmless
(each call is a cheap check unless the delta is due).  The old index keeps
answering searches while the new one is built (seekdb documents the swap).

The same check keeps the table's optimizer statistics fresh
(:meth:`IndexUpkeep.refresh_statistics`): gathered when the server has none
or counts them stale.  Without them the optimizer plans the ANN candidates of
a big user as an exact scan, and a cached plan changes only after ~30
executions (``queries.GATHER_TABLE_STATS``).

Bounds: at most one call per process at a time (a call still running when
the next is due is skipped), the call runs under ``index_upkeep_timeout_s``
(the dialect's statement timeout on its own connection), failures are logged and
counted, never raised.  ``index_upkeep_rows=None`` turns it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections import defaultdict
from typing import Any

from sqlalchemy import text

from .. import gateway
from ..engine import Database
from . import queries as q
from .settings import MemorySettings

__all__ = ["IndexUpkeep"]


REFREEZE_AFTER_S = 15.0
"""A freeze whose round has not started after this long is asked for again (a round took 11-20 s on an idle seekdb)."""


class _StillCompacting(Exception):
    """The tenant's compaction round has not ended yet (:meth:`IndexUpkeep.compact` looks again)."""

logger = logging.getLogger(__name__)


class IndexUpkeep:
    """Counts stored vectors and starts a bounded index rebuild check every ``index_upkeep_rows``."""

    def __init__(self, db: Database, settings: MemorySettings):
        self._db = db
        self._settings = settings
        self._since = 0
        self._task: asyncio.Task[None] | None = None
        self.stats: dict[str, float] = defaultdict(float)
        """``calls`` (rebuild checks run), ``failed``, ``skipped_busy``, ``last_seconds``, ``total_seconds``,
        ``stats_gathered`` and ``stats_failed`` (optimizer statistics, see :meth:`refresh_statistics`),
        ``compactions`` and ``compact_failed`` (:meth:`compact`)."""

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stored(self, rows: int) -> None:
        """The vectorizer stored ``rows`` vectors; starts a check when ``index_upkeep_rows`` have piled up."""
        every = self._settings.index_upkeep_rows
        if not every or not self._db.dialect.rebuilds_vector_index:
            return
        self._since += rows
        if self._since < every:
            return
        if self.running:
            self.stats["skipped_busy"] += 1
            return
        self._since = 0
        self._task = asyncio.get_running_loop().create_task(self.run(), name="adk-oceanbase-index-upkeep")

    async def run(self) -> bool:
        """One rebuild check now (the server rebuilds when its delta is due); ``False`` when it failed."""
        s = self._settings
        start = time.perf_counter()
        try:
            async with gateway.connection(self._db) as conn:
                dialect = self._db.dialect
                try:
                    for stmt in dialect.statement_timeout_statements(s.index_upkeep_timeout_s):
                        await conn.execute(text(stmt))
                    await conn.execute(q.rebuild_vector_index(s.index_upkeep_delta_rate))
                    await conn.commit()
                    await self.refresh_statistics(conn)
                except BaseException:
                    # Cancelled (``close``) or failed mid-statement: the driver connection may still be
                    # waiting for the server's answer, and it carries the long timeout.  Talking to it
                    # again would read the wrong reply (SQLAlchemy's PendingRollbackError, logged as a
                    # failed rebuild on every close during one); closing it is the only safe hand-back.
                    with contextlib.suppress(Exception):
                        await conn.invalidate()
                    raise
                # the connection goes back to the pool: give it the configured timeout again
                for stmt in dialect.statement_timeout_statements(self._db.config.query_timeout_s):
                    await conn.execute(text(stmt))
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats["failed"] += 1
            logger.warning("vector index upkeep (REBUILD_INDEX) failed; searches keep the current index", exc_info=True)
            return False
        finally:
            took = time.perf_counter() - start
            self.stats["calls"] += 1
            self.stats["last_seconds"] = took
            self.stats["total_seconds"] += took
        logger.info("vector index upkeep: REBUILD_INDEX(delta_rate_threshold=%s) took %.1f s",
                    s.index_upkeep_delta_rate, took)
        return True

    async def refresh_statistics(self, conn: Any, *, force: bool = False) -> bool:
        """Gathers the memory table's optimizer statistics when it has none or the server counts them stale.

        Returns whether it gathered.  Failures (e.g. no ``DBMS_STATS`` privilege) are logged and
        counted (``stats_failed``), never raised: the server's own jobs gather them later.
        """
        try:
            if not force:
                row = (await conn.execute(q.TABLE_STATS_STATE)).first()
                if row is not None and row[0] is not None and row[1] != "YES":
                    return False
            await conn.execute(q.GATHER_TABLE_STATS)
            await conn.commit()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats["stats_failed"] += 1
            logger.warning("optimizer statistics of the memory table could not be gathered", exc_info=True)
            with contextlib.suppress(Exception):  # leave the connection usable for its caller
                await conn.rollback()
            return False
        self.stats["stats_gathered"] += 1
        return True

    async def compact(self, conn: Any, timeout_s: float) -> bool:
        """Runs a major compaction of the tenant and waits up to ``timeout_s`` for it to finish.

        The step after a bulk load (:meth:`~.upkeep.EmbeddingUpkeep.rebuild_vector_index`):
        searches scan the compacted baseline instead of the rows just written (``queries.MAJOR_FREEZE``).
        Returns whether it finished in time.  Failures (no ``ALTER SYSTEM`` privilege, a round
        already running that outlasts the wait) are logged and counted (``compact_failed``), never
        raised: the server compacts on its own schedule (daily) anyway.
        """
        start = time.monotonic()
        try:
            before = (await conn.execute(q.MAJOR_COMPACTION_STATE)).first()
            await conn.execute(q.MAJOR_FREEZE)
            await conn.commit()
            asked = time.monotonic()

            async def merged() -> None:
                nonlocal asked
                frozen, last, status = (await conn.execute(q.MAJOR_COMPACTION_STATE)).first()
                await conn.commit()  # each look its own snapshot
                if int(frozen) > int(before[0]) and int(last) >= int(frozen) and status == "IDLE":
                    return
                if int(frozen) <= int(before[0]) and status == "IDLE" and time.monotonic() - asked > REFREEZE_AFTER_S:
                    # The freeze was accepted but no round started: seen once in a full test run right
                    # after the index rebuild (the wait then ran on for its whole timeout, 3600 s, until
                    # a second freeze started the round).  Ask again.
                    asked = time.monotonic()
                    with contextlib.suppress(Exception):
                        await conn.execute(q.MAJOR_FREEZE)
                        await conn.commit()
                raise _StillCompacting

            def waiting(exc: BaseException) -> bool:
                return isinstance(exc, _StillCompacting) and time.monotonic() - start < timeout_s

            await gateway.retrying(merged, when=waiting, attempts=sys.maxsize,
                                   pause_s=lambda n: min(0.5 * 2 ** (n - 1), 5.0), what="major compaction")
            self.stats["compactions"] += 1
            return True
        except asyncio.CancelledError:
            raise
        except _StillCompacting:
            logger.warning("major compaction still running after %.0f s; searches speed up when it ends", timeout_s)
        except Exception:
            logger.warning("major compaction (ALTER SYSTEM MAJOR FREEZE) failed; the server compacts daily",
                           exc_info=True)
            with contextlib.suppress(Exception):
                await conn.rollback()
        self.stats["compact_failed"] += 1
        return False

    async def wait(self) -> None:
        """Waits for a running check (tests, benchmarks)."""
        task = self._task
        if task is not None:
            await asyncio.shield(task)

    async def close(self) -> None:
        """Stops waiting for a running check; the server finishes (or drops) the rebuild on its own."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    def describe(self) -> dict[str, Any]:
        keys = ("calls", "failed", "skipped_busy", "last_seconds", "total_seconds", "stats_gathered", "stats_failed",
                "compactions", "compact_failed")
        out = {k: self.stats.get(k, 0.0) for k in keys}
        return dict(out, running=self.running, rows_since_last=self._since)
