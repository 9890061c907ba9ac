"""What the retention attack tests share: both engines, dated turns, direct SQL reads and backdating."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone

import pytest
from google.adk.events.event import Event
from google.genai import types
from sqlalchemy import text

DAY = 86400.0


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    """A migrated, emptied database on seekdb, then on MariaDB."""
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def utc(epoch: float) -> datetime:
    """Naive UTC, as DATETIME(6) columns hold it."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(tzinfo=None)


def turn(said: str, ts: float | None = None, author: str = "user") -> Event:
    """A text turn; ``ts`` is the client's timestamp for it (default: now)."""
    return Event(id=str(uuid.uuid4()), author=author, invocation_id="inv",
                 timestamp=time.time() if ts is None else ts,
                 content=types.Content(role="user", parts=[types.Part(text=said)]))


async def scalar(db, sql: str, **params):
    async with db.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).scalar()


async def rows(db, sql: str, **params) -> list[tuple]:
    async with db.engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(sql), params)).all()]


async def execute(db, sql: str, **params) -> None:
    async with db.engine.begin() as conn:
        await conn.execute(text(sql), params)
