"""What reaches the extraction model: trivial turns and short exchanges never do (seed 001 §1, issue #31).

Pure, no I/O.  An exchange (a user turn and the replies to it) loses its
trivial turns (``extraction.is_trivial``: "ok", "thanks", "好的", turns shorter
than ``min_turn_chars``); an exchange with nothing left, or with fewer than
``min_exchange_chars`` characters left, is dropped before any model call.  What
remains is *condensed* by the LLM when it is at least
``summarization_threshold`` characters long, and stored *raw* (one memory per
turn, as the turn policy does) otherwise: a short turn is its own best summary,
and condensing it costs a model call for nothing.

Every memory the pipeline writes records how much it condensed its source
(:func:`condensation`): ``original_length`` (characters of the source),
``compression_ratio`` (``len(content) / original_length``) and ``condensed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from .extraction import event_text, is_trivial

if TYPE_CHECKING:
    from google.adk.events.event import Event

__all__ = [
    "Turn",
    "condensation",
    "exchange_length",
    "kept_exchanges",
    "should_condense",
    "to_events",
    "turns_of",
    "visible_text",
]


@dataclass(frozen=True)
class Turn:
    """The part of an event the pipeline keeps in its queue: who said what, when, and where in the session."""

    id: str
    author: str
    timestamp: float
    text: str
    pos: int | None = None
    """The event's 1-based place in its session (the context signal's neighbours), when known."""

    def as_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies, ~1.8 ms per 50-turn session on the request path
        return {"id": self.id, "author": self.author, "timestamp": self.timestamp, "text": self.text, "pos": self.pos}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "Turn":
        return cls(str(raw["id"]), str(raw["author"]), float(raw["timestamp"]), str(raw["text"]), raw.get("pos"))


def turns_of(events: Sequence["Event"], positions: Sequence[int | None] | None = None) -> list[Turn]:
    """The events that say something, as turns; ``positions[i]`` is event i's place in its session."""
    out = []
    for i, e in enumerate(events):
        if text := event_text(e):
            out.append(Turn(e.id, e.author, float(e.timestamp), text, positions[i] if positions is not None else None))
    return out


def visible_text(parts: Sequence[tuple[str, bool]]) -> str:
    """``extraction.event_text`` of a stored event's ``(text, thought)`` parts (``sessions.codec.decode_text_parts``)."""
    return " ".join(t for text, thought in parts if not thought and (t := text.strip()))


def kept_exchanges(turns: Sequence[Turn], *, min_turn_chars: int, min_exchange_chars: int) -> list[list[Turn]]:
    """The exchanges of ``turns`` worth a model call, trivial turns removed, in order.

    An exchange is a user turn and the turns until the next one (as
    ``extraction.group_exchanges`` splits events); turns without text are skipped.
    """
    groups: list[list[Turn]] = []
    for t in turns:
        if not t.text:
            continue
        if t.author == "user" or not groups:
            groups.append([t])
        else:
            groups[-1].append(t)
    out: list[list[Turn]] = []
    for group in groups:
        kept = [t for t in group if not is_trivial(t.text, min_turn_chars)]
        if kept and exchange_length(kept) >= min_exchange_chars:
            out.append(kept)
    return out


def exchange_length(turns: Sequence[Turn]) -> int:
    """Characters of an exchange's kept text: what a condensed memory is measured against."""
    return sum(len(t.text) for t in turns)


def should_condense(turns: Sequence[Turn], summarization_threshold: int) -> bool:
    """Whether the LLM condenses this exchange (long) or its turns are stored raw (short)."""
    return exchange_length(turns) >= summarization_threshold


def condensation(content: str, original_length: int, condensed: bool) -> tuple[int, float, bool]:
    """``(original_length, compression_ratio, condensed)`` of a memory made from ``original_length`` characters."""
    original = max(int(original_length), 1)
    return original, round(len(content) / original, 4), condensed


def to_events(turns: Sequence[Turn]) -> list["Event"]:
    """ADK events rebuilt from queued turns, for the extractor (it reads author, text and time only)."""
    from google.adk.events.event import Event
    from google.genai import types

    return [
        Event(
            id=t.id, author=t.author, timestamp=t.timestamp, invocation_id="",
            content=types.Content(role="user" if t.author == "user" else "model", parts=[types.Part(text=t.text)]),
        )
        for t in turns
    ]
