"""Several writers, each with its own service (own connection pool, as separate processes would be)."""

from __future__ import annotations

import asyncio

from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_oceanbase import Config, OceanBaseSessionService

WRITERS = 6
PER_WRITER = 15


def ev(text_: str, **delta) -> Event:
    return Event(author="user", content=types.Content(role="user", parts=[types.Part(text=text_)]), actions=EventActions(state_delta=delta))


async def test_concurrent_writers_on_one_session_lose_and_duplicate_nothing(engine_migrated_url, engine_db):
    owner = OceanBaseSessionService(database=engine_db)
    s = await owner.create_session(app_name="cc", user_id="u", state={"user:counter": 0})
    services = [OceanBaseSessionService(config=Config.from_url(engine_migrated_url, pool_size=2)) for _ in range(WRITERS)]
    stale_hits = 0

    async def writer(w: int, svc: OceanBaseSessionService) -> None:
        nonlocal stale_hits
        done = 0
        while done < PER_WRITER:
            session = await svc.get_session(app_name="cc", user_id="u", session_id=s.id)
            counter = session.state["user:counter"]
            try:
                # read-modify-write of a user: key is safe because the append is a compare-and-set
                await svc.append_event(session, ev(f"w{w}-{done}", **{"user:counter": counter + 1}))
                done += 1
            except StaleSessionError:
                stale_hits += 1

    try:
        await asyncio.gather(*(writer(i, svc) for i, svc in enumerate(services)))
    finally:
        for svc in services:
            await svc.close()
    got = await owner.get_session(app_name="cc", user_id="u", session_id=s.id)
    texts = [e.content.parts[0].text for e in got.events]
    assert len(texts) == WRITERS * PER_WRITER
    assert len(set(texts)) == len(texts)
    assert set(texts) == {f"w{w}-{i}" for w in range(WRITERS) for i in range(PER_WRITER)}
    assert got.state["user:counter"] == WRITERS * PER_WRITER
    # each writer's own events stay in its own order
    for w in range(WRITERS):
        mine = [t for t in texts if t.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(PER_WRITER)]
    assert stale_hits > 0, "writers raced, so some must have been told their copy was stale"


async def test_sessions_of_one_user_write_different_user_keys_concurrently(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    sessions = [await svc.create_session(app_name="cc", user_id="u") for _ in range(8)]
    await asyncio.gather(*(svc.append_event(s, ev("x", **{f"user:k{i}": i})) for i, s in enumerate(sessions)))
    assert await svc.get_user_state(app_name="cc", user_id="u") == {f"k{i}": i for i in range(8)}


async def test_stale_append_writes_nothing(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="cc", user_id="u")
    a = await svc.get_session(app_name="cc", user_id="u", session_id=s.id)
    b = await svc.get_session(app_name="cc", user_id="u", session_id=s.id)
    await svc.append_event(a, ev("first"))
    try:
        await svc.append_event(b, ev("second", **{"user:leak": 1, "app:leak": 1}))
    except StaleSessionError:
        pass
    else:  # pragma: no cover - the assertion below explains
        raise AssertionError("stale append was accepted")
    assert await svc.get_user_state(app_name="cc", user_id="u") == {}
    got = await svc.get_session(app_name="cc", user_id="u", session_id=s.id)
    assert "app:leak" not in got.state and len(got.events) == 1
    assert b.events == []  # the caller's stale copy was not modified


async def test_markerless_session_copy_is_checked_against_storage(engine_db):
    """A Session built by hand (no storage marker) falls back to ADK's timestamp + last-event check."""
    from google.adk.sessions.session import Session

    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="cc", user_id="u")
    await svc.append_event(s, ev("one"))
    handmade = Session(id=s.id, app_name="cc", user_id="u", events=list(s.events), last_update_time=s.last_update_time)
    await svc.append_event(handmade, ev("two"))
    outdated = Session(id=s.id, app_name="cc", user_id="u", events=[], last_update_time=0.0)
    try:
        await svc.append_event(outdated, ev("three"))
    except StaleSessionError:
        pass
    else:  # pragma: no cover
        raise AssertionError("outdated hand-made session was accepted")
    got = await svc.get_session(app_name="cc", user_id="u", session_id=s.id)
    assert [e.content.parts[0].text for e in got.events] == ["one", "two"]
