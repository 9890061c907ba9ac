"""Consolidation: exact duplicates merge provenance, near duplicates merge, contradictions supersede.

Runs on a connection inside the caller's transaction; the SQL comes from
:mod:`.queries`.  Merge rules:

* Exact duplicate (same normalised content hash, same user): no new row; the
  event ids, topics and the higher importance are merged into the stored row,
  which moves to the *newest* occurrence (its time, author, session, turn
  position and wording; search text, postings and, when the embedded text
  changed, the vector follow) and counts it in ``occurrences``.  Re-ingesting
  an event the row already holds changes nothing.  Repeats do not feed the
  frequency signal: the most repeated turns are small talk ("Thanks!",
  "That's great!"), and frequency means "the user's searches keep needing
  this" (``access_count``); ``occurrences`` is there for analysts and
  callers.  A new occurrence also stores the row anew for retention
  (``stored_at``).  A deleted row (tombstone) whose event ids cover the new
  ones stays deleted.
* Near duplicate (cosine >= ``near_duplicate_similarity`` AND word-set
  Jaccard >= ``near_duplicate_min_overlap``), checked when a *fact*
  (LLM-extracted or added, not a raw dialogue turn) gets its vector:
  the *older* fact is superseded by the newer one, and its
  provenance moves to the newer row.  Newer wins because a near-identical
  restatement is often an update ("my flight is on the 5th" -> "6th"), and
  the old row stays stored for audit.  Cosine alone is not enough: MiniLM
  puts short templated facts about different people or places at >= 0.9
  ("Ines grabbed coffee at Kaffeehaus." vs "Tove grabbed coffee at
  Kaffeehaus.": 237 such pairs among the benchmark's 437 knowledge-update
  facts, 51 even at >= 0.97), so the words must nearly agree too.
* Contradiction (LLM mode): the extractor names older memory ids; they are
  superseded by the new fact in the same transaction as its insert.
"""

from __future__ import annotations

import asyncio

import hashlib
import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Awaitable, Callable, Iterable, Sequence

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection

from ..context import signals
from . import pipeline_queries, postings
from . import queries as q
from .extraction import MemoryDraft, embedding_text, search_text
from .lexical import doc_terms
from .poisoning import servable

NeighbourSearch = Callable[..., Awaitable[list[Any]]]
"""``(conn, app_name, user_id, [(memory_id, vector)], *, model, min_confidence, scan_limit) -> rows`` of
stored facts (``vector_queries`` neighbour columns, ``embedding`` decoded)."""

__all__ = ["WriteOutcome", "content_hash", "merge_near_duplicates", "word_overlap", "write_drafts"]

logger = logging.getLogger(__name__)


def content_hash(text: str) -> str:
    """sha256 of the NFKC-normalised, lower-cased, whitespace-collapsed content."""
    norm = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).lower()).strip()
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _word_set(text: str) -> frozenset[str]:
    """Lower-cased words; CJK runs count per character (they have no spaces)."""
    out: set[str] = set()
    for w in _WORDS.findall(unicodedata.normalize("NFKC", text).lower()):
        out.update(w) if _CJK.search(w) else out.add(w)
    return frozenset(out)


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets (1.0 for two empty texts)."""
    wa, wb = _word_set(a), _word_set(b)
    return len(wa & wb) / len(wa | wb) if wa or wb else 1.0


def _union(*lists: Iterable[str] | None) -> list[str]:
    out: list[str] = []
    for lst in lists:
        for item in lst or ():
            if item not in out:
                out.append(item)
    return out


def _loads(raw: str | None) -> list[str]:
    if not raw:
        return []
    try:
        val = json.loads(raw)
    except ValueError:
        return []
    return [str(v) for v in val] if isinstance(val, list) else []


@dataclass
class WriteOutcome:
    """What :func:`write_drafts` changed: rows inserted, and merged rows whose embedded text changed."""

    inserted: list[str] = field(default_factory=list)
    reembed: list[str] = field(default_factory=list)
    """Rows set back to ``pending`` (they moved to a newer occurrence): the vectorizer embeds them again."""


def _new_occurrences(row_events: list[str], members: list[list[str]]) -> int:
    """How many of the batch's occurrences (their event ids) the row does not hold yet.

    Re-ingesting an event already merged counts nothing; an ``add_memory``
    without events (and with an id not stored yet) is always a new occurrence.
    """
    held = set(row_events)
    return sum(1 for events in members if not events or not set(events) <= held)


def _collapse(drafts: Sequence[MemoryDraft], present: set[str]) -> tuple[dict[str, MemoryDraft], dict[str, list[list[str]]]]:
    """Drafts by content hash; duplicates inside the batch collapse onto the newest, counted.

    The newest occurrence (later ``created_at``; on a tie the later draft)
    supplies the content, time, author, session and position; provenance,
    topics and supersessions are the union, importance the highest.  Also
    returns each hash's occurrences (their own event ids).
    """
    by_hash: dict[str, MemoryDraft] = {}
    members: dict[str, list[list[str]]] = {}
    seen = set(present)
    for d in drafts:
        if d.memory_id in seen:
            continue  # stored already, or the same memory twice in this batch
        seen.add(d.memory_id)
        h = content_hash(d.content)
        kept = by_hash.get(h)
        members.setdefault(h, []).append(list(d.event_ids))
        if kept is None:
            by_hash[h] = d
            continue
        newest, older = (d, kept) if d.created_at >= kept.created_at else (kept, d)
        newest.event_ids = _union(older.event_ids, newest.event_ids)
        newest.topics = _union(older.topics, newest.topics)
        newest.importance = max(older.importance, newest.importance)
        newest.supersedes = _union(older.supersedes, newest.supersedes)
        by_hash[h] = newest
    return by_hash, members


def _merge_row(
    r: Any, d: MemoryDraft, members: list[list[str]], app_name: str, user_id: str, now: datetime
) -> dict[str, Any] | None:
    """The UPDATE parameters that merge draft ``d`` (occurrences ``members``) into stored row ``r``; None: nothing new.

    The row moves to the newest occurrence: a repeat is evidence the memory
    is current, and recency should see its latest date, not its first.
    """
    events = _union(_loads(r.event_ids), d.event_ids)
    fresh = _new_occurrences(_loads(r.event_ids), members)
    newer = fresh > 0 and d.created_at > r.created_at
    src_author, src_ts, src_body = (d.author, d.created_at, d.content) if newer else (r.author, r.created_at, r.content)
    params = {
        "app": app_name,
        "user": user_id,
        "memory_id": r.memory_id,
        "event_ids": json.dumps(events),
        "topics": json.dumps(_union(_loads(r.topics), d.topics)),
        "importance_score": max(float(r.importance_score), d.importance),
        "occurrences": int(r.occurrences) + fresh,
        "content": src_body,
        "author": src_author,
        "created_at": src_ts,
        "session_id": d.session_id if newer else r.session_id,
        "turn_pos": d.turn_pos if newer else r.turn_pos,
        "search_text": search_text(src_author, src_ts, src_body),
        "term_count": sum(doc_terms(search_text(src_author, src_ts, src_body)).values()),
        "reembed": int(embedding_text(src_author, src_ts, src_body) != embedding_text(r.author, r.created_at, r.content)),
        "fresh": fresh,
        "now": now,
    }
    unchanged = (
        params["event_ids"] == json.dumps(_loads(r.event_ids))
        and params["topics"] == json.dumps(_loads(r.topics))
        and params["importance_score"] == float(r.importance_score)
    )
    return None if unchanged and not fresh else params


async def write_drafts(
    conn: AsyncConnection, app_name: str, user_id: str, drafts: Sequence[MemoryDraft], now: datetime,
    *, model: str, dim: int, min_confidence: float = 0.0,
) -> WriteOutcome:
    """Inserts drafts with idempotency and exact-duplicate merging, postings included (one transaction: the caller's).

    New rows wait for ``model`` (``dim``-d): the writing service's embedder.

    A draft supersedes the ids it names only if search could return it
    (:func:`.poisoning.servable` at ``min_confidence``): a tainted or doubtful
    fact must not hide a trusted one.
    """
    out = WriteOutcome()
    if not drafts:
        return out
    stmt, params = q.existing_ids(app_name, user_id, [d.memory_id for d in drafts])
    present = {r[0] for r in (await conn.execute(stmt, params)).all()}
    by_hash, members = _collapse(drafts, present)
    if not by_hash:
        return out
    stmt, params = q.find_by_hashes(app_name, user_id, list(by_hash))
    stored: dict[str, list[Any]] = {}
    for row in (await conn.execute(stmt, params)).all():
        stored.setdefault(row.content_hash, []).append(row)
    inserts: list[MemoryDraft] = []
    merges: list[dict[str, Any]] = []
    for h, d in by_hash.items():
        rows = stored.get(h, [])
        live = [r for r in rows if r.embed_status != "deleted"]
        if live:
            merged = _merge_row(live[-1], d, members[h], app_name, user_id, now)  # the newest live row
            if merged is not None:
                merges.append(merged)
            continue
        if any(set(d.event_ids) <= set(_loads(r.event_ids)) for r in rows):
            continue  # the user deleted this very memory: do not resurrect it
        inserts.append(d)
    if merges:
        await conn.execute(q.merge_duplicate(), merges)
        # a row whose postings a bulk write left to the vectorizer (term_count < 0) gets them here with its
        # positive count (memory.postings, deferred postings)
        moved = [(m["memory_id"], m["search_text"]) for m in merges
                 if m["search_text"] != _stored_text(stored, m) or _postings_due(stored, m)]
        await postings.index_memories(conn, app_name, user_id, moved, replace=True)
        out.reembed = [m["memory_id"] for m in merges if m["reembed"]]
    if inserts:
        texts = {d.memory_id: search_text(d.author, d.created_at, d.content) for d in inserts}
        await conn.execute(
            q.insert_memory(),
            [
                {
                    "memory_id": d.memory_id,
                    "app_name": app_name,
                    "user_id": user_id,
                    "content": d.content,
                    "search_text": texts[d.memory_id],
                    "term_count": sum(doc_terms(texts[d.memory_id]).values()),
                    "occurrences": len(members[content_hash(d.content)]),
                    "content_hash": content_hash(d.content),
                    "author": d.author,
                    "session_id": d.session_id,
                    "event_ids": json.dumps(d.event_ids),
                    "topics": json.dumps(d.topics),
                    "custom_metadata": json.dumps(d.custom_metadata, default=str) if d.custom_metadata else None,
                    "importance_score": float(d.importance),
                    "created_at": d.created_at,
                    "updated_at": now,
                    "extractor": d.extractor,
                    "turn_pos": d.turn_pos,
                    "confidence": float(d.confidence),
                    "tainted": 1 if d.tainted else 0,
                    "embedding_model": model,
                    "embedding_dim": dim,
                }
                for d in inserts
            ],
        )
        await postings.index_memories(conn, app_name, user_id, list(texts.items()), replace=False)
        if measured := [d for d in inserts if d.condensation is not None]:  # the pipeline's drafts (issue #31)
            await conn.execute(pipeline_queries.record_condensation(), [
                {"app": app_name, "user": user_id, "memory_id": d.memory_id, "original_length": d.condensation[0],
                 "ratio": d.condensation[1], "condensed": int(d.condensation[2])}
                for d in measured if d.condensation is not None
            ])
        for d in inserts:
            if d.supersedes and servable(d.confidence, d.tainted, min_confidence):
                stmt, params = q.supersede(app_name, user_id, d.supersedes, d.memory_id, now)
                await conn.execute(stmt, params)
                signals.record_supersession(len(d.supersedes), reason="contradiction")  # issue 30: silent supersession
    out.inserted = [d.memory_id for d in inserts]
    return out


def _stored_text(stored: dict[str, list[Any]], merged: dict[str, Any]) -> str | None:
    for rows in stored.values():
        for r in rows:
            if r.memory_id == merged["memory_id"]:
                return r.search_text
    return None


def _postings_due(stored: dict[str, list[Any]], merged: dict[str, Any]) -> bool:
    """Whether the merged row's postings are still the vectorizer's to write (``term_count < 0``)."""
    return any(r.memory_id == merged["memory_id"] and (r.term_count or 0) < 0 for rows in stored.values() for r in rows)


@dataclass
class _Node:
    memory_id: str
    created_at: datetime
    vec: np.ndarray
    event_ids: list[str]
    topics: list[str]
    importance: float
    in_batch: bool
    content: str = ""
    absorbed: bool = False  # received provenance from an older row
    target: str | None = None  # superseded by this id
    extra: dict[str, Any] = field(default_factory=dict)


def _plan_merges(
    nodes: dict[str, "_Node"], neighbours: list[Any], threshold: float, min_overlap: float
) -> tuple[list["_Node"], dict[str, str]]:
    """Pure: which rows merge into which. Only pairs involving a new (batch) row are compared.

    Similarities are computed batch x all (not all x all): stored rows were
    consolidated when they arrived, so at 50k stored facts this is b*50k
    products instead of a 50k x 50k matrix.
    """
    for r in neighbours:
        if r.memory_id in nodes:
            continue
        vec = r.embedding  # decoded by the engine's vector type (vector_queries)
        if vec is None:
            continue
        nodes[r.memory_id] = _Node(
            r.memory_id, r.created_at, vec.astype(np.float64), _loads(r.event_ids), _loads(r.topics),
            float(r.importance_score), False, r.content,
        )
    ordered = sorted(nodes.values(), key=lambda n: (n.created_at, n.memory_id))
    mat = np.stack([n.vec / (np.linalg.norm(n.vec) or 1.0) for n in ordered])
    batch_idx = [i for i, n in enumerate(ordered) if n.in_batch]
    row_of = {i: k for k, i in enumerate(batch_idx)}
    sims = mat[batch_idx] @ mat.T  # (batch, all)
    merges: dict[str, str] = {}
    for i, node in enumerate(ordered):
        if node.in_batch:
            pairs = ((j, sims[row_of[i], j]) for j in range(i + 1, len(ordered)))
        else:
            pairs = ((j, sims[row_of[j], i]) for j in batch_idx if j > i)
        best, best_sim = None, threshold
        for j, sim in pairs:
            if sim >= best_sim and word_overlap(node.content, ordered[j].content) >= min_overlap:
                best, best_sim = ordered[j], sim
        if best is None:
            continue
        node.target = best.memory_id
        best.event_ids = _union(best.event_ids, node.event_ids)
        best.topics = _union(best.topics, node.topics)
        best.importance = max(best.importance, node.importance)
        best.absorbed = True
        merges[node.memory_id] = best.memory_id
    return ordered, merges


async def merge_near_duplicates(
    conn: AsyncConnection,
    neighbours: NeighbourSearch,
    app_name: str,
    user_id: str,
    batch: Sequence[tuple[str, datetime, np.ndarray, list[str], list[str], float, str]],
    *,
    model: str,
    threshold: float,
    min_overlap: float = 0.8,
    min_confidence: float = 0.0,
    now: datetime,
    scan_limit: int,
) -> dict[str, str]:
    """Supersedes older near-duplicates among a freshly embedded batch and the user's stored rows.

    ``batch`` holds ``(memory_id, created_at, vector, event_ids, topics,
    importance, content)`` for rows of one user whose vectors are about to be stored
    (they are not ``ready`` yet, so the neighbour queries do not see them).
    ``neighbours`` finds the stored candidates the way the engine can
    (``retrievers.neighbour_search``: HNSW neighbours, or the newest
    ``scan_limit`` facts).  Writes the merges; returns ``{older_id: newer_id}``.
    """
    nodes: dict[str, _Node] = {
        mid: _Node(mid, ts, np.asarray(v, dtype=np.float64), list(ev), list(tp), imp, True, body)
        for mid, ts, v, ev, tp, imp, body in batch
    }
    found = await neighbours(conn, app_name, user_id, [(mid, v) for mid, _ts, v, *_ in batch],
                             model=model, min_confidence=min_confidence, scan_limit=scan_limit)
    # Decoding up to scan_limit stored vectors and the similarity maths are CPU
    # work: off the event loop (the transaction stays open meanwhile, so keep it short).
    ordered, merges = await asyncio.to_thread(_plan_merges, nodes, found, threshold, min_overlap)
    for old, new in merges.items():
        stmt, params = q.supersede(app_name, user_id, [old], new, now)
        await conn.execute(stmt, params)
    signals.record_supersession(len(merges), reason="near_duplicate")  # issue 30: silent supersession
    updates = [
        {
            "app": app_name,
            "user": user_id,
            "memory_id": n.memory_id,
            "event_ids": json.dumps(n.event_ids),
            "topics": json.dumps(n.topics),
            "importance_score": n.importance,
            "now": now,
        }
        for n in ordered
        if n.absorbed
    ]
    if updates:
        await conn.execute(q.merge_into(), updates)
    if merges:
        logger.debug("merged %d near-duplicate memories", len(merges))
    return merges
