"""The per-user memory write guard: a generation row that memory writes lock and erasure/opt-out bump.

Issue 33: memory writes issued before ``delete_user_data`` committed after
it (300 memories and 2,388 postings of the erased user left), writes racing
an opt-out survived its purge, and ``add_session_to_memory`` given a session
read before the erasure re-created the user's memories.  Sessions were safe
because every session writer locks the session row; memories had no row to
lock.  ``memory_user_gen`` is that row, one per (app, user):

* a memory write reads the user's ``generation`` when the call starts
  (:func:`started`), before it reads sessions, events or asks an LLM;
* its transaction locks the row (:func:`lock`, ``SELECT ... FOR UPDATE``,
  inserting it at generation 0 the first time) and proceeds only if the
  generation is still the one it started with and the user is not opted out;
* ``delete_user_data`` and ``set_memory_opt_out(True)`` bump the generation
  (:func:`bump`) as the first statement of their transaction.

So a write either commits before the erasure (whose deletes then take its
rows) or finds the generation moved and stores nothing.  A whole session
that is no longer stored and was last updated no later than the user's
latest erasure is refused too (a session object read before the erasure):
its content predates the erasure, whichever generation the call started at.

The row is keyed by ``sha256(user_id)``: it has to outlive the erasure it
records, and the user id itself stays only in the audit log.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone

from typing import Any, Sequence

from sqlalchemy import Insert, Select, insert, select, text
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..schema import agent_sessions as S
from ..schema import memory_opt_out as O
from ..schema import memory_user_gen as G

__all__ = [
    "Generation",
    "bump",
    "first_row",
    "generation_of",
    "lock",
    "lock_reads",
    "locked_generation",
    "session_probe",
    "session_stored",
    "start_read",
    "started",
    "user_key",
]


def user_key(user_id: str) -> str:
    """The guard row's key for a user: SHA-256 of the id, hex."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Generation:
    """What a memory write knows about its user: the guard's generation and the opt-out."""

    generation: int
    opted_out: bool
    erased_at: datetime | None = None
    """The user's latest erasure (UTC, naive), if any."""

    def predates_erasure(self, epoch: float | None) -> bool:
        """Whether data last touched at ``epoch`` (seconds, UTC) is no newer than the latest erasure."""
        if epoch is None or self.erased_at is None:
            return False
        return epoch <= self.erased_at.replace(tzinfo=timezone.utc).timestamp()


def _read(app: str, user: str) -> Select:
    """The guard row's generation and erasure time, and the opt-out, in one statement (no row: generation 0)."""
    opted = select(O.c.opted_out_at).where(O.c.app_name == app, O.c.user_id == user).exists()
    key = user_key(user)
    gen = select(G.c.generation).where(G.c.app_name == app, G.c.user_key == key).scalar_subquery()
    erased = select(G.c.erased_at).where(G.c.app_name == app, G.c.user_key == key).scalar_subquery()
    return select(gen, erased, opted)


def _locked(app: str, user: str) -> Select:
    return select(G.c.generation, G.c.erased_at).where(G.c.app_name == app, G.c.user_key == user_key(user)).with_for_update()


def _first_row(app: str, user: str, now: datetime) -> Insert:
    return insert(G).values(app_name=app, user_key=user_key(user), generation=0, updated_at=now)


def _bump(app: str, user: str, now: datetime, erased: bool) -> Insert:
    values = {"app_name": app, "user_key": user_key(user), "generation": 1, "updated_at": now}
    update = {"generation": G.c.generation + 1, "updated_at": now}
    if erased:
        values["erased_at"] = update["erased_at"] = now
    return mysql_insert(G).values(**values).on_duplicate_key_update(**update)


# The same reads as plain SQL, for callers that send them in one packet with their own statements
# (``gateway.read_batch`` / ``RawTransaction.batch``): the extraction queue's enqueue runs on the
# request path, and each statement sent alone is a round trip (issue #31).
_START_READ = text(
    "SELECT (SELECT generation FROM memory_user_gen WHERE app_name = :app AND user_key = :key), "
    "(SELECT erased_at FROM memory_user_gen WHERE app_name = :app AND user_key = :key), "
    "EXISTS (SELECT 1 FROM memory_opt_out WHERE app_name = :app AND user_id = :user)"
)
_LOCK_READ = text("SELECT generation, erased_at FROM memory_user_gen WHERE app_name = :app AND user_key = :key FOR UPDATE")
_SESSION_PROBE = text(
    "SELECT 1 FROM agent_sessions WHERE app_name = :app AND user_id = :user AND session_id = :sid"
)
_FIRST_ROW = text("INSERT INTO memory_user_gen (app_name, user_key, generation, updated_at) VALUES (:app, :key, 0, :now)")
_OPT_OUT_READ = text("SELECT opted_out_at FROM memory_opt_out WHERE app_name = :app AND user_id = :user")


def start_read(app: str, user: str) -> tuple[Any, dict[str, Any]]:
    """:func:`started`'s read as ``(statement, params)`` for a batch; its one row goes to :func:`generation_of`."""
    return _START_READ, {"app": app, "user": user, "key": user_key(user)}


def generation_of(row: Sequence[Any]) -> Generation:
    """The :class:`Generation` in the row of :func:`start_read`."""
    gen, erased_at, opted = row
    return Generation(int(gen or 0), bool(opted), erased_at)


def lock_reads(app: str, user: str) -> list[tuple[Any, dict[str, Any]]]:
    """:func:`lock`'s two reads (the guard row ``FOR UPDATE``, then the opt-out), first in a write's batch.

    Their rows go to :func:`locked_generation`; when the guard row does not
    exist yet, the caller inserts it (:func:`first_row`) before writing.
    """
    params = {"app": app, "user": user, "key": user_key(user)}
    return [(_LOCK_READ, params), (_OPT_OUT_READ, params)]


def locked_generation(guard_rows: Sequence[Any], opt_out_rows: Sequence[Any]) -> tuple[Generation, bool]:
    """What :func:`lock_reads` found, and whether the guard row is missing.

    A missing row is generation 0: the caller inserts it (:func:`first_row`)
    in the same transaction, which then holds it as :func:`lock` would.
    """
    if not guard_rows:
        return Generation(0, bool(opt_out_rows), None), True
    return Generation(int(guard_rows[0][0]), bool(opt_out_rows), guard_rows[0][1]), False


def session_probe(app: str, user: str, session_id: str) -> tuple[Any, dict[str, Any]]:
    """:func:`session_stored`'s probe for a batch: a row when the session is stored."""
    return _SESSION_PROBE, {"app": app, "user": user, "sid": session_id}


def first_row(app: str, user: str, now: datetime) -> tuple[Any, dict[str, Any]]:
    """The guard row at generation 0 for a batch: a user's first write creates it (a racing one gets 1062, runs again)."""
    return _FIRST_ROW, {"app": app, "key": user_key(user), "now": now}


async def started(conn: AsyncConnection, app: str, user: str) -> Generation:
    """The generation a write starts at (a plain read; the write's transaction checks it under the lock)."""
    gen, erased_at, opted = (await conn.execute(_read(app, user))).one()
    return Generation(int(gen or 0), bool(opted), erased_at)


async def lock(conn: AsyncConnection, app: str, user: str, now: datetime) -> Generation:
    """Locks the user's guard row for the rest of the transaction (creating it) and reads it, opt-out included.

    The first statement of the write's transaction.  A first write of two
    racing for a new user's row loses with a duplicate key, which the memory
    write already retries.  The opt-out is read after the lock is granted, so
    it sees an opt-out that committed while this transaction waited.
    """
    row = (await conn.execute(_locked(app, user))).first()
    if row is None:
        await conn.execute(_first_row(app, user, now))
        row = (0, None)
    opted = (await conn.execute(select(O.c.opted_out_at).where(O.c.app_name == app, O.c.user_id == user))).first()
    return Generation(int(row[0]), opted is not None, row[1])


async def bump(conn: AsyncConnection, app: str, user: str, now: datetime, *, erased: bool) -> None:
    """Moves the user's generation on (erasure also stamps ``erased_at``): writes in flight will store nothing.

    The first statement of the erasure's or opt-out's transaction, so it
    queues behind a memory write holding the row and holds every later one
    back until it commits.
    """
    await conn.execute(_bump(app, user, now, erased))


async def session_stored(conn: AsyncConnection, app: str, user: str, session_id: str) -> bool:
    """Whether the session's row exists (a primary-key probe).

    A session the user's erasure deleted is gone; one stored since was created
    after it, whatever its events' (client-given) timestamps say.
    """
    stmt = select(S.c.session_id).where(S.c.app_name == app, S.c.user_id == user, S.c.session_id == session_id)
    return (await conn.execute(stmt)).first() is not None
