"""Checks of the memory service's arguments: typed errors naming the argument, before any I/O.

A search's ``filters`` and ``weights`` arrive as plain mappings from agent
code (often from a model's tool call), so a wrong key, a string date or a NaN
weight is ordinary input, not a programming error deep in SQL: each is a
``ValidationError`` that says which argument and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime, timezone
from typing import Any, Mapping

from ..errors import InvalidValueError, ValidationError
from ..jsonvalues import check_json
from ..validation import check_text, check_timestamp
from .search_scope import SearchFilters
from .settings import ScoreWeights

__all__ = [
    "MAX_TOP_K",
    "check_importance",
    "check_metadata",
    "check_topics",
    "min_score",
    "score_weights",
    "search_filters",
    "top_k",
]

MAX_TOP_K = 1000
"""Most hits one search returns (the candidate lists hold ``candidate_pool`` each; beyond that is a scan)."""

_FILTER_KEYS = tuple(f.name for f in dataclasses.fields(SearchFilters))
_WEIGHT_KEYS = tuple(f.name for f in dataclasses.fields(ScoreWeights))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def top_k(value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
        raise ValidationError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {value!r}")
    return value


def min_score(value: Any, default: float | None) -> float | None:
    if value is None:
        return default
    if not _number(value):
        raise ValidationError(f"min_score must be a finite number, got {value!r}")
    return float(value)


def score_weights(value: ScoreWeights | Mapping[str, Any] | None, default: ScoreWeights) -> ScoreWeights:
    """The weights to use: ``default`` with the given ones replaced; each finite and >= 0."""
    if value is None:
        return default
    if isinstance(value, ScoreWeights):
        given = dataclasses.asdict(value)
    elif isinstance(value, Mapping):
        given = dict(value)
        unknown = sorted(str(k) for k in given if k not in _WEIGHT_KEYS)
        if unknown:
            raise ValidationError(f"weights has unknown signal(s) {unknown}; known: {list(_WEIGHT_KEYS)}")
    else:
        raise ValidationError(f"weights must be a ScoreWeights or a mapping, got {type(value).__name__}")
    for name, w in given.items():
        if not _number(w) or w < 0:
            raise ValidationError(f"weights[{name!r}] must be a finite number >= 0, got {w!r}")
    return value if isinstance(value, ScoreWeights) else dataclasses.replace(default, **given)


def search_filters(value: SearchFilters | Mapping[str, Any] | None) -> SearchFilters | None:
    """``SearchFilters`` from a mapping or an instance, every field checked; ``since``/``until`` may be epoch seconds."""
    if value is None:
        return None
    if isinstance(value, SearchFilters):
        given = {f: getattr(value, f) for f in _FILTER_KEYS}
    elif isinstance(value, Mapping):
        given = dict(value)
        unknown = sorted(str(k) for k in given if k not in _FILTER_KEYS)
        if unknown:
            raise ValidationError(f"filters has unknown key(s) {unknown}; known: {list(_FILTER_KEYS)}")
    else:
        raise ValidationError(f"filters must be a SearchFilters or a mapping, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for name, v in given.items():
        if v is None:
            continue
        if name in ("since", "until"):
            out[name] = _moment(f"filters[{name!r}]", v)
        elif name == "topics":
            out[name] = check_topics(v, f"filters[{name!r}]")
        elif isinstance(v, str):
            out[name] = check_text(f"filters[{name!r}]", v, ValidationError)
        else:
            raise ValidationError(f"filters[{name!r}] must be a string, got {type(v).__name__}")
    return SearchFilters(**out)


def _moment(kind: str, value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(check_timestamp(kind, value), tz=timezone.utc)
    raise ValidationError(f"{kind} must be a datetime or epoch seconds, got {type(value).__name__}")


def check_topics(value: Any, kind: str = "topics") -> list[str]:
    """A list (or tuple) of strings; a bare string is refused rather than split into letters."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValidationError(f"{kind} must be a list of strings, got {type(value).__name__}")
    for t in value:
        if not isinstance(t, str):
            raise ValidationError(f"{kind} must be a list of strings, got a {type(t).__name__} in it")
        check_text(kind, t, ValidationError)
    return list(value)


def check_metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    """``custom_metadata`` as stored: a JSON object of text UTF-8 can store."""
    meta = dict(value)
    check_json("custom_metadata", meta, InvalidValueError)  # a tuple would load back as a list; depth bounded
    raw = json.dumps(meta, ensure_ascii=False)
    check_text("custom_metadata", raw, ValidationError)
    return meta


def check_importance(value: Any) -> float:
    """A number from 0 to 1 (the ``importance`` metadata of ``add_memory``)."""
    if not _number(value) or not 0 <= value <= 1:
        raise ValidationError(f"importance must be a number from 0 to 1, got {value!r}")
    return float(value)
