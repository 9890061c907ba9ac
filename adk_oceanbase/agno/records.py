"""Agno's bookkeeping tables: schema versions, daily metrics, eval runs, knowledge contents, learnings.

Each follows Agno's own SQL databases (``agno.db.mysql``; learnings, which
``MySQLDb`` leaves unimplemented, follow ``SqliteDb``).  Metrics are
computed by Agno's own pure functions (``calculate_date_metrics`` and
friends) from this store's sessions and runs, so a day's numbers are the
ones Agno's databases would report.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

from agno.db.mysql.utils import calculate_date_metrics, fetch_all_sessions_data, get_dates_to_calculate_metrics_for
from agno.db.schemas.evals import EvalFilterType, EvalRunRecord
from agno.db.schemas.knowledge import KnowledgeRow
from agno.db.utils import metrics_starting_date_from_days, validate_pagination
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.dialects.mysql import insert as upsert

from ..errors import InvalidValueError
from ..schema_agno import agno_evals as E
from ..schema_agno import agno_knowledge as K
from ..schema_agno import agno_learnings as L
from ..schema_agno import agno_metrics as MT
from ..schema_agno import agno_runs as R
from ..schema_agno import agno_sessions as S
from ..schema_agno import agno_versions as V
from ..schema_agno import AGNO_TABLES
from .core import AgnoCore, json_fields, loads, now_s, ordered, page_of, paged

__all__ = ["RecordsMixin"]

_DEFAULT_VERSION = "2.0.0"
_EVAL_JSON = ("eval_data", "eval_input")
_METRIC_JSON = ("token_metrics", "model_metrics")


def _cols(table: Any) -> list[Any]:
    return [c for c in table.c if c.name != "app_name"]


async def _first(conn: Any, stmt: Any) -> Any:
    """The first row as a mapping (column name -> value), or ``None``."""
    return (await conn.execute(stmt)).mappings().first()


async def _all(conn: Any, stmt: Any) -> list[Any]:
    return list((await conn.execute(stmt)).mappings().all())


class RecordsMixin(AgnoCore):
    """Versions, metrics, evals, knowledge and learnings."""

    # ------------------------------------------------------------------ tables and versions
    async def table_exists(self, table_name: str) -> bool:
        """Whether Agno's table of that name exists here: ours always do once the schema is set up."""
        await self._engine()
        names = {t.name for t in AGNO_TABLES} | {"agent_memories"}
        return table_name in names or table_name in {self.session_table_name, self.runs_table_name, self.memory_table_name,
                                                     self.metrics_table_name, self.eval_table_name, self.knowledge_table_name,
                                                     self.trace_table_name, self.span_table_name, self.versions_table_name,
                                                     self.learnings_table_name}

    async def get_latest_schema_version(self, table_name: str) -> str:
        stmt = select(V.c.version).where(V.c.app_name == self.app_name, V.c.table_name == table_name)
        row = await self._read(lambda conn: _first(conn, stmt))
        return (row["version"] if row is not None else None) or _DEFAULT_VERSION

    async def upsert_schema_version(self, table_name: str, version: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat()
        stmt = upsert(V).values(app_name=self.app_name, table_name=table_name, version=version, created_at=stamp, updated_at=stamp)
        stmt = stmt.on_duplicate_key_update(version=version, updated_at=stamp)

        async def work(conn: Any) -> tuple[None, int]:
            await conn.execute(stmt)
            return None, 1

        await self._write(None, work)

    # ------------------------------------------------------------------ metrics
    async def get_metrics(
        self, starting_date: date | None = None, ending_date: date | None = None, user_id: str | None = None
    ) -> tuple[list[dict[str, Any]], int | None]:
        stmt = select(*_cols(MT)).where(MT.c.app_name == self.app_name)
        latest = select(func.max(MT.c.updated_at)).where(MT.c.app_name == self.app_name)
        if starting_date:
            stmt = stmt.where(MT.c.date >= starting_date)
        if ending_date:
            stmt = stmt.where(MT.c.date <= ending_date)
        if user_id is not None:
            stmt, latest = stmt.where(MT.c.user_id == user_id), latest.where(MT.c.user_id == user_id)

        async def read(conn: Any) -> tuple[list[Any], Any]:
            rows = (await conn.execute(stmt.order_by(MT.c.date, MT.c.user_id))).mappings().all()
            return rows, (await conn.execute(latest)).scalar() if rows else None

        rows, last = await self._read(read)
        out = []
        for r in rows:
            d = json_fields(r, _METRIC_JSON)
            d["completed"] = bool(d["completed"])
            d["user_id"] = d["user_id"] or None  # '' is the bucket of sessions without a user
            out.append(d)
        return out, last

    async def calculate_metrics(self) -> list[dict[str, Any]] | None:
        """Computes daily metrics for every day without complete ones, from the sessions and runs (Agno's rules)."""

        async def days(conn: Any) -> tuple[Any, Any, Any]:
            done = (await conn.execute(select(func.max(MT.c.date)).where(
                MT.c.app_name == self.app_name, MT.c.completed == 1))).scalar()
            open_ = select(func.min(MT.c.date)).where(MT.c.app_name == self.app_name, MT.c.completed == 0)
            if done is not None:
                open_ = open_.where(MT.c.date > done)
            first = (await conn.execute(select(func.min(S.c.created_at)).where(S.c.app_name == self.app_name))).scalar()
            return done, (await conn.execute(open_)).scalar(), first

        done, earliest_open, first_session = await self._read(days)
        start = metrics_starting_date_from_days(done, earliest_open)
        if start is None and first_session is not None:
            start = datetime.fromtimestamp(first_session, tz=timezone.utc).date()
        if start is None:
            return None
        dates = get_dates_to_calculate_metrics_for(start)
        if not dates:
            return None
        lo = int(datetime.combine(dates[0], datetime.min.time(), tzinfo=timezone.utc).timestamp())
        hi = int(datetime.combine(dates[-1] + timedelta(days=1), datetime.min.time(), tzinfo=timezone.utc).timestamp())
        sessions = await self._sessions_for_metrics(lo, hi)
        per_day = fetch_all_sessions_data(sessions=sessions, dates_to_process=dates, start_timestamp=lo) or {}
        records = []
        for day in dates:
            of_day = per_day.get(day.isoformat(), {})
            if any(of_day.values()):
                records.extend(calculate_date_metrics(day, of_day))
        if not records:
            return []  # days to look at, none with sessions (Agno's databases answer the same)
        return await self._store_metrics(records)

    async def _sessions_for_metrics(self, lo: int, hi: int) -> list[dict[str, Any]]:
        stmt = select(S.c.session_id, S.c.session_type, S.c.user_id, S.c.session_data, S.c.created_at).where(
            S.c.app_name == self.app_name, S.c.created_at >= lo, S.c.created_at < hi)

        async def read(conn: Any) -> list[dict[str, Any]]:
            sessions = [json_fields(r, ("session_data",)) for r in (await conn.execute(stmt)).mappings().all()]
            if not sessions:
                return []
            runs: dict[str, list[Any]] = {}
            ids = [s["session_id"] for s in sessions]
            for i in range(0, len(ids), 500):
                for r in (await conn.execute(select(R.c.session_id, R.c.run_data).where(
                        R.c.app_name == self.app_name, R.c.session_id.in_(ids[i:i + 500])))).all():
                    run = loads(r.run_data) or {}
                    runs.setdefault(r.session_id, []).append({"model": run.get("model"), "model_provider": run.get("model_provider")})
            for s in sessions:
                s["runs"] = runs.get(s["session_id"], [])
            return sessions

        return await self._read(read)

    async def _store_metrics(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keep = ("id", "date", "created_at", "aggregation_period", "user_id")

        async def work(conn: Any) -> tuple[list[dict[str, Any]], int]:
            out = []
            for rec in records:
                values = {**rec, "completed": 1 if rec["completed"] else 0,
                          "token_metrics": self._json("metrics", rec["token_metrics"]),
                          "model_metrics": self._json("metrics", rec["model_metrics"])}
                stmt = upsert(MT).values(app_name=self.app_name, **values)
                await conn.execute(stmt.on_duplicate_key_update(**{k: v for k, v in values.items() if k not in keep}))
                row = (await conn.execute(select(*_cols(MT)).where(
                    MT.c.app_name == self.app_name, MT.c.date == rec["date"],
                    MT.c.aggregation_period == rec["aggregation_period"], MT.c.user_id == rec["user_id"]))).mappings().first()
                out.append(json_fields(row, _METRIC_JSON))
            return out, len(out)

        return await self._write(self._entry("agno_metrics_write"), work)

    # ------------------------------------------------------------------ evals
    async def create_eval_run(self, eval_run: EvalRunRecord) -> EvalRunRecord:
        d = eval_run.model_dump()
        rid = self._id("run_id", d["run_id"])
        uid = self._opt_id("user_id", d.get("user_id"))
        d["eval_data"], d["eval_input"], d["name"] = await self._redact([d.get("eval_data"), d.get("eval_input"), d.get("name")])
        stamp = now_s()
        values = {c.name: d.get(c.name) for c in _cols(E)}
        values.update(run_id=rid, user_id=uid, created_at=stamp, updated_at=stamp,
                      eval_type=getattr(d["eval_type"], "value", d["eval_type"]),
                      eval_data=self._json("eval_data", d["eval_data"]), eval_input=self._json("eval_input", d["eval_input"]))

        async def work(conn: Any) -> tuple[None, int]:
            await conn.execute(upsert(E).values(app_name=self.app_name, **values))
            return None, 1

        await self._write(self._entry("agno_eval_write", uid), work)
        return eval_run

    async def delete_eval_runs(self, eval_run_ids: list[str], user_id: str | None = None) -> None:
        ids = self._ids("eval_run_id", eval_run_ids)
        where = [E.c.app_name == self.app_name, E.c.run_id.in_(ids)]
        if user_id is not None:
            where.append(E.c.user_id == self._id("user_id", user_id))

        async def work(conn: Any) -> tuple[None, int]:
            return None, int((await conn.execute(delete(E).where(*where))).rowcount or 0)

        if ids:
            await self._write(self._entry("agno_eval_delete", user_id), work)

    def _eval_out(self, row: Any, deserialize: bool | None) -> Any:
        d = json_fields(row, _EVAL_JSON)
        return EvalRunRecord.model_validate(d) if deserialize else d

    async def get_eval_run(self, eval_run_id: str, deserialize: bool | None = True, user_id: str | None = None) -> Any:
        stmt = select(*_cols(E)).where(E.c.app_name == self.app_name, E.c.run_id == self._id("eval_run_id", eval_run_id))
        if user_id is not None:
            stmt = stmt.where(E.c.user_id == self._id("user_id", user_id))
        row = await self._read(lambda conn: _first(conn, stmt))
        return None if row is None else self._eval_out(row, deserialize)

    async def get_eval_runs(
        self,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        workflow_id: str | None = None,
        model_id: str | None = None,
        filter_type: EvalFilterType | None = None,
        eval_type: list[Any] | None = None,
        deserialize: bool | None = True,
        user_id: str | None = None,
    ) -> Any:
        validate_pagination(limit, page)
        stmt = select(*_cols(E)).where(E.c.app_name == self.app_name)
        for col, value in (("agent_id", agent_id), ("team_id", team_id), ("workflow_id", workflow_id),
                           ("model_id", model_id), ("user_id", user_id)):
            if value is not None:
                stmt = stmt.where(E.c[col] == value)
        if eval_type:
            stmt = stmt.where(E.c.eval_type.in_([getattr(t, "value", t) for t in eval_type]))
        if filter_type is not None:
            col = {EvalFilterType.AGENT: E.c.agent_id, EvalFilterType.TEAM: E.c.team_id,
                   EvalFilterType.WORKFLOW: E.c.workflow_id}[filter_type]
            stmt = stmt.where(col.is_not(None))
        listing = paged(ordered(stmt, E, sort_by, sort_order), limit, page)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = (await conn.execute(listing)).mappings().all()
            return rows, int((await conn.execute(page_of(stmt))).scalar() or 0) if rows and not deserialize else len(rows)

        rows, total = await self._read(read)
        out = [self._eval_out(r, deserialize) for r in rows]
        return out if deserialize else (out, total)

    async def rename_eval_run(
        self, eval_run_id: str, name: str, deserialize: bool | None = True, user_id: str | None = None
    ) -> Any:
        rid = self._id("eval_run_id", eval_run_id)
        where = [E.c.app_name == self.app_name, E.c.run_id == rid]
        if user_id is not None:
            where.append(E.c.user_id == self._id("user_id", user_id))
        (name,) = await self._redact([name])

        async def work(conn: Any) -> tuple[int, int]:
            n = int((await conn.execute(update(E).where(*where).values(name=name, updated_at=now_s()))).rowcount or 0)
            return n, n

        await self._write(self._entry("agno_eval_write", user_id), work)
        return await self.get_eval_run(rid, deserialize, user_id)

    async def update_eval_run_user_id(self, eval_run_id: str, user_id: str) -> None:
        rid, uid = self._id("eval_run_id", eval_run_id), self._id("user_id", user_id)

        async def work(conn: Any) -> tuple[None, int]:
            n = (await conn.execute(update(E).where(E.c.app_name == self.app_name, E.c.run_id == rid)
                                    .values(user_id=uid, updated_at=now_s()))).rowcount
            return None, int(n or 0)

        await self._write(self._entry("agno_eval_write", uid), work)

    # ------------------------------------------------------------------ knowledge
    async def upsert_knowledge_content(self, knowledge_row: KnowledgeRow) -> KnowledgeRow:
        """Inserts or updates a knowledge row; a row owned by another user is refused as not found (Agno's rule)."""
        kid = self._id("knowledge id", knowledge_row.id)
        uid = self._opt_id("user_id", knowledge_row.user_id)
        given = {c.name: getattr(knowledge_row, c.name, None) for c in _cols(K)}
        given = {k: v for k, v in given.items() if v is not None}
        given["description"], given["metadata"], given["status_message"] = await self._redact(
            [given.get("description"), given.get("metadata"), given.get("status_message")])
        given["metadata"] = self._json("knowledge metadata", given.get("metadata"))
        values = {k: v for k, v in given.items() if v is not None}
        values["id"] = kid

        async def work(conn: Any) -> tuple[None, int]:
            if uid is not None:
                owner = (await conn.execute(select(K.c.user_id).where(
                    K.c.app_name == self.app_name, K.c.id == kid).with_for_update())).first()
                if owner is not None and owner.user_id != uid:
                    raise InvalidValueError(f"Knowledge content {kid} not found")
            stmt = upsert(K).values(app_name=self.app_name, **values)
            changes = {k: v for k, v in values.items() if k != "id"}
            await conn.execute(stmt.on_duplicate_key_update(**changes) if changes else stmt.prefix_with("IGNORE"))
            return None, 1

        await self._write(self._entry("agno_knowledge_write", uid), work)
        return knowledge_row

    async def delete_knowledge_content(self, id: str, user_id: str | None = None) -> None:
        where = [K.c.app_name == self.app_name, K.c.id == self._id("knowledge id", id)]
        if user_id is not None:
            where.append(K.c.user_id == self._id("user_id", user_id))

        async def work(conn: Any) -> tuple[None, int]:
            return None, int((await conn.execute(delete(K).where(*where))).rowcount or 0)

        await self._write(self._entry("agno_knowledge_delete", user_id), work)

    def _scoped(self, stmt: Any, user_id: str | None) -> Any:
        if user_id is None:
            return stmt
        return stmt.where(or_(K.c.user_id == self._id("user_id", user_id), K.c.user_id.is_(None)))

    async def get_knowledge_content(self, id: str, user_id: str | None = None) -> KnowledgeRow | None:
        stmt = self._scoped(select(*_cols(K)).where(K.c.app_name == self.app_name, K.c.id == self._id("knowledge id", id)), user_id)
        row = await self._read(lambda conn: _first(conn, stmt))
        return None if row is None else KnowledgeRow.model_validate(json_fields(row, ("metadata",)))

    async def get_knowledge_contents(
        self,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        linked_to: str | None = None,
        user_id: str | None = None,
    ) -> tuple[list[KnowledgeRow], int]:
        validate_pagination(limit, page)
        stmt = self._scoped(select(*_cols(K)).where(K.c.app_name == self.app_name), user_id)
        if linked_to is not None:
            stmt = stmt.where(K.c.linked_to == linked_to)
        listing = paged(ordered(stmt, K, sort_by, sort_order) if sort_by else stmt, limit, page)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = (await conn.execute(listing)).mappings().all()
            return rows, int((await conn.execute(page_of(stmt))).scalar() or 0) if rows else 0

        rows, total = await self._read(read)
        return [KnowledgeRow.model_validate(json_fields(r, ("metadata",))) for r in rows], total

    # ------------------------------------------------------------------ learnings (SqliteDb's semantics)
    def _learning_where(self, **filters: Any) -> list[Any]:
        where = [L.c.app_name == self.app_name]
        for col, value in filters.items():
            if value is not None:
                where.append(L.c[col] == value)
        return where

    async def get_learning(self, learning_type: str, user_id: str | None = None, agent_id: str | None = None,
                           team_id: str | None = None, workflow_id: str | None = None, session_id: str | None = None,
                           namespace: str | None = None, entity_id: str | None = None,
                           entity_type: str | None = None) -> dict[str, Any] | None:
        where = self._learning_where(learning_type=learning_type, user_id=user_id, agent_id=agent_id, team_id=team_id,
                                     workflow_id=workflow_id, session_id=session_id, namespace=namespace,
                                     entity_id=entity_id, entity_type=entity_type)
        row = await self._read(lambda conn: _first(conn, select(L.c.content).where(*where).limit(1)))
        return None if row is None else {"content": loads(row["content"])}

    async def upsert_learning(self, id: str, learning_type: str, content: dict[str, Any], user_id: str | None = None,
                              agent_id: str | None = None, team_id: str | None = None, session_id: str | None = None,
                              namespace: str | None = None, entity_id: str | None = None,
                              entity_type: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        lid, uid = self._id("learning id", id), self._opt_id("user_id", user_id)
        content, metadata = await self._redact([content, metadata])
        body, meta, stamp = self._json("learning content", content), self._json("learning metadata", metadata), now_s()
        stmt = upsert(L).values(app_name=self.app_name, learning_id=lid, learning_type=learning_type, namespace=namespace,
                                user_id=uid, agent_id=agent_id, team_id=team_id, session_id=session_id, entity_id=entity_id,
                                entity_type=entity_type, content=body, metadata=meta, created_at=stamp, updated_at=stamp)
        stmt = stmt.on_duplicate_key_update(content=body, metadata=meta, updated_at=stamp)

        async def work(conn: Any) -> tuple[None, int]:
            await conn.execute(stmt)
            return None, 1

        await self._write(self._entry("agno_learning_write", uid, session_id), work)

    async def delete_learning(self, id: str) -> bool:
        where = [L.c.app_name == self.app_name, L.c.learning_id == self._id("learning id", id)]

        async def work(conn: Any) -> tuple[bool, int]:
            n = int((await conn.execute(delete(L).where(*where))).rowcount or 0)
            return n > 0, n

        return await self._write(self._entry("agno_learning_delete"), work)

    async def get_learnings(self, learning_type: str | None = None, user_id: str | None = None,
                            agent_id: str | None = None, team_id: str | None = None, workflow_id: str | None = None,
                            session_id: str | None = None, namespace: str | None = None, entity_id: str | None = None,
                            entity_type: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        where = self._learning_where(learning_type=learning_type, user_id=user_id, agent_id=agent_id, team_id=team_id,
                                     workflow_id=workflow_id, session_id=session_id, namespace=namespace,
                                     entity_id=entity_id, entity_type=entity_type)
        stmt = select(*_cols(L)).where(*where).order_by(L.c.updated_at.desc())
        if limit is not None:
            stmt = stmt.limit(limit)
        rows = await self._read(lambda conn: _all(conn, stmt))
        return [json_fields(r, ("content", "metadata")) for r in rows]
