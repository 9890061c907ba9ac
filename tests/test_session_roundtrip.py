"""Events come back exactly as they went in: every field, bytes, calls, compaction, microseconds."""

from __future__ import annotations

import json

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.sessions import codec
from sqlalchemy import text


def rich_event() -> Event:
    return Event(
        id="evt-rich-1",
        invocation_id="e-123",
        author="planner",
        branch="root.planner.sub",
        timestamp=1_732_233_445.123456,
        partial=False,
        turn_complete=True,
        custom_metadata={"trace": {"id": "abc", "n": [1, 2.5, None]}, "中文": "值"},
        long_running_tool_ids={"call-2"},
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Here is the chart 📈"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=bytes(range(256)))),
                types.Part(function_call=types.FunctionCall(id="call-1", name="get_weather", args={"city": "杭州", "days": 3})),
                types.Part(function_response=types.FunctionResponse(id="call-1", name="get_weather", response={"temp": 21.5})),
            ],
        ),
        actions=EventActions(
            state_delta={"k": [1, {"x": "y"}], "user:lang": "zh"},
            artifact_delta={"chart.png": 2},
            transfer_to_agent="writer",
            escalate=False,
            compaction=EventCompaction(
                start_timestamp=1_732_233_000.000001,
                end_timestamp=1_732_233_400.999999,
                compacted_content=types.Content(role="model", parts=[types.Part(text="summary of earlier turns")]),
            ),
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=12, candidates_token_count=7),
        error_code=None,
    )


async def test_every_field_round_trips(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="rt", user_id="u")
    original = rich_event()
    expected = original.model_copy(deep=True)
    await svc.append_event(s, original)
    got = await svc.get_session(app_name="rt", user_id="u", session_id=s.id)
    assert got.events == [expected]
    ev = got.events[0]
    assert ev.timestamp == 1_732_233_445.123456
    assert ev.content.parts[1].inline_data.data == bytes(range(256))
    assert ev.actions.compaction.start_timestamp == 1_732_233_000.000001
    assert got.last_update_time == 1_732_233_445.123456


async def test_analyst_columns_are_filled(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name="rt", user_id="u")
    await svc.append_event(s, rich_event())
    async with engine_db.engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT seq, event_id, invocation_id, author, branch, event_type, token_count, event_time,"
                    " JSON_UNQUOTE(JSON_EXTRACT(event_json, '$.author')) AS j_author FROM session_events"
                )
            )
        ).one()
    assert row.seq == 1 and row.event_id == "evt-rich-1" and row.invocation_id == "e-123"
    assert row.author == "planner" and row.branch == "root.planner.sub"
    assert row.event_type == "compaction" and row.token_count > 5
    assert row.event_time.isoformat() == "2024-11-21T23:57:25.123456"
    assert row.j_author == "planner"


def test_unknown_fields_from_a_newer_adk_are_tolerated():
    data = rich_event().model_dump(exclude_none=True, mode="json")
    data["some_future_field"] = {"x": 1}
    data["actions"]["future_action"] = True
    data["actions"]["compaction"]["future_nested"] = 5
    ev = codec.decode_event(json.dumps(data))
    assert ev.id == "evt-rich-1"
    assert ev.actions.compaction.compacted_content.parts[0].text == "summary of earlier turns"


async def test_timestamps_are_utc_regardless_of_server_zone(engine_db):
    """seekdb defaults to +08:00; our connections run in UTC so DATETIME columns are UTC."""
    async with engine_db.engine.connect() as conn:
        assert (await conn.execute(text("SELECT @@time_zone"))).scalar() == "+00:00"
