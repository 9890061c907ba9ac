"""``adk-oceanbase import-adk --redact``: the CLI import goes through the redactor and marks its rows."""

from __future__ import annotations

import asyncio

from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.cli import main
from adk_oceanbase.config import Config
from adk_oceanbase.engine import Database

APP = "cli_redact_app"


def test_cli_import_with_redact_stores_no_raw_value(tmp_path, migrated_url):
    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"

    async def make() -> None:
        async with DatabaseSessionService(url) as adk:
            s = await adk.create_session(app_name=APP, user_id="u1", session_id="s1", state={"user:mail": "ann@example.com"})
            said = types.Content(role="user", parts=[types.Part(text="call 1391 2340 017")])
            await adk.append_event(s, Event(author="user", invocation_id="i1", content=said))

    async def stored() -> tuple[list, list]:
        db = Database(Config.from_url(migrated_url))
        await db.start()
        try:
            async with db.engine.connect() as conn:
                events = (await conn.execute(text(
                    "SELECT event_json, redacted FROM session_events WHERE app_name = :a"), {"a": APP})).all()
                state = (await conn.execute(text(
                    "SELECT value_json FROM session_state WHERE app_name = :a"), {"a": APP})).scalars().all()
                return events, state
        finally:
            await db.close()

    asyncio.run(make())
    assert main(["import-adk", "--from", url, "--url", migrated_url, "--app", APP, "--redact"]) == 0
    events, state = asyncio.run(stored())
    assert [r.redacted for r in events] == [1]
    assert "[REDACTED:PHONE]" in events[0].event_json and "2340" not in events[0].event_json
    assert state == ['"[REDACTED:EMAIL]"']
