"""SQL of the embedding lifecycle: claims, stored vectors, nearest neighbours, model changes; no I/O.

The vectorizer claims ``pending`` rows, stores their vectors and flips them to
``ready`` (:func:`set_embedding`); consolidation reads a new vector's
neighbours (:func:`nearest_neighbour` on OceanBase/seekdb,
:func:`near_duplicate_candidates` on MySQL).  Statements that bind or read an
``embedding`` take the engine's vector type (``EngineDialect.vector_type()``,
whose codec converts numpy arrays in its bind and result processors), so no
caller encodes or decodes a vector by hand.
"""

from __future__ import annotations

import struct
from datetime import datetime
from typing import Any, Sequence

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import TextualSelect
from sqlalchemy.types import TypeEngine

from .queries import FACTS, T

__all__ = [
    "SERVABLE",
    "claim_for_embedding",
    "claimed_rows",
    "embedding_models_in_use",
    "mark_embed_failed",
    "near_duplicate_candidates",
    "nearest_neighbour",
    "postings_written",
    "release_claims",
    "reset_other_models",
    "retry_failed",
    "set_embedding",
    "set_embeddings",
    "set_embeddings_params",
    "EMBEDDINGS_PER_UPDATE",
    "sweep_unembedded",
]


# A pending row names the model meant to embed it (set when it was written): a vectorizer takes
# only its own model's rows, and rows that name none (written before that, or reset by ``reembed``).
# Two services with different models on one database (a LangGraph store with its own ``embed``
# beside the ADK memory service) must not embed each other's rows with the wrong model.
_MODEL_IS_MINE = "(embedding_model IS NULL OR (embedding_model = :model AND embedding_dim = :dim))"


def claim_for_embedding(
    app_name: str, user_id: str, memory_ids: Sequence[str], claim: str, now: datetime, stale_before: datetime,
    *, model: str, dim: int,
) -> tuple[TextClause, dict[str, Any]]:
    """Claims the user's rows of a batch for one vectorizer: ``pending`` ones, or claims older than the lease.

    A conditional UPDATE, so of two processes racing for a row exactly one
    matches it (the row lock orders them; the loser re-reads ``embedding``).
    Only rows meant for this vectorizer's ``model`` (or for no model yet).
    The claimer reads its rows back with :func:`claimed_rows`.
    """
    stmt = text(
        f"UPDATE {T} SET embed_status = 'embedding', embed_claim = :claim, embed_claimed_at = :now "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        f"AND (embed_status = 'pending' OR (embed_status = 'embedding' AND embed_claimed_at < :stale)) AND {_MODEL_IS_MINE}"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"claim": claim, "now": now, "stale": stale_before, "app": app_name, "user": user_id,
                  "ids": list(memory_ids), "model": model, "dim": dim}


def claimed_rows(app_name: str, user_id: str, memory_ids: Sequence[str], claim: str) -> tuple[TextClause, dict[str, Any]]:
    """The rows this claim holds, with what the embedded text is built from, and their postings' state.

    ``term_count < 0``: the row's postings are due, left by a bulk write to
    this round (see ``memory.postings``, deferred postings); they are built
    from ``search_text`` as read here, after the claim's UPDATE: the rows are
    locked by it, so a delete or a text change waits for the postings (and
    then deletes or replaces them), or committed first and the claim missed
    the row.
    """
    stmt = text(
        f"SELECT memory_id, app_name, user_id, content, author, created_at, event_ids, topics, importance_score, "
        f"extractor, confidence, tainted, search_text, term_count FROM {T} WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        "AND embed_status = 'embedding' AND embed_claim = :claim"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids), "claim": claim}


def postings_written(app_name: str, user_id: str, memory_ids: Sequence[str], claim: str) -> tuple[TextClause, dict[str, Any]]:
    """Marks due rows (:func:`claimed_rows`) as indexed once their postings are in: ``term_count`` back to its count."""
    stmt = text(
        f"UPDATE {T} SET term_count = -term_count WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        "AND embed_claim = :claim AND term_count < 0"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids), "claim": claim}


def sweep_unembedded(
    limit: int, *, retry_before: datetime, stale_before: datetime, model: str, dim: int
) -> tuple[TextClause, dict[str, Any]]:
    """Keys of rows this ``model`` is to embed, oldest first: ``pending`` ones and claims of a dead process.

    A row whose last round failed (``embed_attempts > 0``) waits until its
    ``updated_at`` is before ``retry_before``; a claim is taken over once it
    was made before ``stale_before``.  ``failed`` rows (``max_row_attempts``
    used up) are never swept: :func:`retry_failed` brings them back.
    """
    stmt = text(
        f"SELECT app_name, user_id, memory_id FROM {T} "
        "WHERE ((embed_status = 'pending' AND (embed_attempts = 0 OR updated_at < :retry)) "
        f"OR (embed_status = 'embedding' AND embed_claimed_at < :stale)) AND {_MODEL_IS_MINE} ORDER BY updated_at LIMIT :lim"
    )
    return stmt, {"lim": limit, "retry": retry_before, "stale": stale_before, "model": model, "dim": dim}


def set_embedding(vector_type: TypeEngine) -> TextClause:
    """Stores one claimed row's vector and flips it to ``ready`` in the same UPDATE: never half-made.

    Only while the claim still holds: a row deleted meanwhile (tombstone) or
    taken over after the lease expired is left alone.  ``:embedding`` is bound
    as ``vector_type`` (the engine's): pass the numpy vector.
    """
    return text(
        f"UPDATE {T} SET embedding = :embedding, embedding_model = :model, embedding_dim = :dim, "
        "embed_status = 'ready', embed_claim = NULL, embed_claimed_at = NULL, updated_at = :now "
        "WHERE app_name = :app AND user_id = :user AND memory_id = :memory_id "
        "AND embed_status = 'embedding' AND embed_claim = :claim"
    ).bindparams(bindparam("embedding", type_=vector_type))


EMBEDDINGS_PER_UPDATE = 64
"""Rows one :func:`set_embeddings` statement stores at most (64 x 384-d text vectors: ~250 kB of SQL)."""


def set_embeddings(vector_type: TypeEngine, count: int) -> TextClause:
    """:func:`set_embedding` for ``count`` claimed rows of one user in ONE statement (``CASE memory_id``).

    Parameters ``app``, ``user``, ``claim``, ``model``, ``dim``, ``now``, ``ids`` (the memory
    ids) and ``m0``/``e0`` ... (each row's id and vector, bound as ``vector_type``).  The same
    condition as :func:`set_embedding`, row by row: a row deleted or taken over meanwhile is
    left alone.  Why one statement: seekdb paid ~3 ms per row as separate UPDATEs (an
    ``executemany``, or all of them in one packet: 3.1 / 3.8 ms), 1.2 ms as one ``CASE``
    UPDATE of 100 rows into an HNSW-indexed column (2 vCPU at load 22).
    """
    if count < 1:
        raise ValueError("set_embeddings needs at least one row")
    cases = " ".join(f"WHEN :m{i} THEN :e{i}" for i in range(count))
    return text(
        f"UPDATE {T} SET embedding = CASE memory_id {cases} END, embedding_model = :model, embedding_dim = :dim, "
        "embed_status = 'ready', embed_claim = NULL, embed_claimed_at = NULL, updated_at = :now "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        "AND embed_status = 'embedding' AND embed_claim = :claim"
    ).bindparams(bindparam("ids", expanding=True), *(bindparam(f"e{i}", type_=vector_type) for i in range(count)))


def set_embeddings_params(app_name: str, user_id: str, rows: Sequence[tuple[str, np.ndarray]], *, claim: str,
                          model: str, now: datetime) -> dict[str, Any]:
    """:func:`set_embeddings`' parameters for ``rows`` (``(memory_id, vector)`` of one user)."""
    params: dict[str, Any] = {"app": app_name, "user": user_id, "claim": claim, "model": model, "now": now,
                              "dim": int(rows[0][1].shape[0]), "ids": [mid for mid, _ in rows]}
    for i, (mid, vec) in enumerate(rows):
        params[f"m{i}"], params[f"e{i}"] = mid, vec
    return params


def mark_embed_failed(
    app_name: str, user_id: str, memory_ids: Sequence[str], claim: str, now: datetime, max_attempts: int
) -> tuple[TextClause, dict[str, Any]]:
    """Counts a failed round: back to ``pending`` for a later sweep, or ``failed`` once ``max_attempts`` are used.

    The status is computed first, from the old count: MySQL evaluates SET
    assignments left to right with the new values, other engines may not.
    """
    stmt = text(
        f"UPDATE {T} SET embed_status = CASE WHEN embed_attempts + 1 >= :max THEN 'failed' ELSE 'pending' END, "
        "embed_attempts = embed_attempts + 1, embed_claim = NULL, embed_claimed_at = NULL, updated_at = :now "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        "AND embed_status = 'embedding' AND embed_claim = :claim"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"max": int(max_attempts), "now": now, "app": app_name, "user": user_id, "ids": list(memory_ids),
                  "claim": claim}


def release_claims(app_name: str, user_id: str, memory_ids: Sequence[str], claim: str) -> tuple[TextClause, dict[str, Any]]:
    """Gives claimed rows back as ``pending`` without counting an attempt (the vectorizer is closing)."""
    stmt = text(
        f"UPDATE {T} SET embed_status = 'pending', embed_claim = NULL, embed_claimed_at = NULL "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids "
        "AND embed_status = 'embedding' AND embed_claim = :claim"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids), "claim": claim}


def retry_failed(now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """Puts every ``failed`` row back to ``pending`` with a fresh attempt count (an explicit request)."""
    stmt = text(
        f"UPDATE {T} SET embed_status = 'pending', embed_attempts = 0, updated_at = :now WHERE embed_status = 'failed'"
    )
    return stmt, {"now": now}


_NEIGHBOUR_COLUMNS = "memory_id, content, embedding, created_at, event_ids, topics, importance_score"


def nearest_neighbour(
    app_name: str, user_id: str, memory_id: str, vector: np.ndarray, model: str, min_confidence: float,
    vector_type: TypeEngine,
) -> tuple[TextualSelect, dict[str, Any]]:
    """OceanBase: the closest other live, servable memories of the user (HNSW; once per newly embedded row).

    ``vector`` is bound, and each row's ``embedding`` read, through ``vector_type``.
    """
    stmt = text(
        f"SELECT {_NEIGHBOUR_COLUMNS} FROM {T} "
        "WHERE app_name = :app AND user_id = :user AND memory_id <> :id AND embed_status = 'ready' "
        f"AND superseded_by IS NULL AND embedding_model = :model AND {FACTS} AND {SERVABLE} "
        "ORDER BY cosine_distance(embedding, :qv) APPROXIMATE LIMIT 3"
    ).bindparams(bindparam("qv", type_=vector_type)).columns(embedding=vector_type)
    return stmt, {"qv": vector, "app": app_name, "user": user_id, "id": memory_id, "model": model,
                  "min_conf": _float32(min_confidence)}


def near_duplicate_candidates(
    app_name: str, user_id: str, memory_id: str, model: str, limit: int, min_confidence: float,
    vector_type: TypeEngine,
) -> tuple[TextualSelect, dict[str, Any]]:
    """MySQL: the user's other live, servable vectors (read through ``vector_type``), compared in numpy."""
    stmt = text(
        f"SELECT {_NEIGHBOUR_COLUMNS} FROM {T} "
        "WHERE app_name = :app AND user_id = :user "
        "AND memory_id <> :id AND embed_status = 'ready' AND superseded_by IS NULL AND embedding_model = :model "
        f"AND {FACTS} AND {SERVABLE} ORDER BY created_at DESC LIMIT :lim"
    ).columns(embedding=vector_type)
    return stmt, {"app": app_name, "user": user_id, "id": memory_id, "model": model, "lim": limit,
                  "min_conf": _float32(min_confidence)}


SERVABLE = "tainted = 0 AND confidence >= :min_conf"
"""What search could return (``search_sql``'s poisoning guard): only such rows merge or supersede."""


def _float32(value: float) -> float:
    """Rounded to single precision like the FLOAT ``confidence`` column (0.7 is stored as 0.69999999)."""
    return struct.unpack("<f", struct.pack("<f", float(value)))[0]


def embedding_models_in_use() -> TextClause:
    """Distinct (model, dim) pairs of embedded rows: refuse to mix models silently."""
    return text(
        f"SELECT embedding_model, embedding_dim, COUNT(*) FROM {T} WHERE embedding_model IS NOT NULL "
        "AND embed_status <> 'deleted' GROUP BY embedding_model, embedding_dim"
    )


def reset_other_models(model: str, dim: int, now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """Clears vectors made by another model so the vectorizer re-embeds them (``service.reembed()``).

    Tombstones stay tombstones: their model is cleared (tombstones written
    before revision 0007 kept it) but they never become ``pending`` again.
    Live rows name the new model, so only its vectorizers take them.  (MySQL
    evaluates ``SET`` left to right: the model's CASE reads the old status.)
    """
    stmt = text(
        f"UPDATE {T} SET embedding = NULL, "
        "embedding_model = CASE WHEN embed_status = 'deleted' THEN NULL ELSE :m END, "
        "embedding_dim = CASE WHEN embed_status = 'deleted' THEN NULL ELSE :d END, "
        "embed_status = CASE WHEN embed_status = 'deleted' THEN 'deleted' ELSE 'pending' END, embed_attempts = 0, "
        "embed_claim = NULL, embed_claimed_at = NULL, updated_at = :now WHERE embedding_model <> :m OR embedding_dim <> :d"
    )
    return stmt, {"now": now, "m": model, "d": dim}
