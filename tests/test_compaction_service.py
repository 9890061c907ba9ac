"""compact_session on a real server: policies, key events verbatim, summaries of summaries, no race with appends."""

from __future__ import annotations

from google.adk.events.event import Event
from google.adk.flows.llm_flows.contents import _get_contents
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.compaction import (
    BackgroundCompactor,
    ExtractiveSummarizer,
    KeepLastN,
    TokenThresholdPolicy,
    compact_session,
)

APP = "cmp_svc"
T0 = 1_750_000_000.0


def msg(i: int, author: str, body: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, invocation_id=f"inv-{i // 2}", timestamp=T0 + i,
                 content=types.Content(role=role, parts=[types.Part(text=body)]))


def call(i: int, cid: str) -> Event:
    return Event(author="assistant", invocation_id=f"inv-{i // 2}", timestamp=T0 + i,
                 content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(id=cid, name="lookup", args={"q": cid}))]))


def resp(i: int, cid: str) -> Event:
    return Event(author="assistant", invocation_id=f"inv-{i // 2}", timestamp=T0 + i,
                 content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(id=cid, name="lookup", response={"answer": f"fact-{cid}"}))]))


async def seeded(svc, n: int = 60, *, tool_at: dict[int, str] | None = None):
    s = await svc.create_session(app_name=APP, user_id="u")
    tool_at = tool_at or {}
    i = 0
    while i < n:
        if i in tool_at:
            await svc.append_event(s, call(i, tool_at[i]))
            await svc.append_event(s, resp(i + 1, tool_at[i]))
            i += 2
            continue
        author = "user" if i % 2 == 0 else "assistant"
        await svc.append_event(s, msg(i, author, f"turn {i} " + "lorem ipsum dolor " * 5))
        i += 1
    return s


async def loads(svc, sid):
    full = (await svc.get_session(app_name=APP, user_id="u", session_id=sid, include_compacted=True)).events
    live = (await svc.get_session(app_name=APP, user_id="u", session_id=sid)).events
    return full, live


async def test_extract_mode_keeps_key_events_verbatim_and_the_tail(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await seeded(svc, tool_at={10: "c1"})
    policy = TokenThresholdPolicy(low=200, high=10**6, keep_last=10)
    res = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=policy)
    assert res.compacted and res.mode == "extract" and res.covered_events == 50
    full, live = await loads(svc, s.id)
    assert len(full) == 61 and len(live) == 11
    assert live[:10] == full[50:60]  # seq order: the summary was appended last
    summary = live[-1].actions.compaction.compacted_content.parts
    joined = "\n".join(p.text for p in summary)
    assert "lookup returned" in joined and "fact-c1" in joined  # the tool result, verbatim
    assert "turn 3 " not in joined  # plain chatter elided in extract mode
    assert _get_contents(None, live, "assistant") == _get_contents(None, full, "assistant")
    again = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=policy)
    assert not again.compacted  # only the kept tail (+ summary) is live now


async def test_split_never_orphans_a_tool_response(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await seeded(svc, n=40, tool_at={29: "c9"})  # call at 29 compacted, response at 30 kept -> move split
    res = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id,
                                policy=KeepLastN(keep_last=10, min_batch=1))
    assert res.compacted and res.covered_events == 29
    full, live = await loads(svc, s.id)
    assert any(e.get_function_calls() for e in live) and any(e.get_function_responses() for e in live)
    assert _get_contents(None, live, "assistant") == _get_contents(None, full, "assistant")


async def test_summary_of_summaries_archives_the_older_summary(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await seeded(svc, n=40)
    pol = KeepLastN(keep_last=10, min_batch=5, max_summary_tokens=10)
    summ = ExtractiveSummarizer(max_chars=400)
    first = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=pol, summarizer=summ)
    assert first.compacted and first.folded_summaries == 0
    session = await svc.get_session(app_name=APP, user_id="u", session_id=s.id)
    for i in range(40, 50):
        await svc.append_event(session, msg(i, "user" if i % 2 == 0 else "assistant", f"later {i}"))
    second = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=pol, summarizer=summ)
    assert second.compacted and second.folded_summaries == 1
    full, live = await loads(svc, s.id)
    comps = [e for e in full if e.actions.compaction]
    assert len(comps) == 2 and comps[0] not in live and comps[1] in live
    assert comps[1].actions.compaction.start_timestamp == comps[0].actions.compaction.start_timestamp
    assert _get_contents(None, live, "assistant") == _get_contents(None, full, "assistant")
    async with engine_db.engine.connect() as conn:
        by = (await conn.execute(text("SELECT DISTINCT compacted_by FROM session_events WHERE session_id = :s"
                                      " AND compacted_by IS NOT NULL"), {"s": s.id})).scalars().all()
    assert len(by) == 2


class InterferingSummarizer(ExtractiveSummarizer):
    """Appends a turn through another session copy while 'the model' is summarising."""

    def __init__(self, svc, sid):
        super().__init__()
        self.svc, self.sid, self.calls = svc, sid, 0

    async def maybe_summarize_events(self, *, events):
        self.calls += 1
        if self.calls == 1:
            other = await self.svc.get_session(app_name=APP, user_id="u", session_id=self.sid)
            await self.svc.append_event(other, msg(100, "user", "a turn that raced the compactor"))
        return await super().maybe_summarize_events(events=events)


async def test_compaction_never_races_an_append(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    s = await seeded(svc, n=30)
    summ = InterferingSummarizer(svc, s.id)
    res = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id,
                                policy=KeepLastN(keep_last=5, min_batch=1), summarizer=summ)
    assert res.compacted and res.attempts == 2 and summ.calls == 2
    full, live = await loads(svc, s.id)
    assert len(full) == 32  # 30 + the racing turn + one summary: nothing lost, nothing doubled
    assert full[-1].actions.compaction and full[-2].content.parts[0].text.startswith("a turn that raced")
    assert full[-2] in live


async def test_background_compactor_runs_off_the_request_path(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0)
    a = await seeded(svc, n=30)
    b = await seeded(svc, n=8)
    bg = BackgroundCompactor(svc, KeepLastN(keep_last=10, min_batch=5))
    bg.schedule(app_name=APP, user_id="u", session_id=a.id)
    bg.schedule(app_name=APP, user_id="u", session_id=a.id)  # deduplicated while queued
    bg.schedule(app_name=APP, user_id="u", session_id=b.id)
    await bg.drain()  # waits for the queue without stopping the worker
    assert [r.compacted for r in bg.results] == [True, False]
    _, live = await loads(svc, a.id)
    assert len(live) == 11
    bg.schedule(app_name=APP, user_id="u", session_id=a.id)  # still accepting work after drain()
    await bg.close()
    assert [r.compacted for r in bg.results] == [True, False, False]


async def test_default_overlap_keeps_the_last_compacted_invocation_loaded(engine_db):
    """ADK's sliding window re-reads overlap_size invocations; the default service keeps one."""
    svc = OceanBaseSessionService(database=engine_db)
    s = await seeded(svc, n=30)
    res = await compact_session(svc, app_name=APP, user_id="u", session_id=s.id, policy=KeepLastN(keep_last=10, min_batch=1))
    full, live = await loads(svc, s.id)
    assert res.covered_events == 20 and len(live) == 13  # tail 10 + inv-9 (events 18, 19) + summary
    assert [e.invocation_id for e in live[:2]] == ["inv-9", "inv-9"]
    assert _get_contents(None, live, "assistant") == _get_contents(None, full, "assistant")


async def test_service_level_policy(engine_db):
    svc = OceanBaseSessionService(database=engine_db, compaction_overlap=0,
                                  compaction_policy=KeepLastN(keep_last=5, min_batch=1))
    s = await seeded(svc, n=20)
    res = await svc.compact_session(app_name=APP, user_id="u", session_id=s.id)
    assert res.compacted and res.covered_events == 15
    assert len((await loads(svc, s.id))[1]) == 6
