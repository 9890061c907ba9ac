"""Baseline retrieval systems, all behind one small async interface.

* ``adk-inmemory``: ADK's ``InMemoryMemoryService`` (word overlap, at most 10
  results), fed real ADK ``Event``s through ``add_events_to_memory``.
* ``dense``: exact cosine top-k in numpy on the MiniLM vectors.
* ``bm25``: ``rank_bm25.BM25Okapi`` on lowercase word tokens.
* ``fusion``: 0.7 * cosine + 0.3 * BM25 (BM25 divided by the query's best
  BM25 score, so both terms are in [0, 1]).
* ``bm25-care``: BM25 with the same care as ours' full-text half: the texts
  and the query stemmed by ``adk_oceanbase.memory.lexical``, English function
  words and the scope's single-word author names left out of the query
  (``search_sql.fulltext_query``), statistics per scope (= per user); returns
  only memories that match a query term (so it can return nothing).
* ``fusion-tuned``: cosine + BM25-care/max, weights from a grid on the tune split.
* ``dense-recency``: cosine + w * 0.5^(age / half-life), age from the scope's
  newest memory; w and half-life from a grid on the tune split.

Every system receives the same :class:`Doc` list per scope (one scope per
LoCoMo conversation, one for the knowledge-update set) and ranks ids; query
vectors are passed in precomputed so latency excludes the embedding model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, Sequence

import numpy as np

__all__ = [
    "ADKInMemorySystem",
    "BM25System",
    "CarefulBM25System",
    "DenseRecencySystem",
    "DenseSystem",
    "Doc",
    "FusionSystem",
    "System",
    "tokenize",
]

_WORD = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Doc:
    """One memory as every system sees it."""

    doc_id: str
    text: str  # what is embedded and BM25-indexed: "8 May 2023, Caroline: ..."
    content: str  # the memory itself, as stored by a memory service (date and speaker in other fields)
    author: str | None
    time: datetime  # UTC
    vector: np.ndarray | None = None
    session: str | None = None  # the chat session the turn belongs to, where the dataset names one (LongMemEval)


class System(Protocol):
    name: str

    async def index(self, scope: str, docs: Sequence[Doc]) -> None: ...

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]: ...

    async def recall(self, scope: str, query: str, query_vec: np.ndarray) -> None:
        """One warm-up recall (top_k=1); only stateful systems care."""
        ...


class _Stateless:
    async def recall(self, scope: str, query: str, query_vec: np.ndarray) -> None:
        return None

    async def close(self) -> None:
        return None


class DenseSystem(_Stateless):
    name = "dense"

    def __init__(self) -> None:
        self._ids: dict[str, list[str]] = {}
        self._mat: dict[str, np.ndarray] = {}

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        self._ids[scope] = [d.doc_id for d in docs]
        self._mat[scope] = np.stack([d.vector for d in docs]).astype(np.float32)

    def scores(self, scope: str, query_vec: np.ndarray) -> np.ndarray:
        return self._mat[scope] @ query_vec.astype(np.float32)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        s = self.scores(scope, query_vec)
        top = np.argsort(-s, kind="stable")[:top_k]
        return [self._ids[scope][i] for i in top]


class BM25System(_Stateless):
    name = "bm25"

    def __init__(self) -> None:
        from rank_bm25 import BM25Okapi

        self._cls = BM25Okapi
        self._ids: dict[str, list[str]] = {}
        self._bm25: dict[str, object] = {}

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        self._ids[scope] = [d.doc_id for d in docs]
        self._bm25[scope] = self._cls([tokenize(d.text) or ["_"] for d in docs])

    def scores(self, scope: str, query: str) -> np.ndarray:
        return np.asarray(self._bm25[scope].get_scores(tokenize(query)), dtype=np.float64)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        s = self.scores(scope, query)
        top = np.argsort(-s, kind="stable")[:top_k]
        return [self._ids[scope][i] for i in top]


class CarefulBM25System(BM25System):
    """BM25 on the same words ours' full-text half sees (see the module docstring)."""

    name = "bm25-care"

    def __init__(self) -> None:
        super().__init__()
        self._authors: dict[str, frozenset[str]] = {}

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        from adk_oceanbase.memory.lexical import stem_text

        self._ids[scope] = [d.doc_id for d in docs]
        self._bm25[scope] = self._cls([stem_text(d.text).split() or ["_"] for d in docs])
        names = {stem_text(d.author).split()[0] for d in docs if d.author and len(stem_text(d.author).split()) == 1}
        self._authors[scope] = frozenset(names)

    def query_terms(self, scope: str, query: str) -> list[str]:
        from adk_oceanbase.memory.search_sql import fulltext_query

        return fulltext_query(query, drop_terms=self._authors.get(scope, frozenset())).split()

    def scores(self, scope: str, query: str) -> np.ndarray:
        return np.asarray(self._bm25[scope].get_scores(self.query_terms(scope, query)), dtype=np.float64)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        s = self.scores(scope, query)
        top = [i for i in np.argsort(-s, kind="stable")[:top_k] if s[i] > 0]
        return [self._ids[scope][i] for i in top]


class DenseRecencySystem(DenseSystem):
    """Cosine plus a recency bonus: the obvious baseline for the knowledge-update set."""

    def __init__(self, w_rec: float = 0.1, half_life_days: float = 90.0) -> None:
        super().__init__()
        self.name = "dense-recency"
        self.w_rec, self.half_life_days = w_rec, half_life_days
        self._age_days: dict[str, np.ndarray] = {}

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        await super().index(scope, docs)
        newest = max(d.time for d in docs)
        self._age_days[scope] = np.array([(newest - d.time).total_seconds() / 86400.0 for d in docs])

    def recency(self, scope: str) -> np.ndarray:
        return np.power(0.5, self._age_days[scope] / self.half_life_days)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        s = self.scores(scope, query_vec) + self.w_rec * self.recency(scope)
        top = np.argsort(-s, kind="stable")[:top_k]
        return [self._ids[scope][i] for i in top]


class FusionSystem(_Stateless):
    """Linear fusion of cosine and max-normalised BM25 (the issue's 0.7/0.3 baseline; ``careful``:
    BM25-care, as ``fusion-tuned`` with weights from the tune split)."""

    def __init__(self, w_cos: float = 0.7, w_bm25: float = 0.3, careful: bool = False, name: str = "fusion") -> None:
        self.name = name
        self._w = (w_cos, w_bm25)
        self._dense = DenseSystem()
        self._bm25 = CarefulBM25System() if careful else BM25System()

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        await self._dense.index(scope, docs)
        await self._bm25.index(scope, docs)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        cos = self._dense.scores(scope, query_vec)
        bm = self._bm25.scores(scope, query)
        best = bm.max()
        if best > 0:
            bm = bm / best
        s = self._w[0] * cos + self._w[1] * bm
        top = np.argsort(-s, kind="stable")[:top_k]
        return [self._dense._ids[scope][i] for i in top]


class ADKInMemorySystem(_Stateless):
    """ADK's reference memory service; returns at most 10 memories whatever ``top_k`` is."""

    name = "adk-inmemory"

    def __init__(self, app_name: str = "bench") -> None:
        from google.adk.memory import InMemoryMemoryService

        self._svc = InMemoryMemoryService()
        self._app = app_name

    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        from google.adk.events import Event
        from google.genai import types

        events = [
            Event(
                id=d.doc_id,
                invocation_id=f"inv-{d.doc_id}",
                author=d.author or "user",
                content=types.Content(role="user", parts=[types.Part(text=d.text)]),  # ADK matches on this text
                timestamp=d.time.timestamp(),
            )
            for d in docs
        ]
        await self._svc.add_events_to_memory(app_name=self._app, user_id=scope, events=events, session_id=scope)

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int) -> list[str]:
        resp = await self._svc.search_memory(app_name=self._app, user_id=scope, query=query)
        return [m.id for m in resp.memories[:top_k] if m.id]
