"""Erasure, retention and audit cover the Agno tables and the Agno memories (seekdb, MariaDB)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from agno.db.schemas.evals import EvalRunRecord, EvalType
from agno.db.schemas.knowledge import KnowledgeRow
from agno.db.schemas.memory import UserMemory
from agno.run.agent import RunOutput
from agno.session import AgentSession
from agno.tracing.schemas import Span, Trace
from sqlalchemy import text

from adk_oceanbase import AuditSettings, RuleRedactor, RedactionPolicy
from adk_oceanbase.agno import AsyncOceanBaseAgnoDb
from adk_oceanbase.governance import Retention, RetentionPolicy, delete_user_data, sweep
from adk_oceanbase.memory import HashEmbedder

from ..governance._helpers import rows_of
from .conftest import FAST


async def populate(db: AsyncOceanBaseAgnoDb, user: str) -> None:
    now = datetime.now(timezone.utc)
    await db.upsert_session(AgentSession(session_id=f"s-{user}", agent_id="a1", user_id=user, session_data={"x": 1}))
    await db.upsert_run(RunOutput(run_id=f"r-{user}", session_id=f"s-{user}", agent_id="a1", content="hi"),
                        session_id=f"s-{user}", run_index=0)  # no user given: the session's is taken
    await db.upsert_user_memory(UserMemory(memory_id=f"m-{user}", memory="likes tea", user_id=user))
    await db.upsert_knowledge_content(KnowledgeRow(id=f"k-{user}", name="doc", description="d", user_id=user))
    await db.upsert_learning(f"l-{user}", "user_profile", {"a": 1}, user_id=user)
    await db.create_spans([Span(span_id=f"sp-{user}", trace_id=f"t-{user}", parent_span_id=None, name="Agent.run",
                                span_kind="INTERNAL", status_code="OK", status_message=None, start_time=now,
                                end_time=now, duration_ms=0, attributes={"input": "hi"}, created_at=now)])
    await db.upsert_trace(Trace(trace_id=f"t-{user}", name="Agent.run", status="OK", start_time=now, end_time=now,
                                duration_ms=0, total_spans=0, error_count=0, run_id=f"r-{user}", session_id=f"s-{user}",
                                user_id=user, agent_id="a1", team_id=None, workflow_id=None, created_at=now))


async def test_erasure_takes_every_agno_row_of_the_user_and_nothing_else(ours):
    await populate(ours, "u1")
    await populate(ours, "u2")
    before = await rows_of(ours.database, "agno", "u1")
    for table in ("agno_ob_sessions", "agno_ob_runs", "agent_memories", "agno_ob_knowledge", "agno_ob_learnings",
                  "agno_ob_traces", "agno_ob_spans"):
        assert before[table] == 1, table
    counts = await delete_user_data(ours.database, "agno", "u1")
    assert counts["agno_ob_sessions"] == counts["agno_ob_runs"] == counts["agno_ob_spans"] == 1
    left = await rows_of(ours.database, None, "u1")
    assert {t: n for t, n in left.items() if n and t != "audit_log"} == {}
    assert await ours.get_session("s-u2") is not None and await ours.get_user_memory("m-u2") is not None
    assert await ours.get_session("s-u1") is None and await ours.get_run("r-u1") is None


async def test_gc_sweeps_agno_sessions_with_their_runs_by_the_server_clock(ours):
    await populate(ours, "old")
    await populate(ours, "new")
    async with ours.database.engine.begin() as conn:  # 'old' was last written 40 days ago
        await conn.execute(text("UPDATE agno_ob_sessions SET touched_at = touched_at - INTERVAL 40 DAY "
                                "WHERE session_id = 's-old'"))
    policy = RetentionPolicy(Retention(session_ttl="30d"))
    dry = await sweep(ours.database, policy, dry_run=True)
    assert (dry.sessions, dry.events) == (1, 1)
    counts = await sweep(ours.database, policy)
    assert (counts.sessions, counts.events) == (1, 1)
    assert await ours.get_session("s-old") is None and await ours.get_run("r-old") is None
    assert await ours.get_session("s-new") is not None
    # an old session written again lives on (upsert moves its clock)
    async with ours.database.engine.begin() as conn:
        await conn.execute(text("UPDATE agno_ob_sessions SET touched_at = touched_at - INTERVAL 40 DAY"))
    await ours.upsert_session(AgentSession(session_id="s-new", agent_id="a1", user_id="new"))
    assert (await sweep(ours.database, policy)).sessions == 0


async def test_writes_are_audited_with_ids_only_and_redacted_before_storage(engine_db):
    policy = RedactionPolicy(RuleRedactor())
    db = AsyncOceanBaseAgnoDb(database=engine_db, embedder=HashEmbedder(), memory_settings=FAST,
                              audit=AuditSettings(actor="svc:test"), redaction=policy)
    try:
        s = AgentSession(session_id="s1", agent_id="a1", user_id="u1", created_at=int(time.time()),
                         session_data={"session_state": {"email": "ann@example.com"}})
        stored = await db.upsert_session(s)
        assert "ann@example.com" not in str(stored.session_data)
        await db.upsert_run(RunOutput(run_id="r1", session_id="s1", agent_id="a1", content="call +44 20 7946 0958"),
                            session_id="s1", user_id="u1", run_index=0)
        await db.upsert_user_memory(UserMemory(memory_id="m1", memory="mail me at ann@example.com", user_id="u1"))
        await db.delete_session("s1")
        await db.create_eval_run(EvalRunRecord(run_id="e1", eval_type=EvalType.ACCURACY, eval_data={"x": 1}))
        async with engine_db.engine.connect() as conn:
            rows = (await conn.execute(text("SELECT operation, user_id, session_id, status, actor FROM audit_log "
                                            "WHERE app_name = 'agno' ORDER BY audit_id"))).all()
            raw = " ".join(str(v) for r in (await conn.execute(text(
                "SELECT content FROM agent_memories UNION ALL SELECT run_data FROM agno_ob_runs"))).all() for v in r)
        assert [tuple(r) for r in rows] == [
            ("agno_session_upsert", "u1", "s1", "ok", "svc:test"),
            ("agno_run_upsert", "u1", "s1", "ok", "svc:test"),
            ("agno_memory_upsert", "u1", None, "ok", "svc:test"),
            ("agno_session_delete", None, "s1", "ok", "svc:test"),
            ("agno_eval_write", None, None, "ok", "svc:test"),
        ]
        assert "ann@example.com" not in raw and "[REDACTED:EMAIL]" in raw
    finally:
        await db.aclose()
