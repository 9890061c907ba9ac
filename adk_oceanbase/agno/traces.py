"""Agno traces and spans, with the semantics of Agno's ``MySQLDb``.

A trace is written once per span batch: a second ``upsert_trace`` of the
same trace widens its time range, takes the newer status, keeps the ids it
already had, and takes the name of the higher component (workflow > team >
agent root span > other).  The merge is done under the trace row's lock in
Python, not with ``TIMESTAMPDIFF`` over ISO text, so both engines compute
the same duration.  ``total_spans`` and ``error_count`` are counted from
the spans when read.  Span attributes (which hold prompts and outputs) and
status messages are redacted before they are written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import case, func, insert, select, update

from ..schema_agno import agno_spans as SP
from ..schema_agno import agno_traces as TR
from .core import AgnoCore, json_fields

__all__ = ["TracesMixin"]

_TRACE_COLS = [c for c in TR.c if c.name != "app_name"]
_SPAN_COLS = [c for c in SP.c if c.name not in ("app_name", "user_id")]


def _level(name: str | None, workflow_id: Any, team_id: Any, agent_id: Any) -> int:
    root = name is not None and (".run" in name or ".arun" in name)
    if not root:
        return 0
    return 3 if workflow_id else 2 if team_id else 1 if agent_id else 0


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


class TracesMixin(AgnoCore):
    """``upsert_trace`` / ``get_trace(s)`` / ``get_trace_stats`` and the spans."""

    async def upsert_trace(self, trace: Any) -> None:
        d = trace.to_dict()
        d.pop("total_spans", None)
        d.pop("error_count", None)
        d["trace_id"] = self._id("trace_id", d["trace_id"])
        for col in ("run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id"):
            d[col] = self._opt_id(col, d.get(col))
        entry = self._entry("agno_trace_write", d["user_id"], d["session_id"])

        async def work(conn: Any) -> tuple[None, int]:
            old = (await conn.execute(select(*_TRACE_COLS).where(
                TR.c.app_name == self.app_name, TR.c.trace_id == d["trace_id"]).with_for_update())).mappings().first()
            if old is None:
                await conn.execute(insert(TR).values(app_name=self.app_name, **d))
                await self._stamp_spans(conn, d["trace_id"], d["user_id"])
                return None, 1
            o = old
            start = min(o["start_time"], d["start_time"], key=_when)
            end = max(o["end_time"], d["end_time"], key=_when)
            new_level = _level(d["name"], d["workflow_id"], d["team_id"], d["agent_id"])
            old_level = _level(o["name"], o["workflow_id"], o["team_id"], o["agent_id"])
            values = {
                "start_time": start, "end_time": end, "status": d["status"],
                "duration_ms": int((_when(end) - _when(start)).total_seconds() * 1000),
                "name": d["name"] if new_level > old_level else o["name"],
                **{c: o[c] if o[c] is not None else d[c]
                   for c in ("run_id", "session_id", "user_id", "agent_id", "team_id", "workflow_id")},
            }
            await conn.execute(update(TR).where(TR.c.app_name == self.app_name, TR.c.trace_id == d["trace_id"]).values(**values))
            if o["user_id"] is None:
                await self._stamp_spans(conn, d["trace_id"], values["user_id"])
            return None, 1

        await self._write(entry, work)

    async def _stamp_spans(self, conn: Any, trace_id: str, user_id: str | None) -> None:
        """Spans written before their trace learn its user now, so erasure by user finds them."""
        if user_id is not None:
            await conn.execute(update(SP).where(SP.c.app_name == self.app_name, SP.c.trace_id == trace_id,
                                                SP.c.user_id.is_(None)).values(user_id=user_id))

    def _traces(self) -> Any:
        errors = func.coalesce(func.sum(case((SP.c.status_code == "ERROR", 1), else_=0)), 0)
        return (
            select(*_TRACE_COLS, func.count(SP.c.span_id).label("total_spans"), errors.label("error_count"))
            .select_from(TR.outerjoin(SP, (SP.c.app_name == TR.c.app_name) & (SP.c.trace_id == TR.c.trace_id)))
            .where(TR.c.app_name == self.app_name)
            .group_by(*_TRACE_COLS)
        )

    async def get_trace(self, trace_id: str | None = None, run_id: str | None = None) -> Any:
        from agno.tracing.schemas import Trace

        stmt = self._traces()
        if trace_id:
            stmt = stmt.where(TR.c.trace_id == self._id("trace_id", trace_id))
        elif run_id:
            stmt = stmt.where(TR.c.run_id == self._id("run_id", run_id))
        else:
            return None
        stmt = stmt.order_by(TR.c.start_time.desc()).limit(1)
        row = await self._read(lambda conn: _first(conn, stmt))
        return None if row is None else Trace.from_dict(_trace_dict(row))

    async def get_traces(
        self,
        run_id: str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        workflow_id: str | None = None,
        status: str | None = None,
        start_time: datetime | None = None,
        end_time: datetime | None = None,
        limit: int | None = 20,
        page: int | None = 1,
        filter_expr: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """Traces matching the filters, newest first, paged.  ``filter_expr`` is not supported (nor by ``MySQLDb``)."""
        from agno.tracing.schemas import Trace

        if filter_expr:
            raise NotImplementedError("filter_expr is not supported by OceanBaseAgnoDb (nor by Agno's MySQLDb)")
        stmt = self._traces()
        for col, value in (("run_id", run_id), ("session_id", session_id), ("agent_id", agent_id),
                           ("team_id", team_id), ("workflow_id", workflow_id), ("status", status)):
            if value:
                stmt = stmt.where(TR.c[col] == value)
        if user_id is not None:
            stmt = stmt.where(TR.c.user_id == user_id)
        if start_time:
            stmt = stmt.where(TR.c.start_time >= start_time.isoformat())
        if end_time:
            stmt = stmt.where(TR.c.end_time <= end_time.isoformat())
        offset = (page - 1) * limit if page and limit else 0
        listing = stmt.order_by(TR.c.start_time.desc()).limit(limit).offset(offset)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = (await conn.execute(listing)).mappings().all()
            total = (await conn.execute(select(func.count()).select_from(stmt.subquery()))).scalar()
            return rows, int(total or 0)

        rows, total = await self._read(read)
        return [Trace.from_dict(_trace_dict(r)) for r in rows], total

    async def get_trace_stats(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        workflow_id: str | None = None,
        start_time: datetime | None = None,
        end_time: datetime | None = None,
        limit: int | None = 20,
        page: int | None = 1,
        filter_expr: dict[str, Any] | None = None,
        group_by: str = "session",
    ) -> tuple[list[dict[str, Any]], int]:
        """Per-session trace counts, newest first; like ``MySQLDb``, only the ``session`` grouping."""
        if group_by != "session" or filter_expr:
            raise NotImplementedError("get_trace_stats supports only group_by='session' without filter_expr (as Agno's MySQLDb)")
        stmt = (
            select(TR.c.session_id, func.max(TR.c.user_id).label("user_id"), func.max(TR.c.agent_id).label("agent_id"),
                   func.max(TR.c.team_id).label("team_id"), func.max(TR.c.workflow_id).label("workflow_id"),
                   func.count(TR.c.trace_id).label("total_traces"), func.min(TR.c.created_at).label("first_trace_at"),
                   func.max(TR.c.created_at).label("last_trace_at"))
            .where(TR.c.app_name == self.app_name, TR.c.session_id.is_not(None)).group_by(TR.c.session_id)
        )
        if user_id is not None:
            stmt = stmt.where(TR.c.user_id == user_id)
        for col, value in (("workflow_id", workflow_id), ("team_id", team_id), ("agent_id", agent_id)):
            if value:
                stmt = stmt.where(TR.c[col] == value)
        if start_time:
            stmt = stmt.where(TR.c.created_at >= start_time.isoformat())
        if end_time:
            stmt = stmt.where(TR.c.created_at <= end_time.isoformat())
        offset = (page - 1) * limit if page and limit else 0
        listing = stmt.order_by(func.max(TR.c.created_at).desc()).limit(limit).offset(offset)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = (await conn.execute(listing)).mappings().all()
            total = (await conn.execute(select(func.count()).select_from(stmt.subquery()))).scalar()
            return rows, int(total or 0)

        rows, total = await self._read(read)
        out = [{**dict(r), "total_traces": int(r["total_traces"]), "first_trace_at": _when(r["first_trace_at"]),
                "last_trace_at": _when(r["last_trace_at"])} for r in rows]
        return out, total

    # ------------------------------------------------------------------ spans
    async def create_span(self, span: Any) -> None:
        await self.create_spans([span])

    async def create_spans(self, spans: Sequence[Any]) -> None:
        """Inserts spans in one transaction, each stamped with its trace's user (erasure finds it without a join)."""
        if not spans:
            return
        rows = []
        for span in spans:
            d = span.to_dict()
            d["span_id"], d["trace_id"] = self._id("span_id", d["span_id"]), self._id("trace_id", d["trace_id"])
            d["parent_span_id"] = self._opt_id("parent_span_id", d.get("parent_span_id"))
            d["attributes"], d["status_message"] = await self._redact([d.get("attributes"), d.get("status_message")])
            d["attributes"] = self._json("span attributes", d["attributes"])
            rows.append({c.name: d.get(c.name) for c in _SPAN_COLS})
        entry = self._entry("agno_span_write")

        async def work(conn: Any) -> tuple[None, int]:
            trace_ids = sorted({r["trace_id"] for r in rows})
            users = dict((await conn.execute(select(TR.c.trace_id, TR.c.user_id).where(
                TR.c.app_name == self.app_name, TR.c.trace_id.in_(trace_ids)))).all())
            await conn.execute(insert(SP), [{"app_name": self.app_name, "user_id": users.get(r["trace_id"]), **r} for r in rows])
            return None, len(rows)

        await self._write(entry, work)

    async def get_span(self, span_id: str) -> Any:
        from agno.tracing.schemas import Span

        stmt = select(*_SPAN_COLS).where(SP.c.app_name == self.app_name, SP.c.span_id == self._id("span_id", span_id))
        row = await self._read(lambda conn: _first(conn, stmt))
        return None if row is None else Span.from_dict(json_fields(row, ("attributes",)))

    async def get_spans(self, trace_id: str | None = None, parent_span_id: str | None = None, limit: int | None = 1000) -> list[Any]:
        from agno.tracing.schemas import Span

        stmt = select(*_SPAN_COLS).where(SP.c.app_name == self.app_name)
        if trace_id:
            stmt = stmt.where(SP.c.trace_id == trace_id)
        if parent_span_id:
            stmt = stmt.where(SP.c.parent_span_id == parent_span_id)
        stmt = stmt.order_by(SP.c.start_time)
        if limit:
            stmt = stmt.limit(limit)
        rows = await self._read(lambda conn: _all(conn, stmt))
        return [Span.from_dict(json_fields(r, ("attributes",))) for r in rows]


def _trace_dict(row: Any) -> dict[str, Any]:
    d = dict(row)
    d["total_spans"], d["error_count"] = int(d["total_spans"] or 0), int(d["error_count"] or 0)
    return d


async def _first(conn: Any, stmt: Any) -> Any:
    """The first row as a mapping (column name -> value), or ``None``."""
    return (await conn.execute(stmt)).mappings().first()


async def _all(conn: Any, stmt: Any) -> list[Any]:
    return list((await conn.execute(stmt)).mappings().all())
