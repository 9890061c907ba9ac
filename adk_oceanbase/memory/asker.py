"""Whose words a question is about: the user's own, or what the agent said (the author signal's cue).

Why: a user asking their assistant "what mileage does my new hybrid get?" or
"where do I store my winter tyres now?" wants what *they* said; the agent's
replies in the same conversation restate those words at greater length and
outrank them on both the semantic and the full-text signal (LongMemEval's
knowledge-update and single-session-user questions lost to plain BM25 that
way; ``benchmarks/README.md``).  "The museum you recommended in Porto"
wants the agent's words instead.  ``ScoreWeights.author`` adds a small bonus
to memories whose author matches the cue; a question with neither cue (a
third-person question, "when did Caroline move?") gives every memory the
same, so the ranking does not move.

The cues are English and deliberately narrow: a past-tense report of the
agent's speech ("you recommended", "you told me") asks for the agent, one of
the user's ("I told you", "I mentioned") for the user; a bare reference to
"our previous conversation" asks for the agent, and so does "remind me of
..." unless the user's own things follow ("remind me what my PIN is");
otherwise a first-person word ("I", "my", "me") asks for the user.  "Can you suggest
...?" is a request, not a reference to earlier agent speech, so it stays
with the user (whose preferences the answer depends on).  Other languages
get no cue.
"""

from __future__ import annotations

import re

__all__ = ["AGENT", "USER", "author_cue"]

USER = "user"
"""The cue for the user's own words: memories whose author is ``"user"`` (ADK's author of user turns)."""
AGENT = "agent"
"""The cue for the agent's words: memories with any other author (ADK names agent turns by the agent)."""

_AGENT_SPEECH = re.compile(
    r"\byou\b[^.?!]*?\b(recommended|suggested|mentioned|told|said|gave|provided|listed|shared|advised|"
    r"explained|described|wrote|named|found|showed|sent|proposed|answered|replied|noted|pointed|quoted|"
    r"calculated|estimated)\b",
    re.IGNORECASE,
)
_USER_SPEECH = re.compile(r"\bi\b[^.?!]*?\b(told|said|mentioned|shared|wrote|asked)\b", re.IGNORECASE)
_PAST_CONVERSATION = re.compile(r"\bour (previous|last|earlier) (conversation|chat|discussion)\b", re.IGNORECASE)
_RECALL_REQUEST = re.compile(r"\bremind me\b(?P<rest>[^.?!]*)", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(i|my|me|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)


def author_cue(query: str) -> str | None:
    """:data:`AGENT`, :data:`USER` or ``None`` (no cue) for a search query.

    In order: a report of the agent's speech; a report of the user's own ("I told you", "I mentioned");
    a reference to "our previous conversation" (the agent's words: it names the conversation, not the
    speaker, so a report of either speaker's words goes first); a request to be reminded of something
    ("could you remind me which bakery that was?") asks for the agent's words, unless what
    follows it is the user's own ("remind me what my PIN is"); any other first-person question asks
    for the user's words.

    Why "remind me" cues the agent: in LongMemEval's tune half all 22 questions with it asked for
    the agent's words (single-session-assistant); two of them (in the form "I'd like you to remind
    me about that tea house") named no speaker otherwise, and the first-person "I" had read them as
    the user's.  What one was reminded of is, without "my", most often what the agent named.
    """
    if _AGENT_SPEECH.search(query):
        return AGENT
    if _USER_SPEECH.search(query):
        return USER
    if _PAST_CONVERSATION.search(query):  # the user recalls it to the agent: most often for what it said
        return AGENT
    recall = _RECALL_REQUEST.search(query)
    if recall:
        return USER if _FIRST_PERSON.search(recall.group("rest")) else AGENT
    if _FIRST_PERSON.search(query):
        return USER
    return None


def author_match(cue: str | None, author: str | None) -> float:
    """The author signal of one memory: 1 when its author is the one ``cue`` asks for, else 0."""
    if cue is None or author is None:
        return 0.0
    return 1.0 if (author == USER) == (cue == USER) else 0.0
