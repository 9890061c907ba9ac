"""Agno runs (``agno_ob_runs``): one row per run, keyed by run id, ordered in its session by ``run_index``.

As in Agno 3.1, the Agent writes each run with ``upsert_run`` after the
session; an update keeps the run's place, a new run without an index goes
last (under the session row's lock, where Agno's ``MySQLDb`` takes
``GET_LOCK``), and a run written without a user takes its session's, so
erasure by user finds it.  ``get_session`` (:mod:`.sessions`) attaches them.
"""

from __future__ import annotations

from typing import Any

from agno.db.utils import build_single_run_row, canonical_run_status, deserialize_run, validate_pagination
from agno.run.base import RunStatus
from sqlalchemy import delete, func, select
from sqlalchemy.dialects.mysql import insert as upsert

from ..schema_agno import agno_runs as R
from ..schema_agno import agno_sessions as S
from . import queries as q
from .core import AgnoCore, json_fields, ordered, page_of, paged

__all__ = ["RunsMixin"]


class RunsMixin(AgnoCore):
    """``upsert_run`` / ``get_run`` / ``get_runs`` / ``delete_run(s)``."""

    async def upsert_run(self, run: Any, session_id: str, user_id: str | None = None, run_index: int | None = None) -> None:
        """Writes one run; an update keeps the run's ``run_index``, a new run without one goes last in its session."""
        sid, uid = self._id("session_id", session_id), self._opt_id("user_id", user_id)
        row = build_single_run_row(run=run, session_id=sid, user_id=uid, run_index=run_index)
        row["run_id"] = self._id("run_id", row["run_id"])
        for col in ("agent_id", "team_id", "workflow_id", "parent_run_id"):
            row[col] = self._opt_id(col, row[col])
        row["status"] = canonical_run_status(row["status"]) if row["status"] is not None else None
        (data,) = await self._redact([row["run_data"]])
        row["run_data"] = self._json("run", data)
        entry = self._entry("agno_run_upsert", uid, sid)
        if row["user_id"] is not None and row["run_index"] is not None:  # the per-turn write: one packet
            await self._write_packet(entry, [(q.RAW_UPSERT_RUN, {"app_name": self.app_name, **row})], 1)
            return

        async def work(conn: Any) -> tuple[None, int]:
            values = dict(row)
            if values["user_id"] is None or values["run_index"] is None:
                # The session row's lock orders concurrent appends to one session (Agno's MySQLDb takes GET_LOCK).
                owner = (await conn.execute(select(S.c.user_id).where(
                    S.c.app_name == self.app_name, S.c.session_id == sid).with_for_update())).first()
                if values["user_id"] is None and owner is not None:
                    values["user_id"] = owner.user_id  # erasure finds the run by its session's user
                if values["run_index"] is None:
                    top = (await conn.execute(select(func.max(R.c.run_index)).where(
                        R.c.app_name == self.app_name, R.c.session_id == sid))).scalar()
                    values["run_index"] = 0 if top is None else top + 1
            stmt = upsert(R).values(app_name=self.app_name, **values)
            stmt = stmt.on_duplicate_key_update(
                status=stmt.inserted.status, run_data=stmt.inserted.run_data, user_id=stmt.inserted.user_id,
                parent_run_id=stmt.inserted.parent_run_id, updated_at=stmt.inserted.updated_at,
                run_index=func.coalesce(R.c.run_index, stmt.inserted.run_index),
            )
            await conn.execute(stmt)
            return None, 1

        await self._write(entry, work)

    async def get_run(self, run_id: str, deserialize: bool | None = True) -> Any:
        rid = self._id("run_id", run_id)
        stmt = select(*[c for c in R.c if c.name != "app_name"]).where(R.c.app_name == self.app_name, R.c.run_id == rid)
        row = await self._read(lambda conn: _first(conn, stmt))
        if row is None:
            return None
        record = json_fields(row, ("run_data",))
        return deserialize_run(record.get("run_type"), record["run_data"]) if deserialize else record

    async def get_runs(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        workflow_id: str | None = None,
        status: RunStatus | None = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
    ) -> Any:
        validate_pagination(limit, page)
        stmt = select(*[c for c in R.c if c.name != "app_name"]).where(R.c.app_name == self.app_name)
        for col, value in (("session_id", session_id), ("user_id", user_id), ("agent_id", agent_id),
                           ("team_id", team_id), ("workflow_id", workflow_id)):
            if value is not None:
                stmt = stmt.where(R.c[col] == value)
        if status is not None:
            stmt = stmt.where(R.c.status == canonical_run_status(status))
        if sort_by is not None:
            listing = ordered(stmt, R, sort_by, sort_order)
        else:
            listing = stmt.order_by(R.c.run_index, R.c.created_at)
        listing = paged(listing, limit, page)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = [json_fields(r, ("run_data",)) for r in (await conn.execute(listing)).mappings().all()]
            total = len(rows) if deserialize else int((await conn.execute(page_of(stmt))).scalar() or 0)
            return rows, total

        rows, total = await self._read(read)
        if deserialize:
            return [deserialize_run(r.get("run_type"), r["run_data"]) for r in rows]
        return rows, total

    async def delete_run(self, run_id: str) -> bool:
        return bool(await self._delete_runs([self._id("run_id", run_id)]))

    async def delete_runs(self, run_ids: list[str]) -> None:
        await self._delete_runs(self._ids("run_id", run_ids))

    async def _delete_runs(self, rids: list[str]) -> int:
        if not rids:
            return 0
        entry = self._entry("agno_run_delete")

        async def work(conn: Any) -> tuple[int, int]:
            n = int((await conn.execute(delete(R).where(R.c.app_name == self.app_name, R.c.run_id.in_(rids)))).rowcount or 0)
            return n, n

        return await self._write(entry, work)


async def _first(conn: Any, stmt: Any) -> Any:
    """The first row as a mapping (column name -> value), or ``None``."""
    return (await conn.execute(stmt)).mappings().first()
