"""Agno sessions (agent, team, workflow) and their runs, with the semantics of Agno's own SQL databases.

As in Agno 3.1, a session row carries no runs: the Agent writes each run
with ``upsert_run`` (one row in ``agno_ob_runs``, keyed by run id, ordered
by ``run_index``), and ``get_session`` attaches them.  A session's owner
never changes through ``upsert_session``: an upsert by another user
returns ``None`` and writes nothing (Agno's ownership rule), decided under
the session row's lock.
"""

from __future__ import annotations

from typing import Any, Sequence

from agno.db.base import SessionType
from agno.db.utils import (
    HISTORY_SKIP_STATUSES,
    SessionRunObjectCache,
    deserialize_session,
    deserialize_sessions,
    validate_pagination,
)
from agno.session import AgentSession, TeamSession, WorkflowSession
from sqlalchemy import delete, func, or_, select, text, update
from sqlalchemy.dialects.mysql import insert as upsert

from ..errors import InvalidValueError
from ..schema_agno import agno_runs as R
from ..schema_agno import agno_sessions as S
from . import queries as q
from .core import AgnoCore, json_fields, loads, now_s, ordered, page_of, paged

__all__ = ["SessionsMixin"]

_SERVER_NOW = text("CURRENT_TIMESTAMP(6)")
_SESSION_JSON = ("session_data", "agent_data", "team_data", "workflow_data", "metadata", "summary")
_TYPES = {AgentSession: ("agent", "agent_id", "agent_data"), TeamSession: ("team", "team_id", "team_data"),
          WorkflowSession: ("workflow", "workflow_id", "workflow_data")}
_COLUMNS = [c for c in S.c if c.name not in ("app_name", "touched_at")]


def _type_value(session_type: Any) -> str | None:
    return None if session_type is None else getattr(session_type, "value", session_type)


def _session_dict(row: Any) -> dict[str, Any]:
    """A session row (a mapping) as Agno's session dict, JSON columns loaded."""
    return json_fields(row, _SESSION_JSON)


def _run_json(run: Any) -> dict[str, Any]:
    return run if isinstance(run, dict) else run.to_dict()


def _with_runs(row: dict[str, Any], session: Any, deserialize: bool | None) -> Any:
    """The stored session with the caller's runs: as objects (Agno's ``SqliteDb`` hands the same ones back, not
    a copy rebuilt from their JSON: 200 runs cost ~100 ms to rebuild), or as dicts when not deserializing."""
    if not deserialize:
        return {**row, "runs": [_run_json(r) for r in session.runs or []]}
    out = deserialize_session(None, {**row, "runs": None})
    out.runs = session.runs
    return out


class SessionsMixin(AgnoCore):
    """``upsert_session`` / ``get_session`` / ``get_sessions`` / ``rename_session`` / ``delete_session(s)`` and the runs."""

    _run_cache: SessionRunObjectCache | None = None

    def _runs_cache(self) -> SessionRunObjectCache:
        """Agno's cache of run objects keyed by each run's stored text (as its ``MySQLDb`` keeps one per adapter):
        an unchanged run is not rebuilt on every read; any write changes its text and so misses."""
        if self._run_cache is None:
            self._run_cache = SessionRunObjectCache()
        return self._run_cache

    # ------------------------------------------------------------------ writing sessions
    async def _session_values(self, session: Any) -> dict[str, Any]:
        """The row of one session (checked, redacted, JSON-encoded), before any I/O."""
        kind = _TYPES.get(type(session)) or next((v for k, v in _TYPES.items() if isinstance(session, k)), None)
        if kind is None:
            raise InvalidValueError(f"not an Agno session: {type(session).__name__}")
        stype, id_col, data_col = kind
        d = session.to_dict(include_runs=False)
        payload = await self._redact([d.get(n) for n in ("session_data", data_col, "metadata", "summary")])
        values = {
            "session_id": self._id("session_id", d.get("session_id")),
            "session_type": stype,
            "user_id": self._opt_id("user_id", d.get("user_id")),
            id_col: self._opt_id(id_col, d.get(id_col)),
            "created_at": int(d.get("created_at") or now_s()),
        }
        for name, value in zip(("session_data", data_col, "metadata", "summary"), payload):
            values[name] = self._json(f"session {name}", value)
        return values

    async def _upsert_one(self, conn: Any, values: dict[str, Any], updated_at: int) -> dict[str, Any] | None:
        """Inserts or updates one session under its row lock; ``None`` when it belongs to another user."""
        found = (await conn.execute(
            select(S.c.user_id, S.c.created_at, S.c.session_type)
            .where(S.c.app_name == self.app_name, S.c.session_id == values["session_id"]).with_for_update()
        )).first()
        if found is not None and found.user_id is not None and found.user_id != values["user_id"]:
            return None
        if found is None:
            await conn.execute(upsert(S).values(app_name=self.app_name, updated_at=values["created_at"], **values))
            row = {**values, "updated_at": values["created_at"]}
        else:
            changes = {k: v for k, v in values.items() if k not in ("session_id", "session_type", "created_at")}
            await conn.execute(
                update(S).where(S.c.app_name == self.app_name, S.c.session_id == values["session_id"])
                .values(updated_at=updated_at, touched_at=_SERVER_NOW, **changes)
            )
            row = {**values, "created_at": found.created_at, "session_type": found.session_type, "updated_at": updated_at}
        out = {c.name: row.get(c.name) for c in _COLUMNS}
        for n in _SESSION_JSON:
            out[n] = loads(out[n])
        return out

    async def upsert_session(self, session: Any, deserialize: bool | None = True) -> Any:
        """Inserts or updates a session (not its runs); ``None`` when the session belongs to another user."""
        values = await self._session_values(session)
        entry = self._entry("agno_session_upsert", values["user_id"], values["session_id"])
        if entry is None:  # the per-turn path: one packet (an audited upsert needs its row count first)
            row = await self._upsert_packet(values, now_s())
        else:

            async def work(conn: Any) -> tuple[Any, int]:
                row = await self._upsert_one(conn, values, now_s())
                return row, 0 if row is None else 1

            row = await self._write(entry, work)
        if row is None:
            return None
        return _with_runs(row, session, deserialize)

    async def _upsert_packet(self, values: dict[str, Any], updated_at: int) -> dict[str, Any] | None:
        """:meth:`_upsert_one` as one packet: lock and read the owner, upsert under Agno's ownership rule, commit."""
        params = {c: values.get(c) for c in q.RAW_SESSION_COLUMNS}
        params.update(app_name=self.app_name, updated_at=updated_at)
        results = await self._write_packet(None, [(q.RAW_LOCK_SESSION, params), (q.RAW_UPSERT_SESSION, params)], 1)
        found = results[0][1]  # the owner as it was, read under the lock before the upsert
        if found and found[0][0] is not None and found[0][0] != values["user_id"]:
            return None
        row = {**values, "updated_at": values["created_at"] if not found else updated_at}
        if found:
            row.update(created_at=found[0][1], session_type=found[0][2])
        out = {c.name: row.get(c.name) for c in _COLUMNS}
        for n in _SESSION_JSON:
            out[n] = loads(out[n])
        return out

    async def upsert_sessions(
        self, sessions: Sequence[Any], deserialize: bool | None = True, preserve_updated_at: bool = False
    ) -> list[Any]:
        """Upserts many sessions in one transaction; those owned by another user are left out of the result."""
        prepared = [(s, await self._session_values(s)) for s in sessions]
        entry = self._entry("agno_session_upsert")

        async def work(conn: Any) -> tuple[list[Any], int]:
            out = []
            for s, values in prepared:
                stamp = int(s.updated_at) if preserve_updated_at and getattr(s, "updated_at", None) else now_s()
                row = await self._upsert_one(conn, values, stamp)
                if row is not None:
                    out.append(_with_runs(row, s, deserialize))
            return out, len(out)

        return await self._write(entry, work)

    # ------------------------------------------------------------------ reading sessions
    def _runs_of(self, session_ids: list[str]) -> Any:
        return (select(R.c.session_id, R.c.run_id, R.c.run_data).where(R.c.app_name == self.app_name, R.c.session_id.in_(session_ids))
                .order_by(R.c.session_id, R.c.run_index, R.c.created_at, R.c.run_id))

    def _last_runs(self, session_id: str, limit: int) -> Any:
        """The newest ``limit`` runs that count as history (top-level, not skipped), as Agno's ``runs_limit`` asks."""
        return (
            select(R.c.run_data).where(
                R.c.app_name == self.app_name, R.c.session_id == session_id, R.c.parent_run_id.is_(None),
                or_(R.c.status.is_(None), R.c.status.notin_(HISTORY_SKIP_STATUSES)),
            ).order_by(R.c.run_index.desc(), R.c.created_at.desc(), R.c.run_id.desc()).limit(limit)
        )

    async def get_session(
        self,
        session_id: str,
        session_type: SessionType | None = None,
        user_id: str | None = None,
        deserialize: bool | None = True,
        runs_limit: int | None = None,
    ) -> Any:
        """The session with its runs (the newest ``runs_limit`` history runs when given); ``None`` when missing."""
        sid, uid = self._id("session_id", session_id), self._opt_id("user_id", user_id)
        stmt = select(*_COLUMNS).where(S.c.app_name == self.app_name, S.c.session_id == sid)
        if uid is not None:
            stmt = stmt.where(S.c.user_id == uid)

        cached = bool(deserialize) and runs_limit is None and _type_value(session_type) in (None, "agent")
        raw: list[tuple[str, str]] = []
        if runs_limit is None:  # the per-turn read: session and runs in one round trip
            params = {"app": self.app_name, "sid": sid, "uid": uid}
            (_, found), (_, runs) = await self._read_batch([
                (q.RAW_GET_SESSION if uid is None else q.RAW_GET_SESSION_OF_USER, params), (q.RAW_SESSION_RUNS, params)])
            if not found:
                return None
            session = json_fields(dict(zip(q.RAW_SESSION_COLUMNS, found[0])), _SESSION_JSON)
            if cached and session["session_type"] == "agent":
                session["runs"] = None
                out = deserialize_session(session_type, session)
                out.runs = self._runs_cache().runs_from_rows(sid, [(r[0], r[1]) for r in runs])
                return out
            session["runs"] = [loads(r[1]) for r in runs]
            return deserialize_session(session_type, session) if deserialize else session

        async def read(conn: Any) -> dict[str, Any] | None:
            row = (await conn.execute(stmt)).mappings().first()
            if row is None:
                return None
            session = _session_dict(row)
            if runs_limit is not None:
                runs = [loads(r[0]) for r in (await conn.execute(self._last_runs(sid, runs_limit))).all()]
                session["runs"] = runs[::-1]
                return session
            rows = (await conn.execute(self._runs_of([sid]))).all()
            if cached and session["session_type"] == "agent":
                raw[:] = [(r.run_id, r.run_data) for r in rows]
                session["runs"] = None
            else:
                session["runs"] = [loads(r.run_data) for r in rows]
            return session

        session = await self._read(read)
        if session is None or not deserialize:
            return session
        out = deserialize_session(session_type, session)
        if session["runs"] is None:
            out.runs = self._runs_cache().runs_from_rows(sid, raw)
        return out

    async def get_sessions(
        self,
        session_type: SessionType | None = None,
        user_id: str | None = None,
        component_id: str | None = None,
        session_name: str | None = None,
        start_timestamp: int | None = None,
        end_timestamp: int | None = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
        include_runs: bool = True,
    ) -> Any:
        """Sessions matching every given filter, paged; ``(dicts, total)`` when ``deserialize=False``."""
        validate_pagination(limit, page)
        stype = _type_value(session_type)
        stmt = select(*_COLUMNS).where(S.c.app_name == self.app_name)
        if user_id is not None:
            stmt = stmt.where(S.c.user_id == self._id("user_id", user_id))
        if component_id is not None:
            cols = {"agent": S.c.agent_id, "team": S.c.team_id, "workflow": S.c.workflow_id}
            wanted = [cols[stype]] if stype in cols else list(cols.values())
            stmt = stmt.where(or_(*[c == component_id for c in wanted]))
        if start_timestamp is not None:
            stmt = stmt.where(S.c.created_at >= start_timestamp)
        if end_timestamp is not None:
            stmt = stmt.where(S.c.created_at <= end_timestamp)
        if session_name is not None:
            name = func.coalesce(func.json_unquote(func.json_extract(S.c.session_data, "$.session_name")), "")
            stmt = stmt.where(func.lower(name).contains(session_name.lower(), autoescape=True))
        if stype is not None:
            stmt = stmt.where(S.c.session_type == stype)
        listing = paged(ordered(stmt, S, sort_by, sort_order), limit, page)

        async def read(conn: Any) -> tuple[list[dict[str, Any]], int]:
            rows = [_session_dict(r) for r in (await conn.execute(listing)).mappings().all()]
            if not rows:
                return [], 0
            total = int((await conn.execute(page_of(stmt))).scalar() or 0) if not deserialize else len(rows)
            if include_runs:
                runs: dict[str, list[Any]] = {}
                for r in (await conn.execute(self._runs_of([s["session_id"] for s in rows]))).all():
                    runs.setdefault(r.session_id, []).append(loads(r.run_data))
                for s in rows:
                    s["runs"] = runs.get(s["session_id"], [])
            return rows, total

        rows, total = await self._read(read)
        return deserialize_sessions(session_type, rows) if deserialize else (rows, total)

    async def rename_session(
        self,
        session_id: str,
        session_type: SessionType | None,
        session_name: str,
        user_id: str | None = None,
        deserialize: bool | None = True,
    ) -> Any:
        """Sets ``session_data["session_name"]``; returns the renamed session, ``None`` when missing."""
        sid, uid, stype = self._id("session_id", session_id), self._opt_id("user_id", user_id), _type_value(session_type)
        if not isinstance(session_name, str):
            raise InvalidValueError(f"session_name must be a string, got {type(session_name).__name__}")
        (name,) = await self._redact([session_name])
        where = [S.c.app_name == self.app_name, S.c.session_id == sid]
        if stype is not None:
            where.append(S.c.session_type == stype)
        if uid is not None:
            where.append(S.c.user_id == uid)
        entry = self._entry("agno_session_rename", uid, sid)

        async def work(conn: Any) -> tuple[bool, int]:
            row = (await conn.execute(select(S.c.session_data).where(*where).with_for_update())).first()
            if row is None:
                return False, 0
            data = loads(row.session_data) or {}
            data["session_name"] = name
            await conn.execute(update(S).where(*where).values(
                session_data=self._json("session session_data", data), touched_at=_SERVER_NOW))
            return True, 1

        if not await self._write(entry, work):
            return None
        return await self.get_session(sid, session_type, uid, deserialize)

    # ------------------------------------------------------------------ deleting sessions
    async def delete_session(self, session_id: str, user_id: str | None = None) -> bool:
        """Deletes the session and its runs in one transaction; whether it existed (for ``user_id``, when given)."""
        return bool(await self._delete_sessions([self._id("session_id", session_id)], self._opt_id("user_id", user_id)))

    async def delete_sessions(self, session_ids: list[str], user_id: str | None = None) -> None:
        """Deletes these sessions (those of ``user_id`` when given) and their runs."""
        await self._delete_sessions(self._ids("session_id", session_ids), self._opt_id("user_id", user_id))

    async def _delete_sessions(self, sids: list[str], uid: str | None) -> int:
        if not sids:
            return 0
        where = [S.c.app_name == self.app_name, S.c.session_id.in_(sids)]
        if uid is not None:
            where.append(S.c.user_id == uid)
        entry = self._entry("agno_session_delete", uid, sids[0] if len(sids) == 1 else None)

        async def work(conn: Any) -> tuple[int, int]:
            # Runs go with the sessions actually deleted (another user's session keeps its runs).
            owned = [r[0] for r in (await conn.execute(select(S.c.session_id).where(*where).with_for_update())).all()]
            if not owned:
                return 0, 0
            for sid in owned:
                self._runs_cache().drop_session(sid)
            gone = (await conn.execute(delete(S).where(S.c.app_name == self.app_name, S.c.session_id.in_(owned)))).rowcount
            runs = (await conn.execute(delete(R).where(R.c.app_name == self.app_name, R.c.session_id.in_(owned)))).rowcount
            return int(gone or 0), int(gone or 0) + int(runs or 0)

        return await self._write(entry, work)


async def _first(conn: Any, stmt: Any) -> Any:
    """The first row as a mapping (column name -> value), or ``None``."""
    return (await conn.execute(stmt)).mappings().first()

