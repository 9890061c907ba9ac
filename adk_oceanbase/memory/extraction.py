"""What becomes a memory: the turn policy (default, no LLM) and optional LLM fact extraction.

Turn policy: one memory per meaningful text turn.  Trivial acknowledgements
("ok", "thanks", "好的", "明白了", ...) and very short turns are skipped; they
only crowd out real facts in a top-k.  The text that gets *embedded* carries
the speaker and the date (``"8 May 2023, Caroline: ..."``): on LoCoMo that
lifted dense recall markedly, because questions name people and times.

LLM policy: any ADK ``BaseLlm`` turns one exchange (a user turn and the
replies to it) into 1-3 dense facts with importance and topics, and may name
older memories a new fact contradicts (those get superseded).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from .lexical import stem_text
from .settings import MemorySettings

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.models.base_llm import BaseLlm

__all__ = [
    "TURN_EXTRACTOR",
    "clip",
    "ExtractedFact",
    "LlmExtractor",
    "MemoryDraft",
    "embedding_text",
    "event_text",
    "group_exchanges",
    "is_trivial",
    "memory_id_for",
    "search_text",
    "turn_drafts",
]

logger = logging.getLogger(__name__)

TURN_EXTRACTOR = "turn:v1"

_TRIVIAL = {
    # English
    "ok", "okay", "k", "kk", "sure", "yes", "yeah", "yep", "no", "nope", "thanks", "thank you", "thanks a lot",
    "thx", "ty", "got it", "cool", "great", "nice", "good", "fine", "alright", "all right", "right", "hi", "hello",
    "hey", "bye", "goodbye", "lol", "haha", "hmm", "mhm", "uh huh", "sounds good", "no problem", "you're welcome",
    "np", "ok thanks", "okay thanks", "great thanks", "i see", "understood", "perfect", "awesome", "will do",
    # Chinese
    "好", "好的", "好吧", "嗯", "嗯嗯", "哦", "对", "对的", "是", "是的", "行", "可以", "谢谢", "谢谢你", "多谢",
    "明白", "明白了", "知道了", "收到", "没问题", "不客气", "哈哈", "哈哈哈", "你好", "再见", "拜拜", "好的谢谢",
}
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF


def is_trivial(text: str, min_chars: int = 8) -> bool:
    """True for acknowledgements and turns too short to carry a fact (CJK characters count 3)."""
    norm = unicodedata.normalize("NFKC", text).lower().strip()
    bare = _PUNCT.sub(" ", norm).strip()
    if not bare or bare in _TRIVIAL or bare.replace(" ", "") in _TRIVIAL:
        return True
    if len(bare) >= min_chars:  # CJK only adds weight: long enough already (skips a per-character pass)
        return False
    length = sum(3 if _is_cjk(ch) else 1 for ch in bare)
    return length < min_chars


def clip(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars``, at the last whitespace when there is one (CJK text has none)."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    if not text[max_chars].isspace():
        words = head.rsplit(None, 1)
        if len(words) == 2:
            head = words[0]
    return head.rstrip()


def event_text(event: "Event") -> str:
    """The visible text of an event (thoughts and non-text parts dropped)."""
    if not event.content or not event.content.parts:
        return ""
    parts = [p.text.strip() for p in event.content.parts if p.text and not getattr(p, "thought", False)]
    return " ".join(p for p in parts if p)


def embedding_text(author: str | None, created_at: datetime, content: str) -> str:
    """The text that gets embedded: date and speaker first, then the memory.

    Derived from stored columns only, so a row left ``pending`` by a crash is
    embedded identically later.
    """
    day = f"{created_at.day} {created_at:%B %Y}"
    return f"{day}, {author}: {content}" if author else f"{day}: {content}"


def search_text(author: str | None, created_at: datetime, content: str) -> str:
    """What the full-text index covers: the embedded layout, stemmed like the query (``lexical``)."""
    return stem_text(embedding_text(author, created_at, content))


def memory_id_for(app_name: str, user_id: str, *key: str) -> str:
    """Deterministic id: re-ingesting the same event yields the same row (idempotency)."""
    raw = "\x1f".join((app_name, user_id) + key)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def _utc(ts: float | None) -> datetime:
    if ts is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    return datetime.fromtimestamp(ts, tz=timezone.utc).replace(tzinfo=None)


@dataclass
class MemoryDraft:
    """A memory about to be written (before consolidation)."""

    memory_id: str
    content: str
    author: str | None
    created_at: datetime
    session_id: str | None
    event_ids: list[str]
    extractor: str
    topics: list[str] = field(default_factory=list)
    importance: float = 0.5
    custom_metadata: dict[str, Any] = field(default_factory=dict)
    supersedes: list[str] = field(default_factory=list)
    turn_pos: int | None = None
    """Position of the source turn in its session (turn memories only): the context signal's neighbours."""
    confidence: float = 1.0
    """How sure the source is that the memory is true, 0..1 (a turn is a record of what was said: 1)."""
    tainted: bool = False
    """Stored tainted (never returned by search): the ingest guard flagged it (``memory.poisoning``)."""
    condensation: tuple[int, float, bool] | None = None
    """``(original_length, compression_ratio, condensed)`` when the pipeline made it (``memory.filtering``)."""


def turn_drafts(
    app_name: str,
    user_id: str,
    session_id: str | None,
    events: Sequence["Event"],
    settings: MemorySettings,
    custom_metadata: dict[str, Any] | None = None,
    positions: Sequence[int | None] | None = None,
) -> list[MemoryDraft]:
    """One draft per meaningful text turn, keyed by event id; ``positions[i]`` is event i's place in the session."""
    drafts = []
    for i, ev in enumerate(events):
        if settings.memory_authors is not None and ev.author not in settings.memory_authors:
            continue
        txt = event_text(ev)
        if not txt or is_trivial(txt, settings.min_turn_chars):
            continue
        eid = ev.id or hashlib.sha256(f"{ev.author}:{ev.timestamp}:{txt}".encode()).hexdigest()[:32]
        drafts.append(
            MemoryDraft(
                memory_id=memory_id_for(app_name, user_id, "turn", session_id or "", eid),
                content=txt,
                author=ev.author,
                created_at=_utc(ev.timestamp),
                session_id=session_id,
                event_ids=[eid],
                extractor=TURN_EXTRACTOR,
                custom_metadata=dict(custom_metadata or {}),
                turn_pos=positions[i] if positions is not None and session_id is not None else None,
            )
        )
    return drafts


def group_exchanges(events: Sequence["Event"]) -> list[list["Event"]]:
    """Splits events into exchanges: a user turn plus everything until the next user turn."""
    groups: list[list[Event]] = []
    for ev in events:
        if not event_text(ev):
            continue
        if ev.author == "user" or not groups:
            groups.append([ev])
        else:
            groups[-1].append(ev)
    return groups


@dataclass(frozen=True)
class ExtractedFact:
    """One fact an LLM extracted from an exchange."""

    text: str
    importance: float = 0.5
    topics: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    confidence: float = 1.0
    """The model's confidence that the fact is true as stated (1.0 when it gave none)."""


_PROMPT = """You maintain long-term memory about a user. From the conversation excerpt below, extract at most {n} \
self-contained facts worth remembering (preferences, biography, plans, decisions). Write each fact as a full \
sentence naming who it is about. Skip small talk. Rate importance 0..1. Give 1-3 short lowercase topics.
Rate confidence 0..1: how sure you are that the fact is true as stated (low for guesses and hearsay).
If a fact updates or contradicts one of the EXISTING memories, list that memory's id in "supersedes".
Answer with JSON only: {{"facts": [{{"text": "...", "importance": 0.7, "confidence": 0.9, "topics": ["..."], \
"supersedes": []}}]}}

EXISTING memories (id: text):
{existing}

CONVERSATION ({date}):
{conversation}
"""


def _unit(value: Any, default: float) -> float:
    """A model-given score clamped to 0..1; ``default`` when missing or not a number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return default
    return default if x != x else min(max(x, 0.0), 1.0)  # x != x: NaN


class LlmExtractor:
    """Extracts 1-3 facts per exchange through any ADK model.

    Args:
        model: a ``BaseLlm`` instance, or a model name resolved by ADK's registry.
        max_facts: upper bound of facts per exchange.
        version: stored in the ``extractor`` column (provenance of how a memory was made).

    Example:
        >>> from google.adk.models.google_llm import Gemini
        >>> extractor = LlmExtractor(Gemini(model="gemini-2.5-flash"))  # doctest: +SKIP
    """

    def __init__(self, model: "BaseLlm | str", *, max_facts: int = 3, version: str = "llm:v1"):
        if isinstance(model, str):
            from google.adk.models.registry import LLMRegistry

            model = LLMRegistry.new_llm(model)
        self.model = model
        self.max_facts = max_facts
        self.version = version

    def build_prompt(self, exchange: Sequence["Event"], existing: Sequence[tuple[str, str]]) -> str:
        convo = "\n".join(f"{ev.author}: {event_text(ev)}" for ev in exchange)
        known = "\n".join(f"{mid}: {txt}" for mid, txt in existing) or "(none)"
        date = _utc(exchange[0].timestamp).strftime("%d %B %Y") if exchange else ""
        return _PROMPT.format(n=self.max_facts, existing=known, date=date, conversation=convo)

    async def extract(self, exchange: Sequence["Event"], existing: Sequence[tuple[str, str]] = ()) -> list[ExtractedFact]:
        """Asks the model; returns the parsed facts (empty on unparsable output, logged)."""
        from google.adk.models.llm_request import LlmRequest
        from google.genai import types

        request = LlmRequest(
            model=self.model.model,
            contents=[types.Content(role="user", parts=[types.Part.from_text(text=self.build_prompt(exchange, existing))])],
            config=types.GenerateContentConfig(temperature=0.0, response_mime_type="application/json"),
        )
        chunks: list[str] = []
        async for resp in self.model.generate_content_async(request, stream=False):
            if resp.content and resp.content.parts:
                chunks.extend(p.text for p in resp.content.parts if p.text and not getattr(p, "thought", False))
        return self.parse("".join(chunks), {mid for mid, _ in existing})

    def parse(self, raw: str, known_ids: set[str] | None = None) -> list[ExtractedFact]:
        """Parses the model's JSON (tolerates code fences); drops malformed facts and unknown ids."""
        body = raw.strip()
        fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
        if fence:
            body = fence.group(1)
        try:
            data = json.loads(body)
        except ValueError:
            logger.warning("LLM extractor returned non-JSON output (%d chars); no facts kept", len(raw))
            return []
        items = data.get("facts", []) if isinstance(data, dict) else data if isinstance(data, list) else []
        facts = []
        for item in items[: self.max_facts]:
            if not isinstance(item, dict) or not str(item.get("text", "")).strip():
                continue
            importance = _unit(item.get("importance"), 0.5)
            confidence = _unit(item.get("confidence"), 1.0)
            topics = tuple(str(t).strip().lower() for t in item.get("topics") or () if str(t).strip())[:3]
            sup = tuple(str(s) for s in item.get("supersedes") or ())
            if known_ids is not None:
                sup = tuple(s for s in sup if s in known_ids)
            facts.append(ExtractedFact(str(item["text"]).strip(), importance, topics, sup, confidence))
        return facts

    def drafts(
        self,
        app_name: str,
        user_id: str,
        session_id: str | None,
        exchange: Sequence["Event"],
        facts: Sequence[ExtractedFact],
        custom_metadata: dict[str, Any] | None = None,
    ) -> list[MemoryDraft]:
        """Turns facts into drafts; ids derive from the exchange's first event and the fact index."""
        eids = [ev.id for ev in exchange if ev.id]
        first = eids[0] if eids else str(exchange[0].timestamp)
        return [
            MemoryDraft(
                memory_id=memory_id_for(app_name, user_id, self.version, session_id or "", first, str(i)),
                content=f.text,
                author=exchange[0].author,
                created_at=_utc(exchange[-1].timestamp),
                session_id=session_id,
                event_ids=eids,
                extractor=self.version,
                topics=list(f.topics),
                importance=f.importance,
                custom_metadata=dict(custom_metadata or {}),
                supersedes=list(f.supersedes),
                confidence=f.confidence,
            )
            for i, f in enumerate(facts)
        ]

    def exchange_key(self, app_name: str, user_id: str, session_id: str | None, exchange: Sequence["Event"]) -> str:
        """The id the first fact of this exchange would get: present means 'already extracted'."""
        eids = [ev.id for ev in exchange if ev.id]
        first = eids[0] if eids else str(exchange[0].timestamp)
        return memory_id_for(app_name, user_id, self.version, session_id or "", first, "0")
