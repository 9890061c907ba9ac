"""Contract suite: the ``BaseMemoryService`` behaviours of ADK's InMemoryMemoryService, on it AND on ours.

Every test runs three times: ADK's ``InMemoryMemoryService`` (the reference), ours on seekdb and ours
on MariaDB (the MySQL path: numpy scoring after an SQL prefilter).  Ours embeds with ``HashEmbedder``
(deterministic word/trigram hashing, no model download), so "shares a word" is what the semantic
signal sees too.

Known divergences (each asserted below, per backend or as a strict xfail on the side that differs):

* ``NO_WORD_OVERLAP`` (strict xfail on ours): ADK returns only events sharing a word with the query;
  ours is hybrid search and, without the opt-in relevance gate, returns the user's best ``top_k``
  whatever the overlap (the matching ones first).  Where a test is about something else (scope,
  delete, events without text, CJK) it asserts what holds on both: the match ranks first, the other
  user's / the deleted memory is absent.  ``test_ours_with_the_relevance_gate_matches_nothing_like_adk``
  shows the gate closing the gap.
* ``MEMORY_IDS`` (per-backend assertion): ADK's ``MemoryEntry.id`` is the event id; ours is the
  memory's own id (32 hex digits derived from app, user, session and event id; an ``add_memory`` entry keeps the
  id it was given), with the event ids in ``custom_metadata["event_ids"]``.  On both,
  ``delete_memory`` takes the id ``search_memory`` returned.
* ``SIGNALS_IN_METADATA`` (per-backend assertion): ADK's ``custom_metadata`` is always ``{}`` and it
  drops the ``custom_metadata`` given to ``add_events_to_memory``; ours keeps the caller's keys and
  adds the memory's bookkeeping (``memory_id``, ``session_id``, ``event_ids``, ``score``, ``scores``, ...).
* Timestamps: ADK writes local time without an offset, ours UTC with ``+00:00``; both name the
  event's instant (asserted through ``fromisoformat(...).timestamp()``).
* ``add_memory``: ADK's in-memory service keeps ``BaseMemoryService``'s ``NotImplementedError``
  (strict xfail on it); ours stores explicit entries and keeps their ids.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
import pytest_asyncio
from google.adk.events.event import Event
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP, USER, OTHER = "mem_contract", "u1", "u2"
T0 = 1_750_000_000.0  # a fixed moment (2025-06-15): entries' timestamps are compared to it

NO_WORD_OVERLAP = pytest.mark.xfail(
    raises=AssertionError, strict=True,
    reason="ours is hybrid search: without the opt-in relevance gate (MemorySettings.relevance_min_similarity / "
    "relevance_min_lexical) every search returns the user's best top_k, so memories sharing no word with the "
    "query come back too (ranked below the ones that do)",
)


@pytest.fixture(params=["in_memory", "oceanbase", "mariadb"])
def backend(request):
    """None for ADK's reference service, else the Database ours runs on (seekdb, or MariaDB: the MySQL path)."""
    if request.param == "in_memory":
        return None
    return request.getfixturevalue("database" if request.param == "oceanbase" else "mariadb_database")


@pytest_asyncio.fixture
async def svc(backend):
    """ADK's reference service, ours on seekdb, ours on MariaDB."""
    if backend is None:
        yield InMemoryMemoryService()
        return
    service = OceanBaseMemoryService(database=backend, embedder=HashEmbedder())
    try:
        yield service
    finally:
        await service.close()


def is_ours(svc) -> bool:
    return isinstance(svc, OceanBaseMemoryService)


async def settle(svc) -> None:
    """Ours embeds in the background; a search right after an add must see the vectors too."""
    if is_ours(svc):
        await svc.flush()


def event(eid: str, text: str | None, *, author: str = "user", ts: float = T0, parts: list | None = None) -> Event:
    content = None
    if parts is not None:
        content = types.Content(role="user", parts=parts)
    elif text is not None:
        content = types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)])
    return Event(id=eid, invocation_id=f"inv-{eid}", author=author, timestamp=ts, content=content)


def session(sid: str, events: list[Event], *, user: str = USER, app: str = APP) -> Session:
    return Session(id=sid, app_name=app, user_id=user, events=events, last_update_time=max((e.timestamp for e in events), default=T0))


async def search(svc, query: str, *, user: str = USER, app: str = APP) -> list[MemoryEntry]:
    return (await svc.search_memory(app_name=app, user_id=user, query=query)).memories


def texts(entries: list[MemoryEntry]) -> list[str]:
    return [" ".join(p.text for p in e.content.parts if p.text) for e in entries]


def adk_toolkit_session() -> Session:
    """ADK's own test session: two turns about the ADK, one event without content between them."""
    return session("s1", [
        event("e1a", "The ADK is a great toolkit.", ts=T0),
        event("e1b", None, ts=T0 + 1),
        event("e1c", "I agree. The Agent Development Kit (ADK) rocks!", author="model", ts=T0 + 2),
    ])


# ------------------------------------------------------------------ ingest and find
async def test_added_session_is_found_by_a_word(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await svc.add_session_to_memory(session("s2", [event("e2a", "I like to code in Python.", ts=T0 + 10)]))
    await settle(svc)
    found = await search(svc, "Python")
    assert texts(found)[0] == "I like to code in Python."
    assert found[0].author == "user"


async def test_search_is_case_insensitive(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await settle(svc)
    assert texts(await search(svc, "development"))[0] == "I agree. The Agent Development Kit (ADK) rocks!"


async def test_a_query_matches_several_events(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await settle(svc)
    assert set(texts(await search(svc, "How about ADK?"))) == {
        "The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!",
    }


# ------------------------------------------------------------------ scope and misses
async def test_search_is_scoped_by_user(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await svc.add_session_to_memory(session("s3", [event("e3a", "This is a secret.")], user=OTHER))
    await settle(svc)
    assert "This is a secret." not in texts(await search(svc, "secret"))  # [] on ADK; see NO_WORD_OVERLAP
    assert texts(await search(svc, "secret", user=OTHER)) == ["This is a secret."]


async def test_search_is_scoped_by_app(svc):
    await svc.add_session_to_memory(session("s1", [event("e1", "The lighthouse keeper paints boats.")], app="app_a"))
    await settle(svc)
    assert await search(svc, "lighthouse", app="app_b") == []
    assert texts(await search(svc, "lighthouse", app="app_a")) == ["The lighthouse keeper paints boats."]


async def test_a_user_with_no_memories_gets_nothing(svc):
    assert await search(svc, "anything at all") == []


async def test_a_word_in_no_memory_matches_nothing(svc, request):
    if is_ours(svc):
        request.applymarker(NO_WORD_OVERLAP)
    await svc.add_session_to_memory(adk_toolkit_session())
    await settle(svc)
    assert await search(svc, "nonexistent") == []


@pytest.mark.parametrize("backend", ["oceanbase", "mariadb"], indirect=True)
async def test_ours_with_the_relevance_gate_matches_nothing_like_adk(backend):
    """The opt-in relevance gate is ours' answer to NO_WORD_OVERLAP: no evidence, no memories."""
    gated = MemorySettings(relevance_min_similarity=0.99, relevance_min_lexical=0.01, relevance_gate_neighbours=False)
    svc = OceanBaseMemoryService(database=backend, embedder=HashEmbedder(), settings=gated)
    try:
        await svc.add_session_to_memory(adk_toolkit_session())
        await settle(svc)
        assert await search(svc, "nonexistent") == []
        assert texts(await search(svc, "toolkit")) == ["The ADK is a great toolkit."]
    finally:
        await svc.close()


async def test_an_empty_query_matches_nothing(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await settle(svc)
    assert await search(svc, "") == []


async def test_a_session_without_events_adds_nothing(svc):
    await svc.add_session_to_memory(session("s4", []))
    await settle(svc)
    assert await search(svc, "ADK") == []


async def test_events_without_text_are_not_remembered(svc):
    """No content, empty parts, or only a function call: nothing a word search could match."""
    call = types.Part(function_call=types.FunctionCall(name="lookup_order", args={"order": "zebra"}))
    await svc.add_session_to_memory(session("s5", [
        event("n1", None),
        event("n2", None, parts=[]),
        event("n3", None, author="model", parts=[call]),
        event("n4", "Only this turn mentions the harbour."),
    ]))
    await settle(svc)
    assert texts(await search(svc, "harbour")) == ["Only this turn mentions the harbour."]
    # a function call's name and arguments are not remembered text ([] on ADK; see NO_WORD_OVERLAP)
    assert set(texts(await search(svc, "lookup_order zebra"))) <= {"Only this turn mentions the harbour."}


# ------------------------------------------------------------------ the entries
async def test_entry_fields_come_from_the_event(svc):
    await svc.add_session_to_memory(session("s6", [event("ev-42", "My sister lives in Lisbon.", author="user", ts=T0 + 5)]))
    await settle(svc)
    (entry,) = await search(svc, "Lisbon")
    assert entry.author == "user"
    assert entry.content.parts[0].text == "My sister lives in Lisbon."
    # ADK writes local time without an offset (``_utils.format_timestamp``), ours UTC with one: the same instant
    assert datetime.fromisoformat(entry.timestamp).timestamp() == T0 + 5
    if is_ours(svc):  # MEMORY_IDS and SIGNALS_IN_METADATA
        assert re.fullmatch(r"[0-9a-f]{32}", entry.id)
        assert entry.custom_metadata["event_ids"] == ["ev-42"] and entry.custom_metadata["session_id"] == "s6"
        assert entry.custom_metadata["memory_id"] == entry.id and {"score", "scores"} <= set(entry.custom_metadata)
    else:
        assert entry.id == "ev-42"
        assert entry.custom_metadata == {}


async def test_more_shared_words_rank_first(svc):
    await svc.add_session_to_memory(session("s7", [
        event("r1", "We booked a flight.", ts=T0),
        event("r2", "We booked a flight to Kyoto in April.", ts=T0 + 1),
        event("r3", "April was rainy.", ts=T0 + 2),
    ]))
    await settle(svc)
    assert texts(await search(svc, "flight Kyoto April"))[0] == "We booked a flight to Kyoto in April."


async def test_at_most_ten_memories_are_returned(svc):
    await svc.add_session_to_memory(session("s8", [event(f"m{i}", f"Note {i} about the garden.", ts=T0 + i) for i in range(15)]))
    await settle(svc)
    assert len(await search(svc, "garden")) == 10


# ------------------------------------------------------------------ repeated and incremental adds
async def test_adding_a_session_again_does_not_duplicate(svc):
    s = adk_toolkit_session()
    await svc.add_session_to_memory(s)
    await svc.add_session_to_memory(s)
    await settle(svc)
    assert sorted(texts(await search(svc, "ADK"))) == sorted([
        "The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!",
    ])


async def test_a_grown_session_adds_its_new_events(svc):
    s = adk_toolkit_session()
    await svc.add_session_to_memory(s)
    s.events.append(event("e1d", "Later we talked about the ADK roadmap.", ts=T0 + 3))
    await svc.add_session_to_memory(s)
    await settle(svc)
    found = texts(await search(svc, "ADK"))
    assert len(found) == 3 and "Later we talked about the ADK roadmap." in found


async def test_add_events_to_memory_is_found_and_idempotent(svc):
    evs = [event("d1", "The piano tuner comes on Friday.", ts=T0), event("d2", None, ts=T0 + 1)]
    await svc.add_events_to_memory(app_name=APP, user_id=USER, events=evs, session_id="s9")
    await svc.add_events_to_memory(app_name=APP, user_id=USER, events=evs, session_id="s9")
    await settle(svc)
    assert texts(await search(svc, "piano")) == ["The piano tuner comes on Friday."]


async def test_add_events_to_memory_without_a_session(svc):
    await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[event("d3", "Remember the blue umbrella.")])
    await settle(svc)
    assert texts(await search(svc, "umbrella")) == ["Remember the blue umbrella."]


async def test_add_events_custom_metadata(svc):
    await svc.add_events_to_memory(app_name=APP, user_id=USER, events=[event("d4", "The cat is called Miso.")],
                                   custom_metadata={"source": "onboarding"})
    await settle(svc)
    (entry,) = await search(svc, "Miso")
    if is_ours(svc):  # SIGNALS_IN_METADATA: the caller's keys are kept beside ours
        assert entry.custom_metadata["source"] == "onboarding"
    else:  # ADK accepts custom_metadata and drops it
        assert entry.custom_metadata == {}


async def test_add_memory_stores_explicit_entries(svc, request):
    if not is_ours(svc):
        request.applymarker(pytest.mark.xfail(raises=NotImplementedError, strict=True,
                                              reason="InMemoryMemoryService keeps BaseMemoryService.add_memory's "
                                              "NotImplementedError: it stores events only"))
    entry = MemoryEntry(id="fact-1", author="user", content=types.Content(parts=[types.Part(text="Allergic to peanuts.")]),
                        custom_metadata={"topic": "health"})
    await svc.add_memory(app_name=APP, user_id=USER, memories=[entry])
    await settle(svc)
    (found,) = await search(svc, "peanuts")
    assert found.id == "fact-1" and texts([found]) == ["Allergic to peanuts."]


# ------------------------------------------------------------------ delete
async def test_deleted_memory_is_gone_and_stays_gone(svc):
    s = adk_toolkit_session()
    await svc.add_session_to_memory(s)
    await settle(svc)
    victim = next(e for e in await search(svc, "toolkit") if texts([e]) == ["The ADK is a great toolkit."])
    await svc.delete_memory(app_name=APP, user_id=USER, memory_id=victim.id)
    gone = "The ADK is a great toolkit."
    assert gone not in texts(await search(svc, "toolkit"))
    await svc.add_session_to_memory(s)  # re-ingesting the session must not bring it back
    await settle(svc)
    assert gone not in texts(await search(svc, "toolkit ADK"))
    assert texts(await search(svc, "rocks"))[0] == "I agree. The Agent Development Kit (ADK) rocks!"


async def test_deleting_without_an_id_is_a_no_op(svc):
    await svc.add_session_to_memory(adk_toolkit_session())
    await settle(svc)
    await svc.delete_memory(app_name=APP, user_id=USER, memory_id=None)
    assert len(await search(svc, "ADK")) == 2


# ------------------------------------------------------------------ scripts
async def test_a_latin_word_inside_japanese_text_is_found(svc):
    await svc.add_session_to_memory(session("s10", [event("j1", "私はPythonを使う")]))
    await settle(svc)
    assert texts(await search(svc, "Python")) == ["私はPythonを使う"]


async def test_a_cjk_query_matches_inside_cjk_text(svc):
    await svc.add_session_to_memory(session("s11", [event("c1", "我喜欢喝咖啡"), event("c2", "今天下雨")]))
    await settle(svc)
    assert texts(await search(svc, "咖啡"))[0] == "我喜欢喝咖啡"  # alone on ADK; see NO_WORD_OVERLAP
