"""Turn positions and the context signal: a turn next to a strong match borrows its relevance.

"Where did you go last summer?" / "Three weeks in Lisbon with my cousins":
the answer shares no word with a question about the summer trip; only its
neighbour does.  ``turn_pos`` records each turn's place in its session and the
search's ``context`` signal gives a candidate the best relevance among its
candidate neighbours (``context_window`` positions either side).
"""

from __future__ import annotations

import time

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from .engines import SCORING_PER_ENGINE, seekdb_only

APP, USER = "ctx", "u1"

TRIP = [
    ("user", "Where did you go on vacation last summer?"),
    ("model", "Three weeks in Lisbon with my cousins, mostly by the sea."),
    ("user", "Did you try the famous custard tarts there?"),
    ("model", "Every single morning, from the bakery next to our flat."),
]
FILLER = [
    ("user", "My summer schedule at work is packed with meetings."),
    ("model", "Remember to book the dentist appointment before Friday."),
    ("user", "The vacation policy at my company changed this year."),
    ("model", "Your library books are due back next Tuesday."),
    ("user", "I started learning the piano in the evenings."),
]


def ev(author: str, txt: str, ts: float) -> Event:
    return Event(
        invocation_id="inv",
        author=author,
        timestamp=ts,
        content=types.Content(role="user" if author == "user" else "model", parts=[types.Part.from_text(text=txt)]),
    )


def settings(**weights: float) -> MemorySettings:
    return MemorySettings(bump_access=False, consolidate=False, vector_search="exact", weights=ScoreWeights(**weights))


async def positions(engine_db, session_id: str) -> dict[str, int | None]:
    async with engine_db.engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT content, turn_pos FROM agent_memories WHERE session_id = :s"), {"s": session_id}
            )
        ).all()
    return {r.content: r.turn_pos for r in rows}


async def test_turn_positions_come_from_the_session_log_when_this_database_holds_it(engine_db):
    sessions = OceanBaseSessionService(database=engine_db)
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=settings())
    try:
        s = await sessions.create_session(app_name=APP, user_id=USER)
        now = time.time()
        await sessions.append_event(s, ev("user", "ok", now))  # seq 1: trivial, no memory
        for i, (author, txt) in enumerate(TRIP):
            await sessions.append_event(s, ev(author, txt, now + 1 + i))  # seq 2..5
        await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id=USER, session_id=s.id))
        assert await positions(engine_db, s.id) == {txt: 2 + i for i, (_, txt) in enumerate(TRIP)}
    finally:
        await memory.close()
        await sessions.close()


async def test_turn_positions_without_a_stored_log(engine_db):
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=settings())
    now = time.time()
    try:
        # a whole session held in memory: its events' 1-based places
        held = Session(id="held", app_name=APP, user_id=USER, events=[ev(a, t, now + i) for i, (a, t) in enumerate(TRIP)])
        await memory.add_session_to_memory(held)
        assert await positions(engine_db, "held") == {t: i + 1 for i, (_, t) in enumerate(TRIP)}
        # batches of new events continue after the highest stored position
        await memory.add_events_to_memory(
            app_name=APP, user_id=USER, session_id="delta", events=[ev(a, t, now + i) for i, (a, t) in enumerate(FILLER[:2])]
        )
        await memory.add_events_to_memory(
            app_name=APP, user_id=USER, session_id="delta", events=[ev(a, t, now + 9 + i) for i, (a, t) in enumerate(FILLER[2:4])]
        )
        assert await positions(engine_db, "delta") == {t: i + 1 for i, (_, t) in enumerate(FILLER[:4])}
        # turns outside any session have no place in a conversation
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("user", FILLER[4][1], now)])
        async with engine_db.engine.connect() as conn:
            assert (await conn.execute(text("SELECT turn_pos FROM agent_memories WHERE session_id IS NULL"))).scalar() is None
    finally:
        await memory.close()


async def _ingest(memory: OceanBaseMemoryService) -> None:
    now = time.time() - 3600
    trip = Session(id="trip", app_name=APP, user_id=USER, events=[ev(a, t, now + i) for i, (a, t) in enumerate(TRIP)])
    other = Session(id="other", app_name=APP, user_id=USER, events=[ev(a, t, now + 10 + i) for i, (a, t) in enumerate(FILLER)])
    await memory.add_session_to_memory(trip)
    await memory.add_session_to_memory(other)
    await memory.flush()


@SCORING_PER_ENGINE
async def test_the_answer_next_to_the_question_rises_with_the_context_signal(engine_db, engine, scoring):
    """``context_mode="best"``: a turn borrows its best neighbour's whole relevance (the gap mode: below)."""
    weights = dict(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0)
    plain = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=settings(context=0.0, **weights))
    with_ctx = OceanBaseMemoryService(
        database=engine_db,
        embedder=HashEmbedder(),
        settings=MemorySettings(
            bump_access=False, consolidate=False, vector_search="exact", scoring=scoring,
            weights=ScoreWeights(context=0.5, **weights), context_window=2, context_mode="best",
        ),
    )
    try:
        await _ingest(plain)
        query = "where did you go on vacation last summer"
        before = await plain.search(APP, USER, query, top_k=10)
        after = await with_ctx.search(APP, USER, query, top_k=10)
        answer = TRIP[1][1]

        def rank(hits) -> int:
            return [h.entry.content.parts[0].text for h in hits].index(answer)

        assert all(h.signals.context == 0 for h in before)
        assert rank(after) < rank(before)
        # ... above every turn of the unrelated session, some of which share words with the query
        filler_ranks = [i for i, h in enumerate(after) if h.entry.content.parts[0].text in dict((t, a) for a, t in FILLER)]
        assert filler_ranks and rank(after) < min(filler_ranks)
        assert rank(before) > min(filler_ranks)
        by_text = {h.entry.content.parts[0].text: h for h in after}
        question, hit = by_text[TRIP[0][1]], by_text[answer]
        # the answer's context is the best candidate neighbour's relevance; here the question (one position away)
        neighbours = [by_text[t] for _, t in (TRIP[0], TRIP[2], TRIP[3]) if t in by_text]
        best = max(0.7 * n.signals.semantic + 0.3 * n.signals.fulltext for n in neighbours)
        assert hit.signals.context == pytest.approx(best, abs=1e-6)
        assert hit.score == pytest.approx(0.7 * hit.signals.semantic + 0.3 * hit.signals.fulltext + 0.5 * best, abs=1e-6)
        # turns of another session are never neighbours: the filler's context comes from filler only
        for _, t in FILLER:
            if t in by_text:
                others = [by_text[x] for _, x in FILLER if x in by_text and x != t]
                assert by_text[t].signals.context <= max(
                    [0.0] + [0.7 * o.signals.semantic + 0.3 * o.signals.fulltext for o in others]
                ) + 1e-6
        assert question.signals.context > 0  # its own neighbour (the answer) is a candidate too
    finally:
        await with_ctx.close()
        await plain.close()


@SCORING_PER_ENGINE
async def test_gap_context_lends_only_what_a_neighbour_has_beyond_the_turn_itself(engine_db, engine, scoring):
    """``context_mode="gap"``: a turn's own relevance is not counted twice; the weaker turn of a pair borrows
    the difference, the stronger one nothing, so a borrower never outranks the turn it borrows from."""
    weights = ScoreWeights(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0, context=0.5)
    memory = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=MemorySettings(
        bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
        context_mode="gap"))
    try:
        await _ingest(memory)
        hits = await memory.search(APP, USER, "where did you go on vacation last summer", top_k=10)
        by_text = {h.entry.content.parts[0].text: h for h in hits}

        def own(h) -> float:
            return 0.7 * h.signals.semantic + 0.3 * h.signals.fulltext

        trip = [by_text[t] for _, t in TRIP if t in by_text]
        assert len(trip) >= 3
        for h in hits:
            text_ = h.entry.content.parts[0].text
            session = TRIP if text_ in dict((t, a) for a, t in TRIP) else FILLER
            texts = [t for _, t in session]
            i = texts.index(text_)
            near = [by_text[t] for j, t in enumerate(texts) if 0 < abs(j - i) <= 2 and t in by_text]
            best = max([0.0] + [own(n) for n in near])
            assert h.signals.context == pytest.approx(max(best - max(own(h), 0.0), 0.0), abs=1e-6)
            assert h.score == pytest.approx(own(h) + 0.5 * h.signals.context, abs=1e-6)
        question = by_text[TRIP[0][1]]
        assert question.signals.context == 0  # the strongest turn of its neighbourhood borrows nothing
        assert hits[0].memory_id == question.memory_id
        answer = by_text[TRIP[1][1]]
        assert 0 < answer.signals.context and answer.score < question.score
    finally:
        await memory.close()


def test_unknown_context_mode_is_a_configuration_error():
    from adk_oceanbase.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        MemorySettings(context_mode="mean")  # type: ignore[arg-type]


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
@pytest.mark.parametrize("mode", ["best", "gap"])
async def test_sql_and_numpy_agree_on_the_context_signal(engine_pristine_database, mode):

    def svc(scoring: str) -> OceanBaseMemoryService:
        return OceanBaseMemoryService(
            database=engine_pristine_database,
            embedder=HashEmbedder(),
            settings=MemorySettings(bump_access=False, consolidate=False, vector_search="exact", scoring=scoring,
                                    context_mode=mode),
        )

    sql, npy = svc("sql"), svc("numpy")
    try:
        await _ingest(sql)
        now = time.time()
        from datetime import datetime, timezone

        clock = datetime.fromtimestamp(now, tz=timezone.utc)
        for query in ("vacation last summer", "custard tarts bakery", "piano evenings", "dentist Friday"):
            _assert_paths_agree(await sql.search(APP, USER, query, top_k=6, now=clock),
                                await npy.search(APP, USER, query, top_k=6, now=clock))
    finally:
        await sql.close()
        await npy.close()


def _assert_paths_agree(a, b) -> None:
    """The SQL and numpy paths returned the same memories with the same context signal and score."""
    assert [h.memory_id for h in a] == [h.memory_id for h in b]
    for x, y in zip(a, b):
        assert x.signals.context == pytest.approx(y.signals.context, abs=1e-6)
        assert x.score == pytest.approx(y.score, abs=1e-6)


LONG_ANSWER = ("Three weeks in Lisbon with my cousins, mostly by the sea. " + " ".join(
    f"On day {i} we walked along the river, took the old tram up the hill and ate grilled sardines at dusk."
    for i in range(1, 9)))
"""A long, self-contained turn (~870 characters) next to the question that matches the query."""


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
@pytest.mark.parametrize("full_chars", [None, 200])
async def test_a_long_turn_borrows_context_in_proportion_to_its_length(engine_pristine_database, full_chars):
    """``context_full_chars``: a turn longer than it borrows ``context * full_chars / its length``; shorter
    turns borrow it whole (``None``: every turn whole).  Both paths compute the same signal."""
    weights = ScoreWeights(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0, context=0.5)

    def svc(scoring: str) -> OceanBaseMemoryService:
        return OceanBaseMemoryService(database=engine_pristine_database, embedder=HashEmbedder(), settings=MemorySettings(
            bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
            context_mode="gap", context_full_chars=full_chars))

    sql, npy = svc("sql"), svc("numpy")
    try:
        now = time.time() - 3600
        turns = [TRIP[0], ("model", LONG_ANSWER), *TRIP[2:]]
        await sql.add_session_to_memory(
            Session(id="trip", app_name=APP, user_id=USER, events=[ev(a, t, now + i) for i, (a, t) in enumerate(turns)]))
        await sql.add_session_to_memory(
            Session(id="other", app_name=APP, user_id=USER, events=[ev(a, t, now + 10 + i) for i, (a, t) in enumerate(FILLER)]))
        await sql.flush()
        from datetime import datetime, timezone

        clock = datetime.now(timezone.utc)
        query = "where did you go on vacation last summer"
        a = await sql.search(APP, USER, query, top_k=10, now=clock)
        _assert_paths_agree(a, await npy.search(APP, USER, query, top_k=10, now=clock))
        by_text = {h.entry.content.parts[0].text: h for h in a}

        def own(h) -> float:
            return 0.7 * h.signals.semantic + 0.3 * h.signals.fulltext

        question, answer = by_text[TRIP[0][1]], by_text[LONG_ANSWER]
        gap = max(own(question) - max(own(answer), 0.0), 0.0)
        assert gap > 0
        scale = 1.0 if full_chars is None else min(1.0, full_chars / len(LONG_ANSWER))
        assert scale < 1.0 or full_chars is None
        assert answer.signals.context == pytest.approx(gap * scale, abs=1e-6)
        short = by_text.get(TRIP[2][1])  # a short turn (< 200 characters) borrows its whole gap
        if short is not None and short.signals.context > 0:
            near = [by_text[t] for t in (TRIP[0][1], LONG_ANSWER, TRIP[3][1]) if t in by_text]
            best = max(own(n) for n in near)
            assert short.signals.context == pytest.approx(max(best - max(own(short), 0.0), 0.0), abs=1e-6)
    finally:
        await sql.close()
        await npy.close()


def test_context_full_chars_must_be_a_positive_integer():
    from adk_oceanbase.errors import ConfigurationError

    for bad in (0, -5, 2.5, True):
        with pytest.raises(ConfigurationError):
            MemorySettings(context_full_chars=bad)  # type: ignore[arg-type]


@seekdb_only("compares the SQL scoring path with its numpy mirror: the SQL path needs cosine_distance (OceanBase/seekdb)")
@pytest.mark.parametrize("long_lends_less", [True, False])
async def test_a_long_neighbour_lends_in_proportion_to_its_length(engine_pristine_database, long_lends_less):
    """``context_long_lends_less``: a short reply beside a long, matching turn borrows that turn's
    relevance times ``context_full_chars / its length`` (the whole relevance when off).  Both paths agree."""
    full_chars = 200
    weights = ScoreWeights(semantic=0.7, fulltext=0.3, recency=0.0, frequency=0.0, importance=0.0, context=0.5)

    def svc(scoring: str) -> OceanBaseMemoryService:
        return OceanBaseMemoryService(database=engine_pristine_database, embedder=HashEmbedder(), settings=MemorySettings(
            bump_access=False, consolidate=False, vector_search="exact", scoring=scoring, weights=weights,
            context_mode="gap", context_full_chars=full_chars, context_long_lends_less=long_lends_less))

    sql, npy = svc("sql"), svc("numpy")
    reply = "We should plan a family holiday like that next year."
    turns = [("user", "Tell me about your trip."), ("model", LONG_ANSWER), ("user", reply),
             ("model", "Happy to help you plan a holiday.")]
    try:
        now = time.time() - 3600
        await sql.add_session_to_memory(
            Session(id="trip", app_name=APP, user_id=USER, events=[ev(a, t, now + i) for i, (a, t) in enumerate(turns)]))
        await sql.add_session_to_memory(
            Session(id="other", app_name=APP, user_id=USER, events=[ev(a, t, now + 10 + i) for i, (a, t) in enumerate(FILLER)]))
        await sql.flush()
        from datetime import datetime, timezone

        clock = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
        query = "which tram did we take up the hill, and where did we eat grilled sardines"
        a = await sql.search(APP, USER, query, top_k=10, now=clock)
        _assert_paths_agree(a, await npy.search(APP, USER, query, top_k=10, now=clock))
        by_text = {h.entry.content.parts[0].text: h for h in a}
        assert {t for _, t in turns} <= set(by_text)  # every turn of the session is a candidate

        def own(h) -> float:
            return 0.7 * h.signals.semantic + 0.3 * h.signals.fulltext

        def lent(t: str) -> float:
            return own(by_text[t]) * (min(1.0, full_chars / len(t)) if long_lends_less else 1.0)

        long_turn, short = by_text[LONG_ANSWER], by_text[reply]
        assert own(long_turn) > max(own(by_text[t]) for t in by_text if t != LONG_ANSWER)  # the match is the long turn
        assert len(reply) <= full_chars  # the reply borrows its whole gap
        best = max(lent(t) for _, t in turns if t != reply)
        assert short.signals.context == pytest.approx(max(best - max(own(short), 0.0), 0.0), abs=1e-6)
        whole_gap = own(long_turn) - max(own(short), 0.0)  # what it would borrow from the whole relevance
        if long_lends_less:
            assert short.signals.context < whole_gap - 1e-3
        else:
            assert short.signals.context == pytest.approx(whole_gap, abs=1e-6) and whole_gap > 0
    finally:
        await sql.close()
        await npy.close()
