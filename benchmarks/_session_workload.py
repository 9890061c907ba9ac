"""The sessions benchmarks' shared workload: seeded ADK events, the names they use, and database URLs.

Used by ``sessions.py`` and ``sessions_ab.py`` (both entry scripts), so it sits below them and neither
imports the other (issue 25: no module imports an entry script).  Imported script-style
(``from _session_workload import ...``) like ``_common``, because both scripts run as files.
"""

from __future__ import annotations

import hashlib
import random
import time
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from google.adk.events import Event, EventActions
from google.genai import types

APP = "bench_app"
AGENT = "assistant"
PACKAGES = ["google-adk", "sqlalchemy", "aiomysql", "pymysql", "pylibseekdb", "adk-oceanbase", "google-genai"]


# =========================================================================== baseline patch
BASELINE_PATCH = (
    "google.adk.sessions.database_session_service._ensure_schema_indexes_exist replaced: "
    "index presence is read with SHOW INDEX and missing indexes are created without a SAVEPOINT. "
    "Why stock fails: SQLAlchemy's MySQL reflection cannot parse OceanBase's SHOW CREATE TABLE key lines "
    "(they end in 'BLOCK_SIZE 16384 LOCAL', SAWarning 'Unknown schema content'), so get_indexes() is empty, "
    "index.create(checkfirst=True) re-issues CREATE INDEX -> 1061 duplicate key name; that DDL implicitly "
    "commits, destroying the SAVEPOINT, so ROLLBACK TO SAVEPOINT fails with 1305 'savepoint does not exist'. "
    "prepare_tables() aborts after the tables were auto-committed but before the schema_version row is written, "
    "so every later start fails with 'Schema version not found'. Query paths (create/get/list/append) are stock."
)


def patch_adk_table_setup() -> None:
    """Makes stock ``DatabaseSessionService.prepare_tables`` work on seekdb/OceanBase (setup only)."""
    from google.adk.sessions import database_session_service as dss

    def _ensure_indexes_via_show_index(connection: Any, metadata: Any) -> None:
        for table in metadata.sorted_tables:
            rows = connection.exec_driver_sql(f"SHOW INDEX FROM `{table.name}`").fetchall()
            existing = {row[2] for row in rows}  # column 3 is Key_name
            for index in table.indexes:
                if index.name not in existing:
                    index.create(bind=connection)

    dss._ensure_schema_indexes_exist = _ensure_indexes_via_show_index


# =========================================================================== workload
_WORDS = (
    "order invoice refund shipping account password reset delivery address weather forecast flight hotel "
    "booking payment card balance schedule meeting calendar reminder recipe ingredient translate summary "
    "report quarterly revenue customer ticket priority escalate deploy service latency database index query "
    "session memory agent tool result answer question please thanks could would should the a an of to in for "
    "with on at by from about status update error retry timeout region cluster tenant vector search"
).split()
_CJK = ["请帮我查询订单状态", "明天上海的天气怎么样", "これは日本語のテストです", "감사합니다 확인했습니다", "数据库索引优化建议"]
_TOOLS = ("lookup_order", "get_weather", "search_docs", "create_ticket", "convert_currency")


class Workload:
    """Seeded, realistic ADK events: a turn is user text, a tool call, its response, and a model answer.

    Every fourth turn's answer carries a ``state_delta`` with session, ``user:`` and ``temp:`` keys
    (``temp:`` is stripped by both services).  Event ids and invocation ids come from the seed, so
    both services receive byte-identical events; only the timestamp is set at append time.
    """

    def __init__(self, seed: int, stream: str):
        digest = hashlib.sha256(f"{seed}:{stream}".encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.turn = 0
        self._buffer: list[Event] = []

    def _text(self, lo: int, hi: int) -> str:
        words = [self.rng.choice(_WORDS) for _ in range(self.rng.randint(lo, hi))]
        if self.rng.random() < 0.1:
            words.insert(self.rng.randrange(len(words) + 1), self.rng.choice(_CJK))
        return " ".join(words).capitalize() + "."

    def _id(self) -> str:
        return "%032x" % self.rng.getrandbits(128)

    def _next_turn(self) -> list[Event]:
        self.turn += 1
        inv = "e-" + self._id()[:24]
        tool = self.rng.choice(_TOOLS)
        call_id = "adk-" + self._id()[:20]
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=self.rng.randint(200, 4000), candidates_token_count=self.rng.randint(20, 400)
        )
        user = Event(
            id=self._id(), invocation_id=inv, author="user",
            content=types.Content(role="user", parts=[types.Part(text=self._text(8, 60))]),
        )
        call = Event(
            id=self._id(), invocation_id=inv, author=AGENT, usage_metadata=usage,
            content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                id=call_id, name=tool, args={"query": self._text(2, 8), "limit": self.rng.randint(1, 20)}))]),
        )
        resp = Event(
            id=self._id(), invocation_id=inv, author=AGENT,
            content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                id=call_id, name=tool,
                response={"status": "ok", "items": [self._text(4, 16) for _ in range(self.rng.randint(1, 4))]}))]),
        )
        delta: dict[str, Any] = {}
        if self.turn % 4 == 0:
            delta = {
                "turn_count": self.turn,
                "last_tool": tool,
                "user:preferred_language": self.rng.choice(["en", "zh", "ja"]),
                "temp:scratch": self._text(2, 4),
            }
        answer = Event(
            id=self._id(), invocation_id=inv, author=AGENT, usage_metadata=usage,
            content=types.Content(role="model", parts=[types.Part(text=self._text(30, 250))]),
            actions=EventActions(state_delta=delta),
        )
        return [user, call, resp, answer]

    def take(self, n: int) -> list[Event]:
        """The next ``n`` events of the conversation (turns may be split across calls)."""
        while len(self._buffer) < n:
            self._buffer.extend(self._next_turn())
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def initial_state(self, i: int) -> dict[str, Any]:
        return {"topic": self.rng.choice(_WORDS), "n": i, "user:name": f"user-{i % 7}", "temp:boot": True}


def fresh(event: Event) -> Event:
    """A private copy stamped 'now' (done outside timed regions, identically for both services)."""
    ev = event.model_copy(deep=True)
    ev.timestamp = time.time()
    return ev


def split_url(url: str) -> tuple[str, int, str, str | None]:
    parts = urlsplit(url)
    return (
        parts.hostname or "127.0.0.1",
        parts.port or 2881,
        unquote(parts.username) if parts.username else "root",
        unquote(parts.password) if parts.password is not None else None,
    )


def build_url(scheme: str, host: str, port: int, user: str, password: str | None, db: str) -> str:
    auth = quote(user, safe="")
    if password:
        auth += ":" + quote(password, safe="")
    return f"{scheme}://{auth}@{host}:{port}/{db}"
