"""The author cue (``memory.asker``) and the author signal: whose words a question is about."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory.asker import AGENT, USER, author_cue, author_match

from .test_memory_ranking import APP, USER as USER_ID
from .engines import SCORING_PER_ENGINE


@pytest.mark.parametrize("query, cue", [
    ("What mileage does my new hybrid get?", USER),
    ("Where do I store my winter tyres these days?", USER),
    ("Can you suggest a few board games I could play with my kids?", USER),  # a request, not a report
    ("Remind me of the museum you recommended in Porto", AGENT),
    ("You told me about a book on stoicism, what was its title?", AGENT),
    ("I was rereading our previous conversation about sourdough", AGENT),
    # the speaker named beats the conversation named: "I mentioned" asks for the user's words
    ("Back to our previous chat about hiking: I mentioned a trail as an example, which one?", USER),
    ("What was the name of my cat that I told you about?", USER),  # a report of the user's own words
    ("Could you remind me which bakery that was, near the cathedral?", AGENT),  # what the agent named
    ("I'd like you to remind me about that tea house by the canal", AGENT),  # "I" asks, not said
    ("Can you remind me what my dentist's name is?", USER),  # the user's own thing follows
    ("Can you remind me what you said about the eggs?", AGENT),
    ("When did Caroline go to the support group?", None),  # third person: no cue
    ("Which city does Alice live in?", None),
    ("我上次说的那家餐厅叫什么？", None),  # other languages: no cue
    ("", None),
])
def test_cues(query, cue):
    assert author_cue(query) == cue


def test_author_match():
    assert author_match(USER, "user") == 1.0 and author_match(USER, "travel_agent") == 0.0
    assert author_match(AGENT, "travel_agent") == 1.0 and author_match(AGENT, "user") == 0.0
    assert author_match(None, "user") == 0.0 and author_match(AGENT, None) == 0.0


def _turn(i: int, author: str, text: str) -> MemoryEntry:
    return MemoryEntry(id=f"t{i}", author=author, timestamp=datetime(2025, 3, 1, 12, i, tzinfo=timezone.utc).isoformat(),
                       content=types.Content(parts=[types.Part.from_text(text=text)]))


@SCORING_PER_ENGINE
async def test_the_cue_picks_the_author_the_question_asks_about(engine_db, engine, scoring):
    """The user's words and the agent's restatement of them: the user's rank first for "my ...", the
    agent's for "... you recommended"; without a cue (or weight 0) the ranking is the relevance's."""
    weights = ScoreWeights(recency=0.0, frequency=0.0, importance=0.0, context=0.0, version=0.0)
    settings = MemorySettings(bump_access=False, consolidate=False, scoring=scoring, weights=weights)
    svc = OceanBaseMemoryService(database=engine_db, embedder=HashEmbedder(), settings=settings)
    try:
        await svc.add_memory(app_name=APP, user_id=USER_ID, memories=[
            _turn(0, "user", "my internet plan is fiber at 500 mbps"),
            _turn(1, "concierge", "great, a fiber internet plan at 500 mbps is fast for streaming and your internet plan works"),
        ])
        await svc.flush()

        async def top(query: str, author_w: float) -> list[tuple[str, float]]:
            hits = await svc.search(APP, USER_ID, query, weights=dataclasses.replace(weights, author=author_w))
            return [(h.memory_id, h.signals.author) for h in hits]

        plain = await top("internet plan fiber", 0.2)
        assert plain[0][0] == "t1" and {a for _, a in plain} == {0.0}  # no cue: the longer restatement leads
        asked = "internet plan fiber I chose"
        assert (await top(asked, 0.0))[0][0] == "t1"  # weight 0: the relevance alone
        assert await top(asked, 0.2) == [("t0", 1.0), ("t1", 0.0)]
        assert await top("internet plan fiber you recommended", 0.2) == [("t1", 1.0), ("t0", 0.0)]
    finally:
        await svc.close()


def test_knowledge_update_questions_carry_no_cue():
    """The knowledge-update benchmark's questions are third person, so the author signal cannot move it
    (its tune and test numbers stand as measured before the signal; benchmarks/README.md)."""
    from benchmarks._synthetic import FREQUENCY_KINDS, UPDATE_KINDS

    questions = [v[3] for v in UPDATE_KINDS.values()] + [v[2] for v in FREQUENCY_KINDS.values()]
    assert questions and all("{p}" in q for q in questions)
    assert {author_cue(q.format(p="Alice")) for q in questions} == {None}
