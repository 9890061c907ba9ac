"""Evals, knowledge, learnings, schema versions, metrics, traces and spans: Agno's ``SqliteDb`` and ours side by side."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from agno.db.schemas.evals import EvalFilterType, EvalRunRecord, EvalType
from agno.db.schemas.knowledge import KnowledgeRow
from agno.run.agent import RunOutput
from agno.session import AgentSession, TeamSession
from agno.tracing.schemas import Span, Trace


def ev(rid: str, name: str, agent: str | None = "a1", team: str | None = None, kind: EvalType = EvalType.ACCURACY):
    return EvalRunRecord(run_id=rid, name=name, agent_id=agent, team_id=team, model_id="m", eval_type=kind,
                         eval_data={"score": 0.9}, eval_input={"q": name})


async def test_eval_runs(both):
    for i, (agent, team, kind) in enumerate([("a1", None, EvalType.ACCURACY), (None, "t1", EvalType.PERFORMANCE),
                                             ("a2", None, EvalType.RELIABILITY)]):
        await both("create_eval_run", ev(f"e{i}", f"eval {i}", agent, team, kind))
        time.sleep(0.001)
    ref, ours = await both("get_eval_run", "e0")
    assert ours.model_dump() == ref.model_dump()
    for kw in (dict(agent_id="a1"), dict(filter_type=EvalFilterType.TEAM), dict(eval_type=[EvalType.RELIABILITY]),
               dict(sort_by="name", sort_order="asc"), dict(sort_by="name", sort_order="asc", limit=2, page=2)):
        ref, ours = await both("get_eval_runs", **kw)
        assert [e.run_id for e in ours] == [e.run_id for e in ref], kw
    ref, ours = await both("rename_eval_run", "e0", "renamed")
    assert ours.name == ref.name == "renamed"
    await both("delete_eval_runs", ["e0", "e1"])
    ref, ours = await both("get_eval_runs", deserialize=False)
    assert [e["run_id"] for e in ours[0]] == [e["run_id"] for e in ref[0]] == ["e2"] and ours[1] == ref[1] == 1


async def test_knowledge_contents_scoped_by_user(both):
    now = int(time.time())
    rows = [KnowledgeRow(id="k1", name="handbook", description="shared", linked_to="kb", created_at=now, metadata={"a": 1}),
            KnowledgeRow(id="k2", name="notes", description="alice's", user_id="alice", linked_to="kb", created_at=now + 1),
            KnowledgeRow(id="k3", name="diary", description="bob's", user_id="bob", created_at=now + 2)]
    for r in rows:
        await both("upsert_knowledge_content", r)
    ref, ours = await both("get_knowledge_content", "k1")
    assert ours.model_dump() == ref.model_dump()
    assert await both("get_knowledge_content", "k3", user_id="alice") == (None, None)
    for kw in (dict(user_id="alice", sort_by="created_at", sort_order="asc"), dict(linked_to="kb", sort_by="created_at"),
               dict(sort_by="created_at", sort_order="asc", limit=1, page=3)):
        ref, ours = await both("get_knowledge_contents", **kw)
        assert [k.id for k in ours[0]] == [k.id for k in ref[0]] and ours[1] == ref[1], kw
    await both("delete_knowledge_content", "k2", user_id="bob")  # not bob's: stays
    await both("delete_knowledge_content", "k3")
    ref, ours = await both("get_knowledge_contents", sort_by="created_at", sort_order="asc")
    assert [k.id for k in ours[0]] == [k.id for k in ref[0]] == ["k1", "k2"]


async def test_learnings_and_schema_versions(both):
    await both("upsert_learning", "l1", "user_profile", {"likes": ["tea"]}, user_id="u1", agent_id="a1")
    await both("upsert_learning", "l2", "session_context", {"goal": "trip"}, user_id="u1", session_id="s1")
    await both("upsert_learning", "l1", "user_profile", {"likes": ["tea", "jazz"]}, user_id="u1", agent_id="a1")
    ref, ours = await both("get_learning", "user_profile", user_id="u1")
    assert ours == ref == {"content": {"likes": ["tea", "jazz"]}}
    ref, ours = await both("get_learnings", user_id="u1")
    assert sorted(x["learning_id"] for x in ours) == sorted(x["learning_id"] for x in ref)
    assert await both("delete_learning", "l2") == (True, True)
    assert await both("get_learning", "session_context", user_id="u1") == (None, None)
    assert await both("get_latest_schema_version", "agno_sessions") == ("2.0.0", "2.0.0")
    await both("upsert_schema_version", "agno_sessions", "3.0.0")
    assert await both("get_latest_schema_version", "agno_sessions") == ("3.0.0", "3.0.0")


async def test_metrics_are_computed_like_agnos(both):
    yesterday = int((datetime.now(timezone.utc) - timedelta(days=1)).timestamp())
    for i, user in enumerate(["u1", "u1", "u2", None]):
        s = AgentSession(session_id=f"s{i}", agent_id="a1", user_id=user, created_at=yesterday,
                         session_data={"session_metrics": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
        await both("upsert_session", s)
        await both("upsert_run", RunOutput(run_id=f"r{i}", session_id=f"s{i}", agent_id="a1", model="gpt-x",
                                           model_provider="stub"), session_id=f"s{i}", user_id=user, run_index=0)
    await both("upsert_session", TeamSession(session_id="t1", team_id="t", user_id="u1", created_at=yesterday))
    ref, ours = await both("calculate_metrics")
    assert len(ours) == len(ref) == 3  # one bucket per user and one for sessions without a user
    key = lambda m: (str(m["date"]), m["user_id"] or "")  # noqa: E731
    fields = ("agent_sessions_count", "team_sessions_count", "agent_runs_count", "users_count", "token_metrics",
              "model_metrics", "completed")
    ref_rows, _ = both.ref.get_metrics()
    our_rows, latest = await both.db.get_metrics()
    assert latest is not None
    ours_by = {key(r): {f: r[f] for f in fields} for r in our_rows}
    assert ours_by == {key(r): {f: r[f] for f in fields} for r in ref_rows}
    ref, ours = await both("calculate_metrics")  # today has no sessions: nothing stored
    assert ours == ref == []


def trace(tid: str, name: str, start: datetime, end: datetime, **ids) -> Trace:
    return Trace(trace_id=tid, name=name, status="OK", start_time=start, end_time=end,
                 duration_ms=int((end - start).total_seconds() * 1000), total_spans=0, error_count=0,
                 run_id=ids.get("run_id"), session_id=ids.get("session_id"), user_id=ids.get("user_id"),
                 agent_id=ids.get("agent_id"), team_id=None, workflow_id=None, created_at=start)


def span(sid: str, tid: str, start: datetime, parent: str | None = None, status: str = "OK") -> Span:
    return Span(span_id=sid, trace_id=tid, parent_span_id=parent, name=f"span {sid}", span_kind="INTERNAL",
                status_code=status, status_message=None, start_time=start, end_time=start + timedelta(milliseconds=5),
                duration_ms=5, attributes={"input": "hello"}, created_at=start)


async def test_traces_merge_and_count_their_spans(both):
    t0 = datetime(2026, 11, 20, 12, 0, 0, tzinfo=timezone.utc)
    await both("upsert_trace", trace("T1", "llm.call", t0 + timedelta(seconds=1), t0 + timedelta(seconds=2),
                                     session_id="s1", user_id="u1"))
    await both("upsert_trace", trace("T1", "Agent.run", t0, t0 + timedelta(seconds=3), run_id="r1", agent_id="a1"))
    await both("upsert_trace", trace("T2", "Agent.run", t0 + timedelta(minutes=1), t0 + timedelta(minutes=2),
                                     session_id="s2", user_id="u2", agent_id="a1", run_id="r2"))
    await both("create_spans", [span("S1", "T1", t0), span("S2", "T1", t0, parent="S1", status="ERROR")])
    await both("create_span", span("S3", "T2", t0 + timedelta(minutes=1)))
    ref, ours = await both("get_trace", "T1")
    theirs, mine = ref.to_dict(), ours.to_dict()
    # SQLite computes the merged duration through julianday floats (2999.98 ms); ours is exact
    assert abs(theirs.pop("duration_ms") - mine.pop("duration_ms")) < 1 and mine == theirs
    assert (ours.total_spans, ours.error_count, ours.name, ours.duration_ms) == (2, 1, "Agent.run", 3000)
    ref, ours = await both("get_trace", run_id="r2")
    assert ours.trace_id == ref.trace_id == "T2"
    for kw in (dict(), dict(user_id="u1"), dict(agent_id="a1", limit=1, page=2), dict(session_id="s2")):
        ref, ours = await both("get_traces", **kw)
        assert [t.trace_id for t in ours[0]] == [t.trace_id for t in ref[0]] and ours[1] == ref[1], kw
    ref, ours = await both("get_trace_stats")
    assert [(s["session_id"], s["total_traces"]) for s in ours[0]] == [(s["session_id"], s["total_traces"]) for s in ref[0]]
    ref, ours = await both("get_spans", trace_id="T1")
    assert sorted(s.span_id for s in ours) == sorted(s.span_id for s in ref)
    ref, ours = await both("get_span", "S2")
    assert ours.to_dict() == ref.to_dict()
