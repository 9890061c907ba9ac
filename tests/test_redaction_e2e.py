"""Redaction at the persistence boundary, end to end: a corpus of known PII goes through sessions,
the Runner (tools, state, ADK's own compaction), the service's compaction, replay and memory
(turns, explicit memories, LLM-extracted facts); then every column of every table is scanned
and none of it is there.  On seekdb and on MariaDB."""

from __future__ import annotations

import json

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService, RedactionPolicy, RuleRedactor
from adk_oceanbase.compaction import ExtractiveSummarizer, KeepLastN, replay_state
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.memory.extraction import LlmExtractor
from adk_oceanbase.redaction import Redactor

from .fakes import ScriptedLlm, call_reply, has_function_response, text_reply

APP, PLAIN = "gov_app", "plain_app"

# Each PII value with the fragments the scan looks for: the value as written, and the forms a
# leak could take after JSON, stemming or digit extraction (compared case-insensitively).
PII = {
    "zhao.linwei8821@example.com": ["linwei8821"],
    "+86 138 0013 8000": ["138 0013 8000", "13800138000"],
    "13912345678": ["13912345678"],
    "+1 (415) 555-0132": ["555-0132", "5550132"],
    "11010519491231002X": ["11010519491231002x"],
    "4111 1111 1111 1111": ["4111 1111 1111 1111", "4111111111111111"],
    "6222020200112233446": ["6222020200112233446"],
    "192.168.10.254": ["192.168.10.254", "168 10 254"],
    "2001:db8:85a3::8a2e:370:7334": ["8a2e:370:7334", "8a2e 370 7334"],
    "EMP-482913": ["482913"],
    "Bluebird": ["bluebird"],
}
EMAIL, PHONE, MOBILE, US_PHONE, ID_CARD, CARD, UNIONPAY, IPV4, IPV6, EMPLOYEE, PROJECT = PII
KEPT = "keep.me.plain@example.org"  # the same kind of value in the app whose mode is "off"

POLICY = RedactionPolicy(
    RuleRedactor(patterns={"EMPLOYEE_ID": r"EMP-\d{6}"}, dictionaries={"PROJECT": ["Bluebird"]}),
    modes={PLAIN: "off"},
)


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def save_contact(email: str, card: str, tool_context: ToolContext) -> dict:
    """Saves the user's contact details."""
    tool_context.state["user:card"] = card
    tool_context.state["contact"] = {"email": email, "phones": [PHONE, US_PHONE]}
    return {"saved": email, "from_ip": IPV4, "employee": EMPLOYEE}


def script(request) -> types.Content:
    """The model answers with PII of its own (it knows the user's details from elsewhere)."""
    if has_function_response(request):
        return text_reply(f"Saved. I will call {US_PHONE}; your ID {ID_CARD} is on file for {PROJECT}.")
    said = request.contents[-1].parts[0].text or ""
    if "save" in said:
        return call_reply("save_contact", email=EMAIL, card=CARD)
    return text_reply(f"Noted, mobile {MOBILE}, server {IPV6}.")


TURNS = [
    f"My phone is {PHONE} and my mail is {EMAIL}",
    f"save my card {CARD} please",
    f"我的手机是{MOBILE}谢谢，银联卡{UNIONPAY}",
    f"I work on {PROJECT} as {EMPLOYEE} from {IPV4}",
]


async def run_conversation(svc: OceanBaseSessionService, model: ScriptedLlm) -> str:
    agent = LlmAgent(name="assistant", model=model, tools=[save_contact], instruction="Be brief.")
    compaction = EventsCompactionConfig(
        compaction_interval=2, overlap_size=1, summarizer=ExtractiveSummarizer(prefix=f"Summary for {EMAIL}:")
    )
    runner = Runner(app=App(name=APP, root_agent=agent, events_compaction_config=compaction), session_service=svc)
    session = await svc.create_session(
        app_name=APP, user_id="u1", state={"user:email": EMAIL, "profile": {"ids": [ID_CARD], "card": CARD}}
    )
    for turn in TURNS:
        msg = types.Content(role="user", parts=[types.Part(text=turn)])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=msg):
            pass
    return session.id


def fact_model() -> ScriptedLlm:
    facts = {"facts": [{"text": f"The user's bank card is {UNIONPAY} and mail {EMAIL}", "topics": [PROJECT]}]}
    return ScriptedLlm(script=lambda request: text_reply(json.dumps(facts)))


def raw_events() -> list[Event]:
    return [
        Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text=f"Reach me at {US_PHONE} or {EMAIL}")])),
        Event(author="bot", invocation_id="i1", content=types.Content(role="model", parts=[types.Part(text=f"Your card {CARD} is noted for {PROJECT}")])),
    ]


async def scan(db) -> dict[str, list[str]]:
    """Every value of every column of every base table, searched for every PII fragment."""
    found: dict[str, list[str]] = {}
    async with db.engine.connect() as conn:
        tables = (await conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'"
        ))).scalars().all()
        assert {"session_events", "agent_memories", "audit_log", "session_state", "agent_sessions"} <= set(tables)
        for table in tables:
            result = await conn.execute(text(f"SELECT * FROM {table}"))
            columns = list(result.keys())
            for row in result.all():
                for column, value in zip(columns, row):
                    if value is None:
                        continue
                    body = (value.decode("utf-8", "ignore") if isinstance(value, bytes) else str(value)).lower()
                    for pii, fragments in PII.items():
                        if any(f.lower() in body for f in fragments):
                            found.setdefault(pii, []).append(f"{table}.{column}")
    return found


async def test_no_pii_reaches_any_table(db):
    svc = OceanBaseSessionService(database=db, redaction=POLICY, compaction_overlap=1)
    model = ScriptedLlm(script=script)
    sid = await run_conversation(svc, model)
    await svc.compact_session(
        app_name=APP, user_id="u1", session_id=sid, policy=KeepLastN(keep_last=2, min_batch=1),
        summarizer=ExtractiveSummarizer(prefix=f"Service summary, call {PHONE}:"),
    )

    mem_settings = MemorySettings(min_turn_chars=4)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=mem_settings, redaction=POLICY)
    facts = OceanBaseMemoryService(
        database=db, embedder=HashEmbedder(), settings=mem_settings, redaction=POLICY, pipeline=False, extractor=LlmExtractor(fact_model())
    )
    stored = await svc.get_session(app_name=APP, user_id="u1", session_id=sid, include_compacted=True)
    await memory.add_session_to_memory(stored)
    await memory.add_events_to_memory(app_name=APP, user_id="u1", events=raw_events(), session_id="outside")
    await facts.add_events_to_memory(app_name=APP, user_id="u2", events=raw_events(), session_id="outside")
    await memory.add_memory(
        app_name=APP, user_id="u1",
        memories=[MemoryEntry(content=types.Content(parts=[types.Part(text=f"Badge {EMPLOYEE}, card {UNIONPAY}")]))],
        custom_metadata={"topics": [PROJECT], "source": EMAIL},
    )
    # the app whose mode is "off" keeps its text
    plain = await svc.create_session(app_name=PLAIN, user_id="u1", state={"mail": KEPT})
    await svc.append_event(plain, Event(author="user", content=types.Content(role="user", parts=[types.Part(text=KEPT)])))
    await memory.add_memory(app_name=PLAIN, user_id="u1", memories=[MemoryEntry(content=types.Content(parts=[types.Part(text=KEPT)]))])
    await memory.close()
    await facts.close()

    assert await scan(db) == {}

    # the model itself only ever saw redacted history (the caller's session holds what is stored)
    for request in model.requests:
        seen = json.dumps([c.model_dump(mode="json") for c in request.contents], ensure_ascii=False).lower()
        assert not any(f.lower() in seen for fragments in PII.values() for f in fragments)

    async with db.engine.connect() as conn:
        marks = dict((await conn.execute(text(
            "SELECT app_name, MIN(redacted) * 10 + MAX(redacted) FROM session_events GROUP BY app_name"
        ))).all())
        kinds = (await conn.execute(text(
            "SELECT event_type, compacted_by IS NOT NULL FROM session_events WHERE app_name = :a"
        ), {"a": APP})).all()
        plain_rows = (await conn.execute(text(
            "SELECT event_json FROM session_events WHERE app_name = :a"
        ), {"a": PLAIN})).scalars().all()
        memories = (await conn.execute(text(
            "SELECT app_name, content, search_text FROM agent_memories WHERE embed_status = 'ready'"
        ))).all()
    assert marks == {APP: 11, PLAIN: 0}  # every row of the redacting app is marked, none of the other's
    assert sum(1 for kind, _ in kinds if kind == "compaction") >= 2  # ADK's and the service's
    assert any(archived for _, archived in kinds)
    assert KEPT in plain_rows[0]
    assert any(KEPT == m.content for m in memories if m.app_name == PLAIN)
    assert any("[REDACTED:BANK_CARD]" in m.content for m in memories if m.app_name == APP)

    # redacted events still validate, replay and load
    full = await svc.get_session(app_name=APP, user_id="u1", session_id=sid, include_compacted=True)
    assert full.state["user:email"] == "[REDACTED:EMAIL]"
    assert full.state["contact"] == {"email": "[REDACTED:EMAIL]", "phones": ["[REDACTED:PHONE]", "[REDACTED:PHONE]"]}
    assert (await replay_state(svc, app_name=APP, user_id="u1", session_id=sid)).state == full.state
    calls = [fc for e in full.events for fc in e.get_function_calls()]
    assert calls and calls[0].args == {"email": "[REDACTED:EMAIL]", "card": "[REDACTED:BANK_CARD]"}
    reader = OceanBaseMemoryService(database=db, embedder=HashEmbedder())
    hits = await reader.search(APP, "u1", "bank card", top_k=10)
    assert any("[REDACTED:BANK_CARD]" in h.entry.content.parts[0].text for h in hits)
    await reader.close()


async def test_append_returns_and_keeps_the_redacted_event(database):
    svc = OceanBaseSessionService(database=database, redaction=POLICY)
    s = await svc.create_session(app_name=APP, user_id="u1")
    event = Event(
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=f"mail {EMAIL}")]),
        actions=EventActions(state_delta={"temp:raw": EMAIL, "last": EMAIL}),
    )
    returned = await svc.append_event(s, event)
    assert returned.content.parts[0].text == "mail [REDACTED:EMAIL]"
    assert s.events == [returned] and returned.id == event.id
    # temp: state is never stored, so the in-memory session keeps it as given (the escape hatch)
    assert s.state["temp:raw"] == EMAIL and s.state["last"] == "[REDACTED:EMAIL]"
    loaded = await svc.get_session(app_name=APP, user_id="u1", session_id=s.id)
    assert loaded.events == s.events


class FailingRedactor(Redactor):
    async def redact_many(self, texts):
        raise RuntimeError("redaction service unavailable")


async def test_a_failing_redactor_writes_nothing(database):
    svc = OceanBaseSessionService(database=database, redaction=RedactionPolicy(FailingRedactor()))
    plain = OceanBaseSessionService(database=database)
    s = await plain.create_session(app_name=APP, user_id="u1")
    with pytest.raises(RuntimeError, match="unavailable"):
        await svc.append_event(s, Event(author="user", content=types.Content(role="user", parts=[types.Part(text=EMAIL)])))
    with pytest.raises(RuntimeError, match="unavailable"):
        await svc.create_session(app_name=APP, user_id="u1", session_id="never", state={"k": EMAIL})
    assert s.events == []
    assert (await plain.get_session(app_name=APP, user_id="u1", session_id=s.id)).events == []
    assert await plain.get_session(app_name=APP, user_id="u1", session_id="never") is None
