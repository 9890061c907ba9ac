"""Curation of stored memories: opt-out, taint, undoing a supersession; each audited when auditing is on.

A mixin of :class:`~.service.OceanBaseMemoryService`.  Each operation is one
transaction; the ones that stop or purge a user's memories move the user's
write-guard generation first (:mod:`..governance.guard`), so a memory write
in flight either commits before them or stores nothing.
"""

from __future__ import annotations

import inspect
from datetime import datetime, timezone
from typing import Any, Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from ..audit import AuditEntry, audited, by_ids, current_entry
from ..errors import ValidationError
from ..governance import guard
from ..governance import queries as gq
from ..schema import agent_memories, memory_terms
from ..telemetry import traced
from ..validation import check_id
from . import queries as q

__all__ = ["MemoryCuration"]


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _opt_out_entry(call: inspect.BoundArguments) -> AuditEntry:
    a = call.arguments
    return AuditEntry("memory_opt_out" if a["opted_out"] else "memory_opt_in", a["app_name"], a["user_id"])


def _taint_entry(call: inspect.BoundArguments) -> AuditEntry:
    a = call.arguments
    return AuditEntry("memory_taint" if a["tainted"] else "memory_untaint", a["app_name"], a["user_id"])


class MemoryCuration:
    """Opt-out, taint and restore for the memory service (a mixin; it supplies ``_tx``, ``_read``, ``_engine``)."""

    @audited(_opt_out_entry)
    async def set_memory_opt_out(
        self, app_name: str, user_id: str, opted_out: bool = True, *, purge: bool = False
    ) -> int:
        """Stops (or, with ``opted_out=False``, resumes) remembering this user; returns memories purged.

        While opted out, ``add_session_to_memory``, ``add_events_to_memory``
        and ``add_memory`` store nothing for the user; sessions are not
        affected.  ``purge=True`` also deletes every stored memory of the user
        (tombstones included), in the same transaction as the opt-out.

        Opting out (or purging) moves the user's write-guard generation on
        first (:mod:`..governance.guard`): a memory write in flight either
        commits before it (and is purged) or stores nothing.  With auditing on,
        a ``memory_opt_out`` / ``memory_opt_in`` row counts the purged memories.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        purged = 0
        now = _now()
        async with self._tx() as conn:
            if opted_out or purge:
                await guard.bump(conn, app, user, now, erased=False)
            if opted_out:
                await conn.execute(gq.upsert_opt_out(app, user, now))
            else:
                await conn.execute(gq.delete_opt_out(app, user))
            if purge:
                purged = int((await conn.execute(gq.delete_user_rows(agent_memories, app, user))).rowcount or 0)
                await conn.execute(gq.delete_user_rows(memory_terms, app, user))
            if (audit := current_entry()) is not None:
                audit.row_count = purged
                await conn.execute(audit.insert())
        return purged

    async def is_memory_opted_out(self, app_name: str, user_id: str) -> bool:
        """Whether the user asked not to be remembered (:meth:`set_memory_opt_out`)."""
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)

        async def read(conn: Any) -> bool:
            return (await conn.execute(gq.opt_out_of(app, user))).first() is not None

        return await self._read(read)

    @audited(_taint_entry)
    async def mark_tainted(
        self, app_name: str, user_id: str, memory_ids: Sequence[str], tainted: bool = True
    ) -> int:
        """Marks memories as tainted (possibly poisoned): search never returns them, so nothing injects them.

        Whatever a newly tainted memory superseded is live again (only a memory
        search could return may supersede), in the same transaction; clearing
        the mark later does not supersede it again.  ``tainted=False`` clears
        the mark.  Only this user's memories are touched; returns how many ids matched.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        if isinstance(memory_ids, str):
            raise ValidationError("memory_ids must be a list of ids, not one string")
        ids = [check_id("memory_id", m, max_len=64) for m in memory_ids]
        if not ids:
            return 0
        now = _now()
        async with self._tx() as conn:
            res = await conn.execute(gq.set_tainted(app, user, ids, tainted, now))
            if tainted:
                await conn.execute(*q.unsupersede_displaced_by(app, user, ids, now))
            if (audit := current_entry()) is not None:
                audit.row_count = int(res.rowcount or 0)
                await conn.execute(audit.insert())
        return int(res.rowcount or 0)

    @traced
    @audited(by_ids("memory_restore"))
    async def restore_superseded(self, app_name: str, user_id: str, memory_id: str) -> bool:
        """Undoes a supersession: ``memory_id`` (hidden by a newer fact or a near duplicate) is returned by search again.

        The newer memory stays as it is (taint it, or delete it, if it was the
        wrong one).  Returns ``False`` when the memory is not superseded (or not
        this user's, or deleted).  Audited as ``memory_restore`` when auditing is on.
        """
        app, user = check_id("app_name", app_name), check_id("user_id", user_id)
        memory_id = check_id("memory_id", memory_id, max_len=64)
        stmt, params = q.unsupersede(app, user, memory_id, _now())

        async def restore(conn: AsyncConnection) -> bool:
            res = await conn.execute(stmt, params)
            if (audit := current_entry()) is not None:
                audit.row_count = res.rowcount
                await conn.execute(audit.insert())
            return bool(res.rowcount)

        await self._engine()
        return await self._rerunnable_tx(restore)
