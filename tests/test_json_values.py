"""State and ``custom_metadata`` either load back exactly as given or are refused with a typed error, nothing written.

Issue 24: 2,000 levels of nesting raised a raw ``RecursionError``; an event's
``custom_metadata`` holding a set was stored as a list and NaN as null; a
memory's ``custom_metadata`` tuple came back as a list.  Both engines.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import InvalidStateError, InvalidValueError, OceanBaseSessionService, ValidationError
from adk_oceanbase.jsonvalues import MAX_DEPTH

APP = "json_app"


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def nest(levels: int) -> dict:
    value: dict = {"leaf": 1.5}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


async def count(db, table: str) -> int:
    async with db.engine.connect() as conn:
        return (await conn.execute(text(f"SELECT COUNT(*) FROM {table}"))).scalar()


def event(**kw) -> Event:
    return Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]), **kw)


async def test_deep_state_at_create_is_refused_naming_the_key(db):
    svc = OceanBaseSessionService(database=db)
    with pytest.raises(InvalidStateError, match=r"key 'deep' nests deeper than 200 levels at \['a'\]"):
        await svc.create_session(app_name=APP, user_id="u", state={"deep": nest(2000)})
    assert await count(db, "agent_sessions") == 0 and await count(db, "session_state") == 0


async def test_deep_state_delta_is_refused_and_nothing_is_written(db):
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name=APP, user_id="u")
    with pytest.raises(InvalidStateError, match="nests deeper than 200 levels"):
        await svc.append_event(s, event(actions=EventActions(state_delta={"user:deep": nest(2000)})))
    assert await count(db, "session_events") == 0 and await count(db, "session_state") == 0
    assert s.events == [] and "user:deep" not in s.state


@pytest.mark.parametrize(
    "metadata, where",
    [
        ({"tags": {"a", "b"}}, r"custom_metadata at \['tags'\] holds a set"),
        ({"pair": (1, 2)}, r"custom_metadata at \['pair'\] holds a tuple"),
        ({"x": [1, float("nan")]}, r"custom_metadata at \['x'\]\[1\] is nan"),
        ({"x": float("inf")}, r"custom_metadata at \['x'\] is inf"),
        ({"raw": b"\x00"}, r"custom_metadata at \['raw'\] holds a bytes"),
        ({"deep": nest(2000)}, "custom_metadata nests deeper than 200 levels"),
    ],
    ids=["set", "tuple", "nan", "inf", "bytes", "deep"],
)
async def test_event_custom_metadata_that_would_load_differently_is_refused(db, metadata, where):
    svc = OceanBaseSessionService(database=db)
    s = await svc.create_session(app_name=APP, user_id="u")
    with pytest.raises(InvalidValueError, match=where):
        await svc.append_event(s, event(custom_metadata=metadata))
    assert await count(db, "session_events") == 0
    assert issubclass(InvalidValueError, ValidationError)


async def test_json_at_the_depth_limit_and_shared_branches_round_trip_exactly(db):
    svc = OceanBaseSessionService(database=db)
    shared = {"k": [1, 2.5, None, True, "ü"]}
    state = {"deep": nest(MAX_DEPTH - 1), "a": shared, "b": shared}  # one dict under two keys is no cycle
    s = await svc.create_session(app_name=APP, user_id="u", state=state)
    meta = {"deep": nest(MAX_DEPTH - 1), "nan_free": [0.1, -0.0, 1e308], "twice": [shared, shared]}
    appended = await svc.append_event(s, event(custom_metadata=meta, actions=EventActions(state_delta={"user:d": nest(150)})))
    loaded = await svc.get_session(app_name=APP, user_id="u", session_id=s.id)
    assert loaded.state == {**state, "user:d": nest(150)}
    assert loaded.events[-1].custom_metadata == meta and loaded.events[-1].id == appended.id


async def test_a_container_inside_itself_is_refused(db):
    svc = OceanBaseSessionService(database=db)
    loop: list = [1]
    loop.append(loop)
    with pytest.raises(InvalidStateError, match=r"contains itself"):
        await svc.create_session(app_name=APP, user_id="u", state={"loop": loop})
    assert await count(db, "agent_sessions") == 0


@pytest.mark.parametrize(
    "metadata, error",
    [({"pair": (1, 2)}, "holds a tuple"), ({"deep": nest(2000)}, "nests deeper than 200 levels"), ({"x": float("nan")}, "is nan")],
    ids=["tuple", "deep", "nan"],
)
async def test_memory_custom_metadata_is_refused_before_anything_is_written(db, metadata, error):
    from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

    mem = OceanBaseMemoryService(database=db, settings=MemorySettings(background_start=False))
    entry = MemoryEntry(author="user", content=types.Content(parts=[types.Part(text="Lin drinks green tea.")]))
    with pytest.raises(InvalidValueError, match=error):
        await mem.add_memory(app_name=APP, user_id="u", memories=[entry], custom_metadata=metadata)
    assert await count(db, "agent_memories") == 0
    await mem.close()
