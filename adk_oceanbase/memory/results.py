"""Rows to results: the one search-row decoder, ``MemoryHit`` and the ADK ``MemoryEntry`` with its score breakdown.

Both retrievers (:mod:`.retrievers`) decode through :func:`to_hit`: the SQL
ranking's rows carry their signals as columns (:data:`SearchRow`), the numpy
ranking hands its :class:`~.scoring.Signals` beside the row.
"""

from __future__ import annotations

import dataclasses
import json
from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from ..errors import ValidationError
from ..validation import check_timestamp
from .consolidation import _loads
from .queries import ROW_COLUMNS
from .scoring import Signals
from .search_sql import SIGNAL_COLUMNS

__all__ = ["MemoryHit", "SearchRow", "entry_text", "parse_timestamp", "signals_of", "to_hit"]

SearchRow = namedtuple("SearchRow", (*ROW_COLUMNS, *SIGNAL_COLUMNS))  # type: ignore[misc]
"""A row of ``search_sql.hybrid_search``, by its documented column order (the driver hands plain tuples)."""

_SIGNAL_FIELDS = {"sem": "semantic", "rec": "recency", "freq": "frequency", "ft": "fulltext", "imp": "importance",
                  "score": "score", "ctx": "context", "ver": "version", "ft_cov": "ft_cov", "auth": "author"}
"""``SIGNAL_COLUMNS`` -> ``Signals`` field (``ft_n`` is the statement's own bookkeeping, not a signal)."""


@dataclass(frozen=True)
class MemoryHit:
    """One search result: the ADK entry plus the per-signal scores that ranked it."""

    memory_id: str
    entry: MemoryEntry
    score: float
    signals: Signals

def entry_text(entry: MemoryEntry) -> str:
    parts = entry.content.parts or [] if entry.content else []
    return " ".join(p.text.strip() for p in parts if p.text and p.text.strip())


def parse_timestamp(ts: str | None) -> datetime:
    if not ts:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError as exc:
        raise ValidationError(f"MemoryEntry.timestamp must be ISO 8601, got {ts!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    check_timestamp("MemoryEntry.timestamp", parsed.timestamp())  # a plausible moment, not year 1 or 9999
    return parsed.astimezone(timezone.utc).replace(tzinfo=None)


def signals_of(row: Any) -> Signals:
    """The :class:`Signals` a SQL-ranked row carries in its :data:`SIGNAL_COLUMNS`, by name."""
    return Signals(**{field: float(getattr(row, column)) for column, field in _SIGNAL_FIELDS.items()})


def to_hit(row: Any, sig: Signals | None = None) -> MemoryHit:
    """A search row (:data:`~.queries.ROW_COLUMNS` by name) as a hit; ``sig`` defaults to the row's own signal columns."""
    if sig is None:
        sig = signals_of(row)
    meta: dict[str, Any] = {}
    if row.custom_metadata:
        try:
            meta.update(json.loads(row.custom_metadata))
        except ValueError:
            pass
    meta.update(
        {
            "memory_id": row.memory_id,
            "session_id": row.session_id,
            "event_ids": _loads(row.event_ids),
            "topics": _loads(row.topics),
            "extractor": row.extractor,
            "importance": float(row.importance_score),
            "access_count": int(row.access_count),
            "superseded_by": row.superseded_by,
            "confidence": float(row.confidence),
            "occurrences": int(row.occurrences),
            "score": sig.score,
            "scores": dataclasses.asdict(sig),
        }
    )
    entry = MemoryEntry(
        id=row.memory_id,
        author=row.author,
        timestamp=row.created_at.replace(tzinfo=timezone.utc).isoformat(),
        content=types.Content(
            role="user" if row.author == "user" else "model", parts=[types.Part.from_text(text=row.content)]
        ),
        custom_metadata=meta,
    )
    return MemoryHit(row.memory_id, entry, sig.score, sig)
