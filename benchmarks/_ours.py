"""``ours``: ``OceanBaseMemoryService`` on seekdb, driven the way an agent would drive it.

* LoCoMo turns go in as ADK ``Event``s through ``add_events_to_memory`` (so
  the production turn filter and consolidation apply); a hit maps back to
  dialogue ids through its ``event_ids`` provenance (a merged row answers for
  every turn it absorbed).  Knowledge-update facts go in through ``add_memory``.
* Embeddings come from the benchmark's cached MiniLM, so ``ours`` ranks the
  very vectors ``dense`` and ``fusion`` rank.
* Evaluation searches pass ``bump_access=False`` (results must not depend on
  question order); the knowledge-update recall history runs with the default
  bump, which is how frequency is learnt in production.
* Replay clock: LoCoMo happened in 2022-2024, and its dates are part of the
  text, so they stay.  Every search passes ``now=`` the moment the question
  is asked (one day after the conversation's last turn), the service's public
  replay clock.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

from benchmarks._baselines import Doc
from benchmarks._common import ensure_database

__all__ = ["OursSystem", "settings_from_overrides"]

logger = logging.getLogger(__name__)

APP = "bench"
WEIGHT_KEYS = ("semantic", "fulltext", "recency", "frequency", "importance", "context", "version", "author")


def settings_from_overrides(base: Any, overrides: dict[str, float]) -> Any:
    """Applies ``--ours`` overrides (weights, half_life_days, rec_now, pool, ef_search, exact, window,
    vsim/vband/vpool of the version signal) to ``MemorySettings``."""
    weights = dataclasses.replace(base.weights, **{k: v for k, v in overrides.items() if k in WEIGHT_KEYS})
    changes: dict[str, Any] = {"weights": weights}
    if "half_life_days" in overrides:
        changes["recency_half_life_s"] = overrides["half_life_days"] * 86400.0
    if "pool" in overrides:
        changes["candidate_pool"] = int(overrides["pool"])
    if "ef_search" in overrides:
        changes["ef_search"] = int(overrides["ef_search"])
    if "exact" in overrides:
        changes["vector_search"] = "exact" if overrides["exact"] else "ann"
    if "consolidate" in overrides:
        changes["consolidate"] = bool(overrides["consolidate"])
    if "window" in overrides:
        changes["context_window"] = int(overrides["window"])
    if "cgap" in overrides:  # 1: the context signal adds only what the best neighbour has beyond the turn's own
        changes["context_mode"] = "gap" if overrides["cgap"] else "best"
    if "cchars" in overrides:  # context_full_chars; a negative value: every turn borrows its whole context
        changes["context_full_chars"] = None if overrides["cchars"] < 0 else int(overrides["cchars"])
    if "clend" in overrides:  # 1: a long neighbour lends in proportion to its length (context_long_lends_less)
        changes["context_long_lends_less"] = bool(overrides["clend"])
    if "vsim" in overrides:  # version signal: cosine from which two facts may be versions
        changes["version_similarity"] = float(overrides["vsim"])
    if "vband" in overrides:
        changes["version_band"] = float(overrides["vband"])
    if "vpool" in overrides:
        changes["version_pool"] = int(overrides["vpool"])
    for key, field in (("gsim", "relevance_min_similarity"), ("glex", "relevance_min_lexical"),
                       ("gmargin", "relevance_margin"), ("gfill", "relevance_fill_margin")):  # the relevance gate; a negative value turns it off
        if key in overrides:
            changes[field] = None if overrides[key] < 0 else float(overrides[key])
    if "gnb" in overrides:
        changes["relevance_gate_neighbours"] = bool(overrides["gnb"])
    if "scap" in overrides:  # the diversity cap (max_hits_per_session); a negative value turns it off
        changes["max_hits_per_session"] = None if overrides["scap"] < 0 else int(overrides["scap"])
    if "rec_now" in overrides:  # 1: recency from the search's clock (absolute age), 0: from the newest candidate
        changes["recency_reference"] = "now" if overrides["rec_now"] else "newest"
    known = {"half_life_days", "pool", "ef_search", "exact", "consolidate", "rec_now", "window", "cgap", "cchars", "clend", "vsim", "vband", "vpool",
             "gsim", "glex", "gmargin", "gnb", "gfill", "scap"}
    unknown = set(overrides) - set(WEIGHT_KEYS) - known
    if unknown:
        raise SystemExit(f"unknown --ours keys: {', '.join(sorted(unknown))}")
    return dataclasses.replace(base, **changes)


class OursSystem:
    name = "ours"

    def __init__(self, url: str, embedder: Any, overrides: dict[str, float] | None = None):
        from adk_oceanbase.memory import MemorySettings

        self._url = url
        self._embedder = embedder
        self.settings = settings_from_overrides(MemorySettings(), overrides or {})
        self._base_settings = self.settings
        self._svc: Any = None
        self._clock_by_scope: dict[str, datetime] = {}
        self.ingest_stats: dict[str, Any] = {"memories_offered": 0}

    # ------------------------------------------------------------ lifecycle
    def set_clock(self, by_scope: dict[str, datetime]) -> None:
        self._clock_by_scope = dict(by_scope)

    async def _service(self) -> Any:
        if self._svc is None:
            from adk_oceanbase.config import Config
            from adk_oceanbase.memory import OceanBaseMemoryService

            u = urlparse(self._url)
            ensure_database(u.hostname or "127.0.0.1", u.port or 2881, u.username or "root", u.password,
                            u.path.lstrip("/"), fresh=True)
            self._svc = OceanBaseMemoryService(config=Config.from_url(self._url), embedder=self._embedder,
                                               settings=self.settings)
            await self._svc.setup()
        return self._svc

    async def close(self) -> None:
        if self._svc is not None:
            await self._svc.close()
            self._svc = None

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {
            "weights": dataclasses.asdict(s.weights),
            "recency_half_life_days": s.recency_half_life_s / 86400.0,
            "recency_reference": s.recency_reference,
            "candidate_pool": s.candidate_pool,
            "vector_search": s.vector_search,
            "ef_search": s.ef_search,
            "consolidate": s.consolidate,
            "version": {"similarity": s.version_similarity, "band": s.version_band, "pool": s.version_pool},
            "gate": {"min_similarity": s.relevance_min_similarity, "min_lexical": s.relevance_min_lexical,
                     "neighbours": s.relevance_gate_neighbours, "margin": s.relevance_margin,
                     "fill_margin": s.relevance_fill_margin},
            **self.ingest_stats,
        }

    def use_settings(self, overrides: dict[str, float]) -> None:
        """Search-time settings (weights, the relevance gate) changed on the live service; the rows stay
        as ingested, so ``ours-abstain`` can be measured on ``ours``' database without a second ingest.
        ``overrides`` apply to the settings the system was built with (not to an earlier ``use_settings``)."""
        self.settings = settings_from_overrides(self._base_settings, overrides)
        if self._svc is not None:
            self._svc.settings = self.settings

    # ---------------------------------------------------------------- ingest
    async def index(self, scope: str, docs: Sequence[Doc]) -> None:
        from google.adk.events import Event
        from google.adk.memory.memory_entry import MemoryEntry
        from google.genai import types

        svc = await self._service()
        self.ingest_stats["memories_offered"] += len(docs)
        if all(d.author for d in docs):  # dialogue turns: the ADK path an agent uses
            # One ADK session per LoCoMo session (they are separate chats on separate days),
            # its turns handed over in order, as ``add_events_to_memory`` receives them.
            by_session: dict[str, list[Any]] = {}
            for d in docs:
                by_session.setdefault(d.session or _session_of(scope, d.doc_id), []).append(d)
            for session_id, turns in by_session.items():
                events = [
                    Event(id=d.doc_id, invocation_id=f"inv-{d.doc_id}", author=d.author,
                          content=types.Content(role="user", parts=[types.Part(text=d.content)]),
                          timestamp=d.time.timestamp())
                    for d in turns
                ]
                await svc.add_events_to_memory(app_name=APP, user_id=scope, events=events, session_id=session_id)
        else:
            entries = [
                MemoryEntry(id=d.doc_id, author=d.author, timestamp=d.time.isoformat(),
                            content=types.Content(role="user", parts=[types.Part(text=d.content)]))
                for d in docs
            ]
            await svc.add_memory(app_name=APP, user_id=scope, memories=entries)

    async def ready(self) -> None:
        """Waits for every embedding, then records what consolidation did."""
        from sqlalchemy import text

        svc = await self._service()
        await svc.flush()
        async with svc.database.engine.connect() as conn:
            row = (await conn.execute(text(
                "SELECT COUNT(*), SUM(superseded_by IS NOT NULL), SUM(embed_status = 'ready') "
                "FROM agent_memories WHERE app_name = :app"), {"app": APP})).one()
        self.ingest_stats.update(rows=int(row[0]), superseded=int(row[1] or 0), embedded=int(row[2] or 0))
        self.ingest_stats["vectorizer"] = dict(getattr(svc.vectorizer, "stats", {}))

    # ---------------------------------------------------------------- search
    async def recall(self, scope: str, query: str, query_vec: np.ndarray) -> None:
        await self._svc.search(APP, scope, query, top_k=1, now=self._clock_by_scope.get(scope))

    async def search(self, scope: str, query: str, query_vec: np.ndarray, top_k: int,
                     weights: dict[str, float] | None = None) -> list[str]:
        hits = await self._svc.search(APP, scope, query, top_k=top_k, weights=weights, bump_access=False,
                                      now=self._clock_by_scope.get(scope))
        return [doc_id for h in hits for doc_id in _doc_ids(h)]


def _session_of(scope: str, doc_id: str) -> str:
    """LoCoMo dialogue id ``D<session>:<turn>`` -> ``<scope>-s<session>``; other ids share one session."""
    head = doc_id.split(":", 1)[0]
    return f"{scope}-s{head[1:]}" if head.startswith("D") and head[1:].isdigit() else scope


def _doc_ids(hit: Any) -> list[str]:
    """Dialogue ids behind a hit: its event ids (turn memories), else its memory id."""
    events = hit.entry.custom_metadata.get("event_ids") or []
    return list(events) if events else [hit.memory_id]


async def load_locomo_and_ku(ours: "OursSystem", loco: Any, ku: Any) -> None:
    """Indexes both datasets into ``ours`` on one clock and replays the knowledge-update recall history."""
    ours.set_clock({**loco.now, **ku.now})
    for ds in (loco, ku):
        for scope, docs in ds.docs.items():
            await ours.index(scope, docs)
    await ours.ready()
    for scope, history in ku.warmups.items():
        for question, vec in history:
            await ours.recall(scope, question, vec)
