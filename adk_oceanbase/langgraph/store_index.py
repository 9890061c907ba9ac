"""The Store's semantic index: item fields as memories of the memory service, and LangGraph's value filter. Pure but the embedder.

Semantic search is not a second retrieval engine: each indexed field of an
item (``index={"fields": [...]}``, LangGraph's paths) is stored as one
``agent_memories`` row through :meth:`OceanBaseMemoryService.add_memory`,
under the store's ``app_name`` and a *memory user* (the namespace's user when
the store ties namespaces to users, else :data:`SHARED_POOL`), and a search
is :meth:`OceanBaseMemoryService.search` (vector + per-user BM25 + recency,
one SQL statement on OceanBase, numpy on MySQL) whose hits are joined back to
the live items under the namespace prefix through ``lg_store_fields``: on
OceanBase at the end of that same statement
(:meth:`OceanBaseMemoryService.search_joined`, ``store_queries.field_hits``).

The memory id of a field is a hash of its text (normalised as the memory
service compares contents), so two items with the same text share one memory
row, exactly as the memory service would merge them.  When an item's links go
(a delete, an overwrite with other text, its TTL), the memories no other item
links to are deleted in the same transaction, rows and postings, for real: the
memory service's ``delete_memory`` would leave a tombstone, which keeps the
text from being stored again, and an item with that text may come back
(:func:`.store_queries.purge_items`; a put of the same text racing the delete
locks the memory rows it links and adds them again if they went).  The rows
are the memory service's, deleted by their keys, as retention and erasure
delete them (``governance``): the service has no public hard delete.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import unicodedata
from typing import Any, Mapping, Sequence

import numpy as np
from langgraph.store.base import ensure_embeddings, get_text_at_path, tokenize_path

from ..errors import ConfigurationError, InvalidValueError

__all__ = ["SHARED_POOL", "TOPIC", "IndexEmbedder", "field_texts", "matches", "memory_id_for_text", "sql_prefilter"]

SHARED_POOL = "~langgraph-store"
"""Memory user holding the fields of namespaces tied to no user (one BM25 / vector pool for them)."""
TOPIC = "langgraph-store"
"""Topic of every field memory: a store search asks only for these, never for an ADK agent's memories."""


def memory_id_for_text(app: str, user: str, text: str) -> str:
    """The field memory's id: a hash of the text as the memory service compares contents (NFKC, case, spaces)."""
    norm = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).lower()).strip()
    return "lgs-" + hashlib.sha256("\x1f".join((app, user, norm)).encode("utf-8")).hexdigest()[:40]


def field_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, text)`` of each indexed field of ``value``, as LangGraph's stores pick them ("$": the whole value)."""
    out = []
    for path in fields:
        texts = get_text_at_path(value, path if path == "$" else tokenize_path(path))
        if len(texts) > 1:
            out += [(f"{path}.{i}", t) for i, t in enumerate(texts)]
        elif texts:
            out.append((path, texts[0]))
    return [(p, t) for p, t in out if t and t.strip()]


class IndexEmbedder:
    """``index["embed"]`` (LangChain ``Embeddings``, a function, or a provider string) as the memory service's ``Embedder``.

    The memory service calls ``embed`` in a worker thread (never on the
    event loop); an async-only function runs on a private loop there.
    """

    def __init__(self, embed: Any, dims: int):
        self._embeddings = ensure_embeddings(embed)
        self.dim = int(dims)
        self.model_name = f"langgraph:{getattr(embed, 'model', None) or getattr(embed, '__name__', type(embed).__name__)}"[:64]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            vectors = self._embeddings.embed_documents(list(texts))
        except NotImplementedError:
            vectors = asyncio.run(self._embeddings.aembed_documents(list(texts)))
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ConfigurationError(f"index['embed'] returned vectors of shape {arr.shape}; index['dims'] is {self.dim}")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return arr / norms


# ---------------------------------------------------------------- LangGraph's value filter
_OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def matches(value: Any, flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes ``filter`` as LangGraph's stores read it.

    Top-level keys must all match; a nested dict matches the stored dict key
    by key; a list matches an equal list; ``{"$gt": 3}`` and the other
    comparison operators compare numbers (``$eq`` / ``$ne`` any value).
    """
    if not flt:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(stored: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(stored, op, arg) for op, arg in wanted.items())
        return isinstance(stored, Mapping) and all(_compare(stored.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return isinstance(stored, (list, tuple)) and len(stored) == len(wanted) and all(
            _compare(s, w) for s, w in zip(stored, wanted)
        )
    return stored == wanted


def _operator(stored: Any, op: str, arg: Any) -> bool:
    if op not in _OPERATORS:
        raise InvalidValueError(f"unsupported filter operator {op!r}; use one of {sorted(_OPERATORS)}")
    if op == "$eq":
        return stored == arg
    if op == "$ne":
        return stored != arg
    try:
        a, b = float(stored), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def sql_prefilter(flt: Mapping[str, Any] | None) -> tuple[list[tuple[str, str]], bool]:
    """The filter's plain top-level scalar equalities as ``JSON_CONTAINS`` pairs, and whether they are the whole filter.

    When they are (no operators, no nested values, no booleans, which JSON
    keeps apart from 1 and 0 while Python does not), SQL's answer is exact
    and ``limit`` / ``offset`` go into the statement.
    """
    import json

    pairs, exact = [], True
    for key, wanted in (flt or {}).items():
        if isinstance(wanted, (str, int, float)) and not isinstance(wanted, bool) and isinstance(key, str):
            path = '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
            pairs.append((path, json.dumps(wanted, ensure_ascii=False)))
        else:
            exact = False
    return pairs, exact
