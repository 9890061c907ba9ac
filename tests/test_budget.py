"""The SQL window-sum token budget matches a plain Python reference, summaries first, archived rows never counted."""

from __future__ import annotations

import random

import pytest
from google.adk.events.event import Event
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService, ValidationError
from adk_oceanbase.compaction import KeepLastN, compact_session, load_within_budget

APP = "budget_app"


def reference(rows, budget: int):
    """Newest live summaries that fit (contiguous), then the newest live raw events that fit (contiguous)."""
    live = [r for r in rows if r.compacted_by is None]
    summaries, left = [], budget
    for r in reversed([r for r in live if r.event_type == "compaction"]):
        if r.token_count > left:
            break
        summaries.append(r.seq)
        left -= r.token_count
    events = []
    for r in reversed([r for r in live if r.event_type != "compaction"]):
        if r.token_count > left:
            break
        events.append(r.seq)
        left -= r.token_count
    return sorted(summaries), sorted(events)


async def seed(svc, rng: random.Random, n: int):
    s = await svc.create_session(app_name=APP, user_id="u")
    for i in range(n):
        words = " ".join(rng.choice(["alpha", "beta", "数据库", "gamma", "x" * rng.randint(1, 30)]) for _ in range(rng.randint(1, 60)))
        author = "user" if i % 2 == 0 else "assistant"
        await svc.append_event(s, Event(author=author, invocation_id=f"i{i // 2}", timestamp=1_700_000_000.0 + i,
                                        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=words)])))
    return s


async def stored_rows(engine_db, sid):
    async with engine_db.engine.connect() as conn:
        return (await conn.execute(text(
            "SELECT seq, token_count, event_type, compacted_by FROM session_events WHERE session_id = :s ORDER BY seq"
        ), {"s": sid})).all()


async def test_window_sum_matches_python_reference(engine_db):
    rng = random.Random(7)
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await seed(svc, rng, 80)
    await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=KeepLastN(keep_last=50, min_batch=1))
    session = await svc.get_session(app_name=APP, user_id="u", session_id=s.id)
    for i in range(80, 100):
        await svc.append_event(session, Event(author="user", invocation_id=f"i{i}", timestamp=1_700_000_000.0 + i,
                                              content=types.Content(role="user", parts=[types.Part(text="more " * rng.randint(1, 40))])))
    await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=KeepLastN(keep_last=30, min_batch=1, max_summary_tokens=None))
    rows = await stored_rows(engine_db, s.id)
    assert sum(1 for r in rows if r.event_type == "compaction" and r.compacted_by is None) == 2
    assert any(r.compacted_by is not None for r in rows)
    live_total = sum(r.token_count for r in rows if r.compacted_by is None)
    budgets = sorted({0, 1, 5, live_total, live_total + 100} | {rng.randint(0, live_total) for _ in range(25)})
    by_seq = {r.seq: r for r in rows}
    for budget in budgets:
        got = await load_within_budget(svc, app_name=APP, user_id="u", session_id=s.id, max_tokens=budget)
        want_summaries, want_events = reference(rows, budget)
        full = {e.id: e for e in (await svc.get_session(app_name=APP, user_id="u", session_id=s.id, include_compacted=True)).events}
        assert [e.id for e in got.summaries] == [list(full)[q - 1] for q in want_summaries], budget
        assert [e.id for e in got.events] == [list(full)[q - 1] for q in want_events], budget
        assert got.used_tokens == sum(by_seq[q].token_count for q in want_summaries + want_events) <= budget
        assert got.all_events[: len(got.summaries)] == got.summaries
        assert got.dropped_events == sum(1 for r in rows if r.compacted_by is None and r.event_type != "compaction") - len(want_events)


async def test_missing_session_and_bad_budget(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    assert await load_within_budget(svc, app_name=APP, user_id="u", session_id="nope", max_tokens=10) is None
    with pytest.raises(ValidationError):
        await load_within_budget(svc, app_name=APP, user_id="u", session_id="nope", max_tokens=-1)
