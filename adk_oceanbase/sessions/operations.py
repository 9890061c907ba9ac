"""What ``OceanBaseSessionService`` offers beyond ADK's contract: erasure, the debug archive, statistics, compaction.

A base class of the service, so each method reads like the ADK ones beside
it; the ADK contract itself stays in :mod:`.service`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from sqlalchemy.ext.asyncio import AsyncConnection

from .._lifecycle import DatabaseService
from ..audit import audited, by_ids
from ..errors import ValidationError
from ..governance import debug_archive as dbg
from ..governance import erasure
from ..governance import queries as gq
from ..telemetry import traced
from .. import validation
from . import queries as q
from . import store as st

__all__ = ["SessionOperations"]


class SessionOperations(DatabaseService):
    """Erasure, debug archive, statistics and compaction of the session service (see :class:`OceanBaseSessionService`)."""

    _debug_archive: dbg.DebugArchiveSettings | None
    _compaction_policy: Any
    _compaction_summarizer: Any

    @staticmethod
    def _ids(app_name: Any, user_id: Any, session_id: Any = None) -> tuple[str, str, str | None]:
        app = validation.check_id("app_name", app_name)
        user = validation.check_id("user_id", user_id)
        sid = None
        if session_id is not None:
            sid = validation.check_id("session_id", session_id)
        return app, user, sid

    async def stats(self, *, app_name: Optional[str] = None) -> list[dict[str, Any]]:
        """Per app (or one app): ``sessions``, ``users``, ``events``, ``tokens``; what ``adk-oceanbase stats`` prints.

        Read from the session rows' counters, so it costs one grouped scan of
        ``agent_sessions``, never of the events.
        """
        app = validation.check_id("app_name", app_name) if app_name is not None else None

        async def load(conn: AsyncConnection) -> list:
            return (await conn.execute(q.session_stats(app))).all()

        rows = await self._read(load)
        return [{k: (v if k == "app_name" else int(v)) for k, v in r._mapping.items()} for r in rows]

    @traced
    @audited(by_ids("delete_user"))
    async def delete_user_data(self, *, app_name: str, user_id: str) -> dict[str, int]:
        """Erases the user from every table in one transaction; returns rows deleted per table.

        Sessions, events (archived too), session and user state, memories,
        memory opt-out, debug archive: see :func:`adk_oceanbase.governance.delete_user_data`.
        """
        await self._engine()
        return await erasure.delete_user_data(self._db, app_name, user_id)

    async def debug_entries(
        self, *, app_name: str, user_id: str, session_id: str, tool: str | None = None, limit: int | None = None
    ) -> list[dbg.DebugEntry]:
        """The session's debug archive, oldest first; ``tool`` keeps what that tool wrote, ``limit`` the newest n."""
        app, user, sid = self._ids(app_name, user_id, session_id)
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ValidationError("limit must be a positive integer or None")

        async def read(conn: AsyncConnection) -> list:
            return (await conn.execute(gq.select_debug_entries(app, user, sid, tool=tool, limit=limit))).all()

        return [dbg.to_entry(r) for r in await self._read(read)]

    async def export_debug_jsonl(
        self, *, app_name: str, user_id: str, session_id: str, tool: str | None = None, path: str | None = None
    ) -> str:
        """The session's debug archive as JSON lines (one entry per line); also written to ``path`` when given."""
        text = dbg.to_jsonl(await self.debug_entries(app_name=app_name, user_id=user_id, session_id=session_id, tool=tool))
        if path is not None:
            await asyncio.to_thread(_write_text, path, text)
        return text

    @traced
    async def compact_session(
        self, *, app_name: str, user_id: str, session_id: str, policy: Any = None, summarizer: Any = None
    ) -> Any:
        """Compacts one session by the service's policy, off the request path (see ``compaction.compact_session``).

        Runs the compaction installed in :mod:`.store` (sessions never
        import the compaction package, which builds on them); with no
        policy given or configured, its default (``TokenThresholdPolicy()``).
        """
        return await st.compaction()(
            self,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            policy=policy or self._compaction_policy,
            summarizer=summarizer or self._compaction_summarizer,
        )


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
