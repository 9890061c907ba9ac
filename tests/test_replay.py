"""Replay at every event equals the state observed live at that point, app and user scopes included."""

from __future__ import annotations

import random

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_oceanbase import OceanBaseSessionService, SessionMissingError
from adk_oceanbase.compaction import KeepLastN, compact_session, replay_state

APP = "replay_app"


def delta_event(ts: float, delta: dict) -> Event:
    return Event(author="assistant", invocation_id=f"inv-{ts}", timestamp=ts,
                 content=types.Content(role="model", parts=[types.Part(text=f"step {ts}")]),
                 actions=EventActions(state_delta=delta))


async def test_replay_at_every_event_equals_live_state(engine_db):
    rng = random.Random(11)
    svc = OceanBaseSessionService(database=engine_db)
    sessions = {}
    for user, name in (("u1", "a"), ("u1", "b"), ("u2", "c")):
        sessions[name] = await svc.create_session(app_name=APP, user_id=user)
    observed: list[tuple[str, str, str, dict]] = []
    ts = 1_720_000_000.0
    for step in range(90):
        name = rng.choice("aab c".replace(" ", ""))
        s = sessions[name]
        delta = {}
        for _ in range(rng.randint(0, 3)):
            kind = rng.choice(["", "", "user:", "app:", "temp:"])
            key = f"{kind}k{rng.randint(0, 4)}"
            delta[key] = rng.choice([step, f"v{step}", None, {"n": [step, "深"]}, [1, 2]])
        ts += rng.choice([0.001, 0.5, 1.0])
        s = await svc.get_session(app_name=APP, user_id=s.user_id, session_id=s.id)
        ev = delta_event(ts, delta)
        await svc.append_event(s, ev)
        sessions[name] = s
        live = await svc.get_session(app_name=APP, user_id=s.user_id, session_id=s.id)
        observed.append((s.user_id, s.id, ev.id, live.state, ts))
        if step == 60:  # archiving rows must not change what replay sees
            res = await compact_session(svc, app_name=APP, user_id="u1", session_id=sessions["a"].id,
                                        policy=KeepLastN(keep_last=3, min_batch=1))
            assert res.compacted

    for user, sid, eid, state, at in observed:
        got = await replay_state(svc, app_name=APP, user_id=user, session_id=sid, event_id=eid)
        assert got.state == state, eid
        assert got.event_id == eid
        by_time = await replay_state(svc, app_name=APP, user_id=user, session_id=sid, at_time=at)
        assert by_time.state == state
    for s in sessions.values():
        now = await svc.get_session(app_name=APP, user_id=s.user_id, session_id=s.id)
        assert (await replay_state(svc, app_name=APP, user_id=s.user_id, session_id=s.id)).state == now.state


async def test_creation_state_is_the_baseline(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id="u9", state={"fixed": 1, "count": 0, "user:tier": "a", "temp:x": 1})
    first = delta_event(1_730_000_000.0, {"count": 1, "user:tier": "b"})
    await svc.append_event(s, first)
    after = await replay_state(svc, app_name=APP, user_id="u9", session_id=s.id, event_id=first.id)
    assert after.state == {"fixed": 1, "count": 1, "user:tier": "b"}
    before = await replay_state(svc, app_name=APP, user_id="u9", session_id=s.id, at_time=1_729_999_999.0)
    # create_session's values are in the log too: 'count' was 0 and the tier 'a' before the first event
    assert before.seq == 0 and before.state == {"fixed": 1, "count": 0, "user:tier": "a"}
    # another session of the same user, created later, sees the tier as it was then
    other = await svc.create_session(app_name=APP, user_id="u9", state={"user:tier": "c"})
    assert (await replay_state(svc, app_name=APP, user_id="u9", session_id=s.id, event_id=first.id)).state["user:tier"] == "b"
    assert (await replay_state(svc, app_name=APP, user_id="u9", session_id=other.id)).state == {"user:tier": "c"}


async def test_unknown_session_or_event(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    with pytest.raises(SessionMissingError):
        await replay_state(svc, app_name=APP, user_id="u", session_id="none")
    s = await svc.create_session(app_name=APP, user_id="u")
    with pytest.raises(SessionMissingError):
        await replay_state(svc, app_name=APP, user_id="u", session_id=s.id, event_id="nope")
