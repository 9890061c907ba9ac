"""SQL of the memory service's rows: ingest, consolidation, access, deletion, index upkeep; named builders, no I/O.

Each builder returns a statement plus its parameters.  The search statement
(the one-statement hybrid ranking) lives in :mod:`.search_sql`, the embedding
lifecycle's (claims, vectors, neighbours) in :mod:`.vector_queries`; this module
owns the shared table facts it builds on (``T``, ``ROW_COLUMNS``, ``FACTS``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.sql.elements import TextClause

__all__ = [
    "FACTS",
    "FACT_TEST",
    "ROW_COLUMNS",
    "T",
    "bump_access",
    "delete_memory",
    "existing_ids",
    "find_by_hashes",
    "insert_memory",
    "mark_served",
    "merge_duplicate",
    "merge_into",
    "naive_utc",
    "session_event_log",
    "REBUILD_VECTOR_INDEX",
    "rebuild_vector_index",
    "GATHER_TABLE_STATS",
    "MAJOR_FREEZE",
    "MAJOR_COMPACTION_STATE",
    "TABLE_STATS_STATE",
    "set_ef_search",
    "supersede",
    "unsupersede",
    "unsupersede_displaced_by",
    "event_positions",
    "last_turn_pos",
    "memory_stats",
]

T = "agent_memories"
# Facts (LLM-extracted, ``add_memory``), not raw dialogue turns: the rows near-duplicate
# consolidation may touch and the search's version signal compares.  ``{a}``: an alias and a dot.
FACT_TEST = "COALESCE({a}extractor, '') NOT LIKE 'turn:%'"
FACTS = FACT_TEST.format(a="")

# Columns returned for every memory row, in this order (prefixed by the alias).
ROW_COLUMNS = (
    "memory_id",
    "content",
    "author",
    "session_id",
    "event_ids",
    "topics",
    "custom_metadata",
    "importance_score",
    "access_count",
    "last_accessed_at",
    "created_at",
    "extractor",
    "superseded_by",
    "turn_pos",
    "confidence",
    "occurrences",
)


def naive_utc(ts: datetime) -> datetime:
    """Naive UTC, the form every DATETIME(6) column holds."""
    if ts.tzinfo is not None:
        from datetime import timezone

        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def bump_access(app_name: str, user_id: str, memory_ids: Sequence[str], now: datetime) -> tuple[TextClause, dict[str, Any]]:
    """ONE statement bumping ``access_count``/``last_accessed_at`` of every returned row, and serving them.

    ``last_accessed_at`` is the search's ``now`` (a replay's clock, for the
    ranking); ``last_served_at``, retention's clock, is the database's.
    """
    stmt = text(
        f"UPDATE {T} SET access_count = access_count + 1, last_accessed_at = :now, last_served_at = UTC_TIMESTAMP(6) "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"now": now, "app": app_name, "user": user_id, "ids": list(memory_ids)}


def mark_served(app_name: str, user_id: str, memory_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Stamps ``last_served_at`` (database clock) without counting an access: ADK's path when it does not count."""
    stmt = text(
        f"UPDATE {T} SET last_served_at = UTC_TIMESTAMP(6) "
        "WHERE app_name = :app AND user_id = :user AND memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids)}


def insert_memory() -> TextClause:
    """Inserts one memory row (executemany-friendly); embedding starts NULL, status ``pending``.

    ``embedding_model`` / ``embedding_dim`` name the model meant to embed the row
    (the writing service's): only that model's vectorizers claim it.

    ``search_text`` (the full-text source) is ``extraction.search_text`` of the row, ``term_count`` its
    number of terms; the caller writes its postings (``postings.index_memories``) in the same transaction.
    ``stored_at`` (retention's clock) is the database's; ``created_at`` is the source's time.
    """
    return text(
        f"INSERT INTO {T} (memory_id, app_name, user_id, content, search_text, content_hash, author, session_id, "
        "event_ids, topics, custom_metadata, importance_score, access_count, created_at, updated_at, "
        "embed_status, embed_attempts, embedding_model, embedding_dim, extractor, turn_pos, confidence, tainted, "
        "term_count, occurrences, stored_at) "
        "VALUES (:memory_id, :app_name, :user_id, :content, :search_text, :content_hash, :author, :session_id, "
        ":event_ids, :topics, :custom_metadata, :importance_score, 0, :created_at, :updated_at, 'pending', 0, :embedding_model, :embedding_dim, "
        ":extractor, :turn_pos, :confidence, :tainted, :term_count, :occurrences, UTC_TIMESTAMP(6))"
    )


def event_positions(app_name: str, user_id: str, session_id: str, event_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """``(event_id, seq)`` of these events in the stored session log (a unique-key seek each)."""
    stmt = text(
        "SELECT event_id, seq FROM session_events WHERE app_name = :app AND user_id = :user "
        "AND session_id = :sid AND event_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "sid": session_id, "ids": list(event_ids)}


def last_turn_pos(app_name: str, user_id: str, session_id: str) -> tuple[TextClause, dict[str, Any]]:
    """The highest ``turn_pos`` stored for a session (NULL when none): where new turns continue."""
    stmt = text(f"SELECT MAX(turn_pos) FROM {T} WHERE app_name = :app AND user_id = :user AND session_id = :sid")
    return stmt, {"app": app_name, "user": user_id, "sid": session_id}


def existing_ids(app_name: str, user_id: str, memory_ids: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Which of these ids the user has stored already (tombstones included): the idempotency check.

    Ids are per (app, user): another user's row with the same id neither blocks nor shows here.
    """
    stmt = text(
        f"SELECT memory_id FROM {T} WHERE app_name = :app AND user_id = :user AND memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(memory_ids)}


def find_by_hashes(app_name: str, user_id: str, hashes: Sequence[str]) -> tuple[TextClause, dict[str, Any]]:
    """Live or deleted rows with one of these content hashes (exact duplicates), locked for the merge."""
    stmt = text(
        f"SELECT memory_id, content_hash, event_ids, topics, importance_score, embed_status, created_at, author, "
        f"content, session_id, turn_pos, occurrences, search_text, term_count FROM {T} "
        "WHERE app_name = :app AND user_id = :user AND content_hash IN :hashes AND superseded_by IS NULL "
        "ORDER BY created_at FOR UPDATE"
    ).bindparams(bindparam("hashes", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "hashes": list(hashes)}


def merge_into() -> TextClause:
    """Writes merged provenance (event ids, topics, importance) onto a near-duplicate's surviving row (params carry app, user)."""
    return text(
        f"UPDATE {T} SET event_ids = :event_ids, topics = :topics, importance_score = :importance_score, "
        "updated_at = :now WHERE app_name = :app AND user_id = :user AND memory_id = :memory_id"
    )


def merge_duplicate() -> TextClause:
    """Moves an exact duplicate's row to its newest occurrence (``consolidation._merge_row`` computes the values).

    ``reembed = 1`` (the embedded text changed: another day, author or
    wording) sends the row back to ``pending`` for the vectorizer; its old
    vector keeps serving search until the new one is stored, and a claim
    held meanwhile is dropped so that vector is never written.  The caller
    rewrites the postings when ``search_text`` changed.  ``fresh > 0`` (new
    occurrences: the user said it again) stores the row anew for retention.
    """
    return text(
        f"UPDATE {T} SET event_ids = :event_ids, topics = :topics, importance_score = :importance_score, "
        "occurrences = :occurrences, content = :content, author = :author, created_at = :created_at, "
        "session_id = :session_id, turn_pos = :turn_pos, search_text = :search_text, term_count = :term_count, "
        "embed_status = CASE WHEN :reembed = 1 THEN 'pending' ELSE embed_status END, "
        "embed_attempts = CASE WHEN :reembed = 1 THEN 0 ELSE embed_attempts END, "
        "embed_claim = CASE WHEN :reembed = 1 THEN NULL ELSE embed_claim END, "
        "embed_claimed_at = CASE WHEN :reembed = 1 THEN NULL ELSE embed_claimed_at END, "
        "stored_at = CASE WHEN :fresh > 0 THEN UTC_TIMESTAMP(6) ELSE stored_at END, "
        "updated_at = :now WHERE app_name = :app AND user_id = :user AND memory_id = :memory_id"
    )


def supersede(app_name: str, user_id: str, old_ids: Sequence[str], new_id: str, now: datetime):
    """Marks older memories as superseded by ``new_id`` (they stay stored, out of default search)."""
    stmt = text(
        f"UPDATE {T} SET superseded_by = :new_id, updated_at = :now WHERE app_name = :app AND user_id = :user "
        "AND memory_id IN :ids AND memory_id <> :new_id AND superseded_by IS NULL"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"new_id": new_id, "now": now, "app": app_name, "user": user_id, "ids": list(old_ids)}


def unsupersede(app_name: str, user_id: str, memory_id: str, now: datetime):
    """Undoes a supersession: the memory is live again (``service.restore_superseded``); 0 rows if it was not superseded."""
    stmt = text(
        f"UPDATE {T} SET superseded_by = NULL, updated_at = :now WHERE app_name = :app AND user_id = :user "
        "AND memory_id = :id AND superseded_by IS NOT NULL AND embed_status <> 'deleted'"
    )
    return stmt, {"app": app_name, "user": user_id, "id": memory_id, "now": now}


def unsupersede_displaced_by(app_name: str, user_id: str, superseding_ids: Sequence[str], now: datetime):
    """Restores what ``superseding_ids`` displaced (they were just tainted: they may no longer supersede)."""
    stmt = text(
        f"UPDATE {T} SET superseded_by = NULL, updated_at = :now WHERE app_name = :app AND user_id = :user "
        "AND superseded_by IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(superseding_ids), "now": now}


def delete_memory(app_name: str, user_id: str, memory_id: str, now: datetime):
    """Turns a memory into a tombstone: content and vector erased, id and hash kept.

    The id stays so that re-adding the same session does not resurrect what
    the user deleted (ADK's in-memory service behaves the same way); the
    retention sweep keeps it while any event it came from is stored, and
    ``stored_at`` restarts its own TTL at the deletion.  The
    caller deletes the memory's postings in the same transaction.
    """
    stmt = text(
        f"UPDATE {T} SET content = '', search_text = NULL, term_count = 0, embedding = NULL, embedding_model = NULL, "
        "embedding_dim = NULL, topics = NULL, custom_metadata = NULL, embed_status = 'deleted', embed_claim = NULL, "
        "embed_claimed_at = NULL, stored_at = UTC_TIMESTAMP(6), updated_at = :now WHERE app_name = :app "
        "AND user_id = :user AND memory_id = :id AND embed_status <> 'deleted'"
    )
    return stmt, {"now": now, "app": app_name, "user": user_id, "id": memory_id}


REBUILD_VECTOR_INDEX = text(
    "CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', 0)"
)
"""Rebuilds the HNSW index in one pass (OceanBase/seekdb).

An index grown row by row searched ~30x slower at 100k rows than a rebuilt
one (benchmarks/_scale.py); the server rebuilds on its own only daily and
only past 20% new rows.  Took 85-122 s at 100k rows on 2 cores.
"""


TABLE_STATS_STATE = text(
    "SELECT LAST_ANALYZED, STALE_STATS FROM oceanbase.DBA_TAB_STATISTICS "
    f"WHERE OWNER = DATABASE() AND TABLE_NAME = '{T}' AND PARTITION_NAME IS NULL"
)
"""When the optimizer last analysed the memory table, and whether the server counts those statistics stale
(OceanBase/seekdb: more than 10% of the rows changed since).  No row or a NULL date: never analysed."""

MAJOR_FREEZE = text("ALTER SYSTEM MAJOR FREEZE")
"""Starts a major compaction of the tenant (OceanBase/seekdb): every table's rows merged into its baseline.

Why after a bulk load: rows just written sit in memtables and small delta tables, where every
scan reads row by row; the compacted baseline is encoded in blocks that answer counts and sums
from block metadata.  One pool of 30k store fields, right after the load, 2 vCPU at load 11:
the BM25 statistics' ``COUNT``/``AVG`` over the user's rows 78 -> 1.6 ms, the exact top-200
vector scan 240 -> 68 ms (benchmarks/README.md, "Store search")."""

MAJOR_COMPACTION_STATE = text(
    "SELECT FROZEN_SCN, LAST_SCN, STATUS FROM oceanbase.DBA_OB_MAJOR_COMPACTION"
)
"""The tenant's compaction round: the SCN last frozen, the SCN last merged, ``IDLE`` between rounds."""

GATHER_TABLE_STATS = text(f"CALL DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), '{T}')")
"""Optimizer statistics of the memory table: row count, per-column distinct values, and histograms
of the skewed columns it is filtered on (``user_id``).  0.5 s at 100k rows (``benchmarks/_scale.py``).

Why we gather them ourselves: without statistics the optimizer guesses a user owns ~1 row and
plans the ANN candidates as a pre-filter scan, an exact scan of the whole user (80-110 ms at
100k rows instead of 4-8); the server switches a cached plan only after ~30 executions of it,
so every statement shape paid that again, and the server's own job analyses new tables only
every 15 minutes and the rest nightly (``DBA_SCHEDULER_JOBS``)."""


def rebuild_vector_index(delta_rate_threshold: float) -> TextClause:
    """``REBUILD_INDEX`` that rebuilds only when the rows added since the last build exceed this fraction.

    The server keeps that delta itself (seekdb: "if you do not specify
    delta_rate_threshold, the index may not be rebuilt"; 0 forces it), so
    callers need no state of their own (``IndexUpkeep``).
    """
    rate = min(max(float(delta_rate_threshold), 0.0), 1.0)
    return text(f"CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', {rate!r})")


def set_ef_search(ef: int) -> tuple[TextClause, dict[str, Any]]:
    """OceanBase: HNSW search breadth for this connection (server default 64; higher = better recall, slower)."""
    return text("SET ob_hnsw_ef_search = :n"), {"n": int(ef)}


def session_event_log(app_name: str, user_id: str, session_id: str) -> tuple[TextClause, dict[str, Any]]:
    """A stored session's FULL event log in ``seq`` order, compacted (archived) events included.

    ``add_session_to_memory`` reads this: a session loaded by the default
    ``get_session`` lacks the events compaction archived, yet those turns
    are exactly the old ones worth remembering.
    """
    stmt = text(
        "SELECT event_json FROM session_events WHERE app_name = :app AND user_id = :user AND session_id = :sid "
        "ORDER BY seq"
    )
    return stmt, {"app": app_name, "user": user_id, "sid": session_id}


def memory_stats(app_name: str | None) -> tuple[TextClause, dict[str, Any]]:
    """Rows per app and ``embed_status`` (``ready``, ``pending``, ``failed``, ``deleted`` tombstones)."""
    where = "WHERE app_name = :app " if app_name is not None else ""
    stmt = text(
        f"SELECT app_name, embed_status, COUNT(*) AS n FROM {T} {where}GROUP BY app_name, embed_status "
        "ORDER BY app_name, embed_status"
    )
    return stmt, {"app": app_name} if app_name is not None else {}
