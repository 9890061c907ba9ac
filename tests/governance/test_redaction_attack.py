"""Redaction as a boundary, tried as an attacker would: a value planted through every write path,
then every table of ours read back with SQL and searched for it (and for its digits).  On seekdb
and on MariaDB.

Each path plants its own phone number and e-mail address (numbered by the path), so a leak names
the path it came through.  The formats the README promises (full-width, look-alike letters, IDN,
zero-width characters, numbers in groups, numbers given as integers) go through the main paths too.
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from dataclasses import dataclass

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService, RedactionPolicy
from adk_oceanbase.governance.debug_archive import DebugArchiveSettings
from adk_oceanbase.importer import import_adk
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP = "attack_app"
PATHS = [
    "session state key", "session state int", "user: key", "app: nested value", "text split across parts",
    "call args key and int", "function response", "event custom_metadata", "input transcription",
    "output transcription", "event output", "agent_state", "transfer reason", "tool confirmation",
    "text blob", "image blob", "file_data uri", "part metadata", "set_model_response", "state_delta user: key",
    "temp: key, bytes and repr", "error_message", "code and its result", "thought", "memory author",
    "memory metadata keys", "memory content and topics", "imported state", "imported event",
]


def phone(i: int) -> str:
    """A mainland mobile, different per path: 1391234 + the path number."""
    return f"1391234{i:04d}"


def spaced(i: int) -> str:
    p = phone(i)
    return f"{p[:3]} {p[3:7]} {p[7:]}"


def mail(i: int) -> str:
    return f"path{i}owner@example.com"


# The promised formats, planted in text through the main paths (value -> what a leak would show).
FORMATS = {
    "ｚｈａｏ．ｌｉｎｗｅｉ＠ｅｘａｍｐｌｅ．ｃｏｍ": "zhao.linwei",
    "pеtrov.ivan@exаmple.org": "petrov.ivan",  # Cyrillic е and а
    "josé.garcía@exämple.de": "garcía",
    "wang\u200dfang77@example.net": "wangfang77",
    "510107 19880808 1234": "510107198808081234",
    "1391 2340 017": "13912340017",
    "8613912340006": "13912340006",
    "１３８００１３８０００": "13800138000",
    "415 555 0199": "4155550199",
    "4155550198": "4155550198",
    "4012.8888.8888.1881": "4012888888881881",
    "sk-proj-Zx81Qw93Lm27Rt64Yu05Io": "zx81qw93lm27rt64yu05io",
    "password: Tr0ub4dor&3": "tr0ub4dor",
}
FORMAT_TEXT = " ; ".join(FORMATS)
GROUPS = {"1391", "2340", "0199", "510107", "19880808", "4012", "8888", "1881"}  # no index term may be one of these
IMAGE = b"\x89PNG\r\n\x1a\n" + f"owner {mail(15)} {phone(15)}".encode()


@dataclass
class Badge:
    """A non-JSON object in temp: state: the debug archive stores its repr."""

    owner: str
    phone: str


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def _part(**kw) -> types.Part:
    return types.Part(**kw)


def events() -> list[Event]:
    p = spaced(4)
    split = [_part(text=f"call me on {p[:6]}"), _part(text=f"{p[6:]} please")]
    parts = split + [
        _part(function_call=types.FunctionCall(id="c1", name="save", args={mail(5): "x", "n": int(phone(5))})),
        _part(text=FORMAT_TEXT),
        _part(inline_data=types.Blob(mime_type="text/plain", data=f"note {spaced(14)}".encode())),
        _part(inline_data=types.Blob(mime_type="image/png", data=IMAGE)),
        _part(file_data=types.FileData(file_uri=f"gs://bucket/{mail(16)}/doc.pdf", mime_type="application/pdf")),
        _part(text="meta", part_metadata={"from": spaced(17)}),
        _part(executable_code=types.ExecutableCode(code=f"send('{mail(22)}')", language="PYTHON")),
        _part(code_execution_result=types.CodeExecutionResult(outcome="OUTCOME_OK", output=f"sent to {spaced(22)}")),
        _part(text=f"thinking about {mail(23)}", thought=True),
    ]
    actions = EventActions(
        state_delta={
            f"user:{mail(19)}": int(phone(19)),
            f"temp:{mail(20)}": spaced(20).encode(),
            "temp:badge": Badge(mail(20), phone(20)),
        },
        agent_state={"memo": mail(11)},
        transfer_reason=f"the user {mail(12)} asked for billing",
        requested_tool_confirmations={"c1": ToolConfirmation(hint=f"send to {mail(13)}?", payload={"to": int(phone(13))})},
        set_model_response={"final": mail(18)},
    )
    first = Event(
        author="agent", invocation_id="inv1", content=types.Content(role="model", parts=parts), actions=actions,
        custom_metadata={mail(7): int(phone(7))},
        input_transcription=types.Transcription(text=f"my number is {spaced(8)}"),
        output_transcription=types.Transcription(text=f"noted {mail(9)}"),
        output={"answer": spaced(10)},
        error_message=f"could not reach {mail(21)}",
    )
    answer = types.FunctionResponse(id="c1", name="save", response={"contact": spaced(6)})
    second = Event(author="agent", invocation_id="inv1", content=types.Content(role="user", parts=[_part(function_response=answer)]))
    return [first, second]


async def plant(db, tmp_path) -> OceanBaseSessionService:
    policy = RedactionPolicy()
    svc = OceanBaseSessionService(database=db, redaction=policy, debug_archive=DebugArchiveSettings())
    state = {
        f"note {mail(0)}": "x", "phone": int(phone(1)), f"user:{spaced(2)}": 1,
        "app:contacts": {"list": [spaced(3)]}, "formats": FORMAT_TEXT,
    }
    s = await svc.create_session(app_name=APP, user_id="u1", state=state)
    for event in events():
        await svc.append_event(s, event)

    memory = OceanBaseMemoryService(
        database=db, embedder=HashEmbedder(), settings=MemorySettings(min_turn_chars=4), redaction=policy
    )
    said = Event(author=f"agent {mail(24)}", invocation_id="m1",
                 content=types.Content(role="model", parts=[types.Part(text=f"I will remember it, {FORMAT_TEXT}")]))
    await memory.add_events_to_memory(app_name=APP, user_id="u1", events=[said], session_id="m")
    await memory.add_memory(
        app_name=APP, user_id="u1",
        memories=[MemoryEntry(author=f"{spaced(24)}", content=types.Content(parts=[types.Part(text=f"badge {mail(26)} {FORMAT_TEXT}")]))],
        custom_metadata={mail(25): int(phone(25)), "topics": [spaced(26)]},
    )
    await memory.close()

    url = f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}"
    adk = DatabaseSessionService(url)
    src = await adk.create_session(
        app_name=APP, user_id="u2", session_id="imported",
        state={f"user:{mail(27)}": 1, "app:line": spaced(27), "note": int(phone(27))},
    )
    await adk.append_event(src, Event(
        author="user", invocation_id="i2", content=types.Content(role="user", parts=[types.Part(text=f"hi {spaced(28)} {FORMAT_TEXT}")]),
        actions=EventActions(state_delta={mail(28): "y"}),
    ))
    await adk.close()
    await import_adk(url, svc)
    return svc


def _texts(value: object) -> list[str]:
    """The column value as text, plus its JSON's string leaves and keys (event_json escapes nothing, but be sure)."""
    body = value.decode("utf-8", "ignore") if isinstance(value, (bytes, bytearray)) else str(value)
    out = [body]
    try:
        out.append(json.dumps(json.loads(body), ensure_ascii=False))
    except (ValueError, TypeError):
        pass
    return out


_DIGITS = re.compile(r"\d(?:[ .\-]?\d)*")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_LOOKALIKES = str.maketrans("еаор", "eaop")  # the Cyrillic letters planted above


def readable(body: str) -> str:
    """The oracle's own normalisation (not the redactor's): NFKC, invisible characters out, look-alikes mapped."""
    return unicodedata.normalize("NFKC", body).translate(_INVISIBLE).translate(_LOOKALIKES).lower()


def leaks_in(body: str) -> list[str]:
    norm = readable(body)
    runs = {re.sub(r"\D", "", r) for r in _DIGITS.findall(norm)}
    found = []
    for i, name in enumerate(PATHS):
        if any(phone(i) in r for r in runs) or mail(i).split("@")[0] in norm:
            found.append(name)
    for value, fragment in FORMATS.items():
        if (fragment.isdigit() and any(fragment in r for r in runs)) or (not fragment.isdigit() and fragment in norm):
            found.append(value)
    if base64.b64encode(IMAGE).decode() in body:
        found.append("image blob (base64)")
    return found


async def scan(db) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Every column of every row of every table: what leaked where; and rows read per table."""
    leaks: dict[str, set[str]] = {}
    rows_read: dict[str, int] = {}
    async with db.engine.connect() as conn:
        tables = (await conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'"
        ))).scalars().all()
        for table in tables:
            result = await conn.execute(text(f"SELECT * FROM {table}"))
            columns = list(result.keys())
            rows = result.all()
            rows_read[table] = len(rows)
            for row in rows:
                for column, value in zip(columns, row):
                    if value is None:
                        continue
                    for body in _texts(value):
                        for leak in leaks_in(body):
                            leaks.setdefault(leak, set()).add(f"{table}.{column}")
    return leaks, rows_read


async def test_no_planted_value_reaches_any_table(db, tmp_path):
    svc = await plant(db, tmp_path)
    leaks, rows_read = await scan(db)
    assert leaks == {}
    # the scan read what was planted: every table the paths write to has rows
    for table in ("agent_sessions", "session_events", "session_state", "agent_memories", "memory_terms", "debug_archive"):
        assert rows_read.get(table), table

    async with db.engine.connect() as conn:
        terms = set((await conn.execute(text("SELECT term FROM memory_terms WHERE app_name = :a"), {"a": APP})).scalars())
        flags = (await conn.execute(text(
            "SELECT session_id, MIN(redacted) FROM session_events WHERE app_name = :a GROUP BY session_id"
        ), {"a": APP})).all()
        archive = (await conn.execute(text(
            "SELECT state_key, value_json FROM debug_archive WHERE app_name = :a"
        ), {"a": APP})).all()
    assert not terms & GROUPS and "redact" in terms
    assert dict(flags) == {flags[0][0]: 1, "imported": 1} and len(flags) == 2  # imported rows are marked too
    assert sorted(k for k, _ in archive) == ["temp:[REDACTED:EMAIL]", "temp:badge"]

    # what is stored still loads and validates; the shapes ADK relies on are kept
    loaded = await svc.get_session(app_name=APP, user_id="u1", session_id=flags[0][0] if flags[0][0] != "imported" else flags[1][0])
    first = loaded.events[0]
    assert first.content.parts[0].text == "call me on [REDACTED:PHONE]" and first.content.parts[1].text == "[REDACTED:PHONE] please"
    call = first.content.parts[2].function_call
    assert call.name == "save" and call.args == {"[REDACTED:EMAIL]": "x", "n": "[REDACTED:PHONE]"}
    image = first.content.parts[5].inline_data
    assert image.data == b"[REDACTED:BLOB]" and image.mime_type == "text/plain"
    assert loaded.state["phone"] == "[REDACTED:PHONE]" and loaded.state["user:[REDACTED:EMAIL]"] == "[REDACTED:PHONE]"
    await svc.close()
