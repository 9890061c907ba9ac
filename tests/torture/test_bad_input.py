"""The bad-input matrix (issue #9, item 7): every bad call gets a typed error naming the argument, and writes nothing.

Lone surrogates (``"a\\ud800b"``, half an emoji) in ids, keys, values and text;
state values that JSON would silently turn into something else (sets, tuples,
bytes, dates, decimals, UUIDs); search arguments a model's tool call might
send (unknown filter keys, a date as a string, NaN weights, ``top_k=-1``);
timestamps in milliseconds.  Each raised a raw ``UnicodeEncodeError``,
``TypeError``, ``ValueError`` or server error 1064, or was stored converted.
Runs on seekdb and on MariaDB (the numpy scoring path differs).
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Awaitable, Callable

import pytest
import pytest_asyncio
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.engine import Database
from adk_oceanbase.errors import (
    AdkOceanBaseError,
    InvalidIdentifierError,
    InvalidStateError,
    InvalidTextError,
    ValidationError,
)
from adk_oceanbase.memory import HashEmbedder, OceanBaseMemoryService, ScoreWeights, SearchFilters

from ..conftest import OUR_TABLES

BAD = "a\ud800b"  # a lone surrogate: UTF-8 cannot encode it
APP, USER = "bad", "u"


def ev(text_: str = "hello there, how are you", **kw: Any) -> Event:
    delta = kw.pop("delta", {})
    return Event(
        author=kw.pop("author", "user"),
        invocation_id="inv",
        content=types.Content(role="user", parts=[types.Part(text=text_)]),
        actions=EventActions(state_delta=delta),
        **kw,
    )


def entry(text_: str = "the user keeps two cats", **kw: Any) -> MemoryEntry:
    return MemoryEntry(author="user", content=types.Content(role="user", parts=[types.Part(text=text_)]), **kw)


class World:
    """Both services on one database, with a session and a memory in it already."""

    def __init__(self, db: Database):
        self.sessions = OceanBaseSessionService(database=db)
        self.memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder())
        self.session: Any = None

    async def seed(self) -> None:
        self.session = await self.sessions.create_session(app_name=APP, user_id=USER, state={"k": 1})
        await self.sessions.append_event(self.session, ev(delta={"k": 2}))
        await self.memory.add_memory(app_name=APP, user_id=USER, memories=[entry()])
        await self.memory.flush()

    def create(self, **kw: Any) -> Awaitable[Any]:
        return self.sessions.create_session(**{"app_name": APP, "user_id": USER, **kw})

    def append(self, event: Event) -> Awaitable[Any]:
        return self.sessions.append_event(self.session, event)

    def add(self, *entries: MemoryEntry, **kw: Any) -> Awaitable[Any]:
        return self.memory.add_memory(app_name=APP, user_id=USER, memories=list(entries), **kw)

    def search(self, query: Any = "cats", **kw: Any) -> Awaitable[Any]:
        return self.memory.search(APP, USER, query, **kw)


class _Loop(list):
    pass


def _loop() -> list:
    loop = _Loop()
    loop.append(loop)
    return loop


# (case id, call, the error it must raise, a word the message must contain)
CASES: list[tuple[str, Callable[[World], Awaitable[Any]], type[Exception], str]] = [
    # ---- ids
    ("app_name surrogate", lambda w: w.create(app_name=BAD), InvalidIdentifierError, "app_name"),
    ("user_id surrogate", lambda w: w.create(user_id=BAD), InvalidIdentifierError, "user_id"),
    ("session_id surrogate", lambda w: w.create(session_id=BAD), InvalidIdentifierError, "session_id"),
    ("get_session surrogate", lambda w: w.sessions.get_session(app_name=APP, user_id=USER, session_id=BAD),
     InvalidIdentifierError, "session_id"),
    ("list_sessions surrogate", lambda w: w.sessions.list_sessions(app_name=APP, user_id=BAD), InvalidIdentifierError, "user_id"),
    ("delete_session surrogate", lambda w: w.sessions.delete_session(app_name=BAD, user_id=USER, session_id="s"),
     InvalidIdentifierError, "app_name"),
    ("event id surrogate", lambda w: w.append(ev(id=BAD)), InvalidIdentifierError, "event id"),
    # ---- state keys and values
    ("state key surrogate", lambda w: w.create(state={BAD: 1}), InvalidStateError, "state key"),
    ("state value surrogate", lambda w: w.create(state={"k": {"deep": [BAD]}}), InvalidStateError, "'k'"),
    ("state set", lambda w: w.create(state={"k": {1, 2}}), InvalidStateError, "set"),
    ("state tuple", lambda w: w.create(state={"k": (1, 2)}), InvalidStateError, "tuple"),
    ("state bytes", lambda w: w.create(state={"k": b"x"}), InvalidStateError, "bytes"),
    ("state datetime", lambda w: w.create(state={"k": datetime.datetime(2024, 1, 1)}), InvalidStateError, "datetime"),
    ("state Decimal", lambda w: w.create(state={"user:k": decimal.Decimal("1.5")}), InvalidStateError, "Decimal"),
    ("state UUID", lambda w: w.create(state={"app:k": uuid.uuid4()}), InvalidStateError, "UUID"),
    ("state int dict key", lambda w: w.create(state={"k": {1: "x"}}), InvalidStateError, "dict key"),
    ("state NaN", lambda w: w.create(state={"k": [float("nan")]}), InvalidStateError, "nan"),
    ("state infinity", lambda w: w.create(state={"k": float("inf")}), InvalidStateError, "inf"),
    ("state contains itself", lambda w: w.create(state={"k": _loop()}), InvalidStateError, "itself"),
    ("delta set", lambda w: w.append(ev(delta={"k": {1}})), InvalidStateError, "set"),
    ("delta key surrogate", lambda w: w.append(ev(delta={"user:" + BAD: 1})), InvalidStateError, "state key"),
    # ---- event text and timestamps
    ("event text surrogate", lambda w: w.append(ev(BAD)), InvalidTextError, "event"),
    ("event author surrogate", lambda w: w.append(ev(author=BAD)), InvalidTextError, "event"),
    ("event timestamp in ms", lambda w: w.append(ev(timestamp=1.7e12)), ValidationError, "milliseconds"),
    ("event timestamp negative", lambda w: w.append(ev(timestamp=-1.0)), ValidationError, "event timestamp"),
    ("event timestamp NaN", lambda w: w.append(ev(timestamp=float("nan"))), ValidationError, "event timestamp"),
    ("event timestamp inf", lambda w: w.append(ev(timestamp=float("inf"))), ValidationError, "event timestamp"),
    # ---- memory writes
    ("memory content surrogate", lambda w: w.add(entry(BAD)), InvalidTextError, "memory content"),
    ("memory id surrogate", lambda w: w.add(entry(id=BAD)), InvalidIdentifierError, "memory id"),
    ("importance abc", lambda w: w.add(entry(), custom_metadata={"importance": "abc"}), ValidationError, "importance"),
    ("importance NaN", lambda w: w.add(entry(), custom_metadata={"importance": float("nan")}), ValidationError, "importance"),
    ("importance 2", lambda w: w.add(entry(custom_metadata={"importance": 2})), ValidationError, "importance"),
    ("topics a string", lambda w: w.add(entry(), custom_metadata={"topics": "pets"}), ValidationError, "topics"),
    ("topics numbers", lambda w: w.add(entry(), custom_metadata={"topics": [1]}), ValidationError, "topics"),
    ("metadata set", lambda w: w.add(entry(), custom_metadata={"tags": {"a"}}), ValidationError, "custom_metadata"),
    ("memory timestamp year 1", lambda w: w.add(entry(timestamp="0001-01-01T00:00:00")), ValidationError, "timestamp"),
    ("memory timestamp year 9999", lambda w: w.add(entry(timestamp="9999-01-01T00:00:00")), ValidationError, "timestamp"),
    ("ingested event in ms", lambda w: w.memory.add_events_to_memory(
        app_name=APP, user_id=USER, events=[ev(timestamp=1.7e12)]), ValidationError, "milliseconds"),
    ("ingested text surrogate", lambda w: w.memory.add_events_to_memory(
        app_name=APP, user_id=USER, events=[ev("turn with " + BAD)]), InvalidTextError, "text of event"),
    ("delete_memory id surrogate", lambda w: w.memory.delete_memory(app_name=APP, user_id=USER, memory_id=BAD),
     InvalidIdentifierError, "memory_id"),
    # ---- search arguments
    ("unknown filter key", lambda w: w.search(filters={"bogus": 1}), ValidationError, "bogus"),
    ("since as a string", lambda w: w.search(filters={"since": "2024-01-01"}), ValidationError, "since"),
    ("since in ms", lambda w: w.search(filters={"since": 1.7e12}), ValidationError, "since"),
    ("filter topics a string", lambda w: w.search(filters={"topics": "pets"}), ValidationError, "topics"),
    ("filter author a number", lambda w: w.search(filters={"author": 5}), ValidationError, "author"),
    ("filter instance bad since", lambda w: w.search(filters=SearchFilters(since="x")), ValidationError, "since"),
    ("NaN weight", lambda w: w.search(weights={"semantic": float("nan")}), ValidationError, "semantic"),
    ("negative weight", lambda w: w.search(weights={"recency": -1}), ValidationError, "recency"),
    ("unknown weight", lambda w: w.search(weights={"bogus": 1}), ValidationError, "bogus"),
    ("weight as a string", lambda w: w.search(weights={"fulltext": "0.3"}), ValidationError, "fulltext"),
    ("ScoreWeights NaN", lambda w: w.search(weights=ScoreWeights(semantic=float("nan"))), ValidationError, "semantic"),
    ("top_k -1", lambda w: w.search(top_k=-1), ValidationError, "top_k"),
    ("top_k 1.5", lambda w: w.search(top_k=1.5), ValidationError, "top_k"),
    ("top_k True", lambda w: w.search(top_k=True), ValidationError, "top_k"),
    ("top_k a million", lambda w: w.search(top_k=10**6), ValidationError, "top_k"),
    ("min_score NaN", lambda w: w.search(min_score=float("nan")), ValidationError, "min_score"),
    ("min_score a string", lambda w: w.search(min_score="0.3"), ValidationError, "min_score"),
    ("query surrogate", lambda w: w.search(BAD), InvalidTextError, "query"),
    ("query a number", lambda w: w.search(5), ValidationError, "query"),
    ("now a string", lambda w: w.search(now="yesterday"), ValidationError, "now"),
    ("search app surrogate", lambda w: w.memory.search(BAD, USER, "cats"), InvalidIdentifierError, "app_name"),
]


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request: pytest.FixtureRequest) -> Database:
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


@pytest_asyncio.fixture
async def world(db: Database) -> Any:
    w = World(db)
    await w.seed()
    yield w, db
    await w.memory.close()


async def counts(db: Database) -> dict[str, int]:
    async with db.engine.connect() as conn:
        return {t: (await conn.execute(text(f"SELECT COUNT(*) FROM {t}"))).scalar() for t in OUR_TABLES}


async def test_every_bad_call_is_typed_and_writes_nothing(world: Any) -> None:
    w, db = world
    before = await counts(db)
    wrong = {}
    for case, call, error, word in CASES:
        try:
            await call(w)
        except error as exc:
            assert isinstance(exc, AdkOceanBaseError)
            if word.lower() not in str(exc).lower():
                wrong[case] = f"message does not name {word!r}: {exc}"
        except Exception as exc:  # noqa: BLE001 - every wrong outcome is collected, then reported at once
            wrong[case] = f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:160]}"
        else:
            wrong[case] = "accepted"
        if await counts(db) != before:
            wrong[case] = f"wrote rows: {await counts(db)} vs {before}"
            before = await counts(db)
    assert wrong == {}
    # The seeded session and memory are intact and usable.
    got = await w.sessions.get_session(
        app_name=APP, user_id=USER, session_id=w.session.id, config=GetSessionConfig(num_recent_events=5)
    )
    assert got.state == {"k": 2} and len(got.events) == 1
    assert await w.search("cats", bump_access=False)
