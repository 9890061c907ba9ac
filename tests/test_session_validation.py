"""Bad input gets a typed error, nothing is written, and the caller's objects are untouched."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import (
    Config,
    EventTooLargeError,
    InvalidIdentifierError,
    InvalidStateError,
    OceanBaseSessionService,
    ValidationError,
)
from adk_oceanbase.engine import Database


async def count_rows(engine_db, table: str) -> int:
    async with engine_db.engine.connect() as conn:
        return (await conn.execute(text(f"SELECT COUNT(*) FROM {table}"))).scalar()


def ev(text_: str = "hi", **delta) -> Event:
    return Event(author="user", content=types.Content(role="user", parts=[types.Part(text=text_)]), actions=EventActions(state_delta=delta))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"app_name": "", "user_id": "u"},
        {"app_name": "a", "user_id": ""},
        {"app_name": "a", "user_id": "u", "session_id": "x" * 129},
        {"app_name": "a" * 129, "user_id": "u"},
        {"app_name": "a", "user_id": None},
    ],
)
async def test_bad_ids_raise_and_write_nothing(engine_db, kwargs):
    svc = OceanBaseSessionService(database=engine_db)
    with pytest.raises(InvalidIdentifierError):
        await svc.create_session(**kwargs)
    assert await count_rows(engine_db, "agent_sessions") == 0


async def test_non_json_state_at_create_writes_nothing(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    with pytest.raises(InvalidStateError):
        await svc.create_session(app_name="a", user_id="u", state={"ok": 1, "user:bad": object()})
    assert await count_rows(engine_db, "agent_sessions") == 0
    assert await count_rows(engine_db, "session_state") == 0


async def test_non_json_state_delta_leaves_storage_and_session_untouched(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="a", user_id="u", state={"k": 1})
    bad = ev("x", k=2, fn=lambda: None)
    with pytest.raises(InvalidStateError):
        await svc.append_event(s, bad)
    assert s.state == {"k": 1} and s.events == []
    got = await svc.get_session(app_name="a", user_id="u", session_id=s.id)
    assert got.state == {"k": 1} and got.events == []
    # the session is still appendable afterwards (no half-written revision)
    await svc.append_event(s, ev("fine", k=3))
    assert (await svc.get_session(app_name="a", user_id="u", session_id=s.id)).state == {"k": 3}


async def test_oversized_event_is_rejected(engine_migrated_url):
    db = Database(Config.from_url(engine_migrated_url, max_event_bytes=10_000))
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name="big", user_id="u")
    with pytest.raises(EventTooLargeError) as info:
        await svc.append_event(s, ev("x" * 20_000))
    assert "max_event_bytes" in str(info.value)
    assert s.events == []
    got = await svc.get_session(app_name="big", user_id="u", session_id=s.id)
    assert got.events == []
    await svc.delete_session(app_name="big", user_id="u", session_id=s.id)
    await db.close()


async def test_overlong_state_key_and_event_id(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="a", user_id="u")
    with pytest.raises(InvalidStateError):
        await svc.append_event(s, ev("x", **{"k" * 300: 1}))
    long_id = ev("x")
    long_id.id = "e" * 200
    with pytest.raises(InvalidIdentifierError):
        await svc.append_event(s, long_id)
    assert await count_rows(engine_db, "session_events") == 0


async def test_bad_page_arguments(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    with pytest.raises(ValidationError):
        await svc.list_sessions_page(app_name="a", limit=0)
    with pytest.raises(ValidationError):
        await svc.list_sessions_page(app_name="a", cursor="not-a-cursor")


def test_errors_are_also_adk_and_value_errors():
    from google.adk.errors import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError

    from adk_oceanbase import AdkOceanBaseError, SessionAlreadyExistsError, SessionMissingError, StaleSessionConflictError

    assert issubclass(StaleSessionConflictError, StaleSessionError)
    assert issubclass(SessionAlreadyExistsError, AlreadyExistsError)
    assert issubclass(SessionMissingError, SessionNotFoundError)
    for cls in (InvalidStateError, InvalidIdentifierError, EventTooLargeError):
        assert issubclass(cls, AdkOceanBaseError) and issubclass(cls, ValueError)
