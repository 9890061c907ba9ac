"""SQLAlchemy Core tables: the one source of truth for our DDL (Alembic revisions mirror it).

Design notes, each measured or forced by the engines:

* Every key starts with ``app_name, user_id`` so each query is a prefix seek
  and no tenant can read another's rows by accident.
* Timestamps are written from the client (the event's own ``timestamp``):
  seekdb's ``NOW(6)`` advances in ~10 ms steps and can step backwards.
  ``DATETIME(6)`` columns (UTC, naive) are for people and SQL analysts; the
  exact float epochs ADK compares live in ``DOUBLE`` columns.  The exception
  is retention's clock (``touched_at``, ``stored_at``, ``last_served_at``):
  the database's ``UTC_TIMESTAMP(6)``, because a caller's time must not decide
  when data expires, and days-long TTLs do not mind 10 ms steps.
* JSON payloads are stored as ``LONGTEXT`` holding JSON, not the ``JSON``
  type: the text is byte-exact on every engine (MariaDB's JSON is text anyway,
  OceanBase's binary JSON would re-serialise floats and key order), and
  ``JSON_EXTRACT`` still works on it for analysts.
* Collation is ``utf8mb4_bin`` on keys: seekdb knows only ``utf8mb4_general_ci``
  and ``utf8mb4_bin``, and ids must compare case-sensitively like ADK's dicts.
* State is one row per key (``session_state``), so a delta is one multi-row
  upsert with ``dict.update`` semantics and no read-modify-write: two sessions
  writing different ``user:`` keys at once both survive.
"""

from __future__ import annotations


from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    UniqueConstraint,
)
from sqlalchemy.dialects.mysql import LONGTEXT

__all__ = [
    "ENGINE_INDEXES",
    "ID_LEN",
    "LOCK_TABLE",
    "SCOPE_APP",
    "SCOPE_SESSION",
    "SCOPE_USER",
    "STATE_KEY_LEN",
    "VERSION_TABLE",
    "FLOAT32_VECTORS",
    "TEXT_VECTORS",
    "Float32VectorCodec",
    "TextVectorCodec",
    "Vector",
    "VectorCodec",
    "agent_memories",
    "agent_sessions",
    "audit_log",
    "debug_archive",
    "lg_checkpoint_blobs",
    "lg_checkpoint_writes",
    "lg_checkpoints",
    "lg_store_fields",
    "lg_store_items",
    "memory_extraction_jobs",
    "memory_opt_out",
    "memory_terms",
    "memory_user_gen",
    "metadata",
    "model_prices",
    "procedure_runs",
    "procedure_scenarios",
    "procedure_stats",
    "session_events",
    "session_state",
    "setup_lock",
    "state_checkpoints",
]

from .schema_base import (  # noqa: F401  (re-exported: the names users import from here)
    DEFAULT_EMBEDDING_DIM,
    ID_LEN,
    LOCK_TABLE,
    STATE_KEY_LEN,
    VERSION_TABLE,
    metadata,
)
from .schema_base import KEY as _KEY
from .schema_base import SERVER_NOW as _SERVER_NOW
from .schema_base import TABLE_OPTS as _TABLE_OPTS
from .schema_base import ts as _ts

from .schema_vector import (  # noqa: E402,F401  (re-exported: the vector type lives beside its codecs)
    FLOAT32_VECTORS,
    TEXT_VECTORS,
    Float32VectorCodec,
    TextVectorCodec,
    Vector,
    VectorCodec,
)


agent_sessions = Table(
    "agent_sessions",
    metadata,
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    # Sequence number of the newest stored event; doubles as the revision
    # marker for stale-writer detection (compare-and-set in append_event).
    Column("last_seq", BigInteger, nullable=False, server_default="0"),
    Column("event_count", BigInteger, nullable=False, server_default="0"),
    Column("total_tokens", BigInteger, nullable=False, server_default="0"),
    # Exact float epoch ADK hands back as Session.last_update_time.
    Column("last_update_time", Double, nullable=False),
    Column("created_at", _ts(), nullable=False),
    Column("updated_at", _ts(), nullable=False),
    # create_session's state (JSON, ADK-prefixed keys, temp: dropped): the
    # baseline replay needs, since creation state is not an event.
    Column("initial_state", LONGTEXT, nullable=True),
    # When the server last wrote the session (create, append, import), by the database clock
    # (UTC_TIMESTAMP(6)), never the event's own time: what session retention counts from (0015).
    # The default serves writers that do not name it; our connections run in UTC.
    Column("touched_at", _ts(), nullable=False, server_default=_SERVER_NOW),
    PrimaryKeyConstraint("app_name", "user_id", "session_id", name="pk_agent_sessions"),
    Index("ix_sessions_user_recent", "app_name", "user_id", "last_update_time", "session_id"),
    Index("ix_sessions_app_recent", "app_name", "last_update_time", "user_id", "session_id"),
    Index("ix_sessions_app_touched", "app_name", "touched_at"),
    **_TABLE_OPTS,
)

session_events = Table(
    "session_events",
    metadata,
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("event_id", String(ID_LEN, **_KEY), nullable=False),
    Column("invocation_id", String(256, **_KEY), nullable=True),
    Column("author", String(256), nullable=True),
    Column("branch", String(512), nullable=True),
    # message | function_call | function_response | compaction | state | error | other
    Column("event_type", String(32), nullable=False),
    Column("ts", Double, nullable=False),
    Column("event_time", _ts(), nullable=False),
    Column("token_count", Integer, nullable=False, server_default="0"),
    Column("is_final", SmallInteger, nullable=False, server_default="0"),
    # seq of the compaction event whose summary covers this event; NULL while live.
    Column("compacted_by", BigInteger, nullable=True),
    Column("event_json", LONGTEXT, nullable=False),
    # 1 when the app's redaction policy ran over the event before it was written (revision 0010).
    Column("redacted", SmallInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_session_events"),
    UniqueConstraint("app_name", "user_id", "session_id", "event_id", name="uq_session_events_event_id"),
    Index("ix_events_session_ts", "app_name", "user_id", "session_id", "ts"),
    # other sessions' writes to shared (app:/user:) state in a time window, for turn snapshots (0016)
    Index("ix_events_app_ts", "app_name", "ts"),
    **_TABLE_OPTS,
)

SCOPE_APP, SCOPE_USER, SCOPE_SESSION = "app", "user", "session"
"""The values of ``session_state.scope``: ADK's ``app:`` / ``user:`` state prefixes, and the session's own keys."""

session_state = Table(
    "session_state",
    metadata,
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    # 'app' rows have user_id = session_id = ''; 'user' rows have session_id = ''.
    Column("scope", String(8, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    Column("state_key", String(STATE_KEY_LEN, **_KEY), nullable=False),
    Column("value_json", LONGTEXT, nullable=False),
    Column("updated_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "scope", "user_id", "session_id", "state_key", name="pk_session_state"),
    **_TABLE_OPTS,
)

agent_memories = Table(
    "agent_memories",
    metadata,
    Column("memory_id", String(64, **_KEY), nullable=False),
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("content", LONGTEXT, nullable=False),
    # sha256 of the normalised content: exact-duplicate merges.
    Column("content_hash", String(64, **_KEY), nullable=False),
    Column("author", String(256), nullable=True),
    Column("session_id", String(ID_LEN, **_KEY), nullable=True),
    Column("event_ids", LONGTEXT, nullable=True),  # JSON list: provenance
    Column("topics", LONGTEXT, nullable=True),  # JSON list of strings
    Column("custom_metadata", LONGTEXT, nullable=True),  # JSON object
    Column("importance_score", Float, nullable=False, server_default="0.5"),
    Column("access_count", Integer, nullable=False, server_default="0"),
    Column("last_accessed_at", _ts(), nullable=True),
    # When the remembered thing happened (the source event's time), UTC.
    Column("created_at", _ts(), nullable=False),
    Column("updated_at", _ts(), nullable=False),
    Column("embedding", Vector(DEFAULT_EMBEDDING_DIM), nullable=True),
    Column("embedding_model", String(128), nullable=True),
    Column("embedding_dim", Integer, nullable=True),
    # pending -> embedding (claimed by a vectorizer) -> ready | pending (attempt failed) |
    # failed (MemorySettings.max_row_attempts failed rounds: left alone until retry_failed()); deleted = tombstone
    Column("embed_status", String(16), nullable=False, server_default="pending"),
    Column("embed_attempts", Integer, nullable=False, server_default="0"),
    Column("extractor", String(64), nullable=True),  # e.g. 'turn:v1', 'llm:v1', 'manual'
    Column("superseded_by", String(64, **_KEY), nullable=True),
    # What the full-text index covers: the embedded layout "8 May 2023, Caroline: <content>"
    # (extraction.embedding_text), so both retrieval halves see date and speaker (migration 0005),
    # stemmed by memory.lexical.stem_text like the query (migration 0006).
    Column("search_text", LONGTEXT, nullable=True),
    # A turn's position in its session (the event's seq): neighbours for the context signal (0006).
    Column("turn_pos", BigInteger, nullable=True),
    # The vectorizer's claim on a row (status 'embedding'): a token and when it was taken; a claim
    # older than MemorySettings.claim_lease_s belongs to a dead process and is taken over (0007).
    Column("embed_claim", String(32, **_KEY), nullable=True),
    Column("embed_claimed_at", _ts(), nullable=True),
    # Poisoning guards (migration 0011): a tainted memory, or one below
    # MemorySettings.min_confidence, is never returned by search nor injected.
    Column("tainted", SmallInteger, nullable=False, server_default="0"),
    Column("confidence", Float, nullable=False, server_default="1"),
    # How many terms search_text has (memory.lexical.doc_terms, with repeats): the BM25 document
    # length; 0 for a tombstone (migration 0012).
    Column("term_count", Integer, nullable=False, server_default="0"),
    # How many times this exact content was stored for the user (exact-duplicate merges count up;
    # the row carries the newest occurrence's time and provenance) (0012).
    Column("occurrences", Integer, nullable=False, server_default="1"),
    # Retention's clock (0015), both from the database clock, never the source's time: when the server
    # last stored the row (insert, a merged repeat; for a tombstone, the deletion) and when a search
    # last served it to an agent.  ``created_at`` stays the remembered thing's own time.
    Column("stored_at", _ts(), nullable=False, server_default=_SERVER_NOW),
    Column("last_served_at", _ts(), nullable=True),
    # How much the memory condensed its source (0020, issue #31): the source's characters,
    # len(content) / original_length, and 1 when an LLM condensed it (0: stored raw).
    # NULL for add_memory and for rows written before 0020.
    Column("original_length", Integer, nullable=True),
    Column("compression_ratio", Float, nullable=True),
    Column("condensed", SmallInteger, nullable=True),
    # Ids are the caller's (add_memory) or derived per tenant: unique per app and user only (0007).
    PrimaryKeyConstraint("app_name", "user_id", "memory_id", name="pk_agent_memories"),
    Index("ix_memories_user_time", "app_name", "user_id", "created_at"),
    Index("ix_memories_user_hash", "app_name", "user_id", "content_hash"),
    Index("ix_memories_embed_status", "embed_status", "updated_at"),
    Index("ix_memories_session_pos", "app_name", "user_id", "session_id", "turn_pos"),
    # a user's memory count and mean term_count (BM25's N and average length) from the index alone (0012)
    Index("ix_memories_user_terms", "app_name", "user_id", "term_count"),
    # the retention sweep's range: an app's memories stored before the cutoff (0015)
    Index("ix_memories_app_stored", "app_name", "stored_at"),
    **_TABLE_OPTS,
)

memory_terms = Table(
    "memory_terms",
    metadata,
    # The user-keyed lexical index (migration 0012): one posting per (term, memory) of a live
    # memory's search_text (memory.lexical.doc_terms), written in the transaction that writes the
    # memory.  Search scores BM25 over the user's own postings (memory.postings), so a user's
    # ranking never depends on other tenants' rows; the key makes each query term one range scan.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("term", String(64, **_KEY), nullable=False),
    Column("memory_id", String(64, **_KEY), nullable=False),
    Column("tf", Integer, nullable=False),  # occurrences of the term in search_text
    # the memory's term_count, so a big user's BM25 is summed from the postings alone (migration 0013)
    Column("doc_len", Integer, nullable=False, server_default="0"),
    PrimaryKeyConstraint("app_name", "user_id", "term", "memory_id", name="pk_memory_terms"),
    # a memory's postings, for rewriting and deleting them
    Index("ix_memory_terms_memory", "app_name", "user_id", "memory_id"),
    **_TABLE_OPTS,
)

memory_extraction_jobs = Table(
    "memory_extraction_jobs",
    metadata,
    # The durable extraction queue (migration 0020, issue #31): one row per exchange waiting for
    # LLM extraction (memory.pipeline).  pending -> running (claimed: token + time; a claim older
    # than PipelineSettings.claim_lease_s is taken over) -> done (payload emptied: the row marks the
    # exchange as seen) once its memories are written, or back to pending at next_attempt_at after a failure, or failed after max_attempts.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("job_id", String(64, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=True),
    Column("payload", LONGTEXT, nullable=False),  # JSON: the exchange's turns (redacted) and metadata
    # the user's write-guard generation at enqueue: an erasure since then drops the job's memories
    Column("generation", BigInteger, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", _ts(), nullable=False),
    Column("claim", String(32, **_KEY), nullable=True),
    Column("claimed_at", _ts(), nullable=True),
    Column("last_error", String(256), nullable=True),  # the exception's class, never its message
    Column("created_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_id", "job_id", name="pk_memory_extraction_jobs"),
    Index("ix_extraction_jobs_due", "status", "next_attempt_at"),
    **_TABLE_OPTS,
)

memory_opt_out = Table(
    "memory_opt_out",
    metadata,
    # One row per user who asked that nothing be remembered (migration 0011);
    # sessions keep working, ingest stores nothing while the row exists.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("opted_out_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_id", name="pk_memory_opt_out"),
    **_TABLE_OPTS,
)

memory_user_gen = Table(
    "memory_user_gen",
    metadata,
    # One row per (app, user) whose memories were ever written, erased or opted
    # out (migration 0014): every memory write locks it in its transaction and
    # checks ``generation`` against the one it read when it started; erasure and
    # opt-out bump it under the same lock, so a write in flight across them fails
    # instead of re-creating data.  Keyed by a SHA-256 of the user id, not the id
    # itself: the row outlives the user's erasure (it must, to stop late writes),
    # and ``delete_user_data`` leaves no row holding the user id outside the audit log.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_key", String(64, **_KEY), nullable=False),  # sha256(user_id) in hex
    Column("generation", BigInteger, nullable=False, server_default="0"),
    Column("erased_at", _ts(), nullable=True),  # the latest delete_user_data of the user, UTC
    Column("updated_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_key", name="pk_memory_user_gen"),
    **_TABLE_OPTS,
)

debug_archive = Table(
    "debug_archive",
    metadata,
    # What ADK discards, kept when the session service's debug archive is on
    # (migration 0011): ``temp:`` state deltas, and those written by tools.
    # A bounded FIFO per session: ``entry_seq`` counts 1, 2, 3, ... per session
    # and the oldest rows beyond the bound are deleted by the append that adds new ones.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    Column("entry_seq", BigInteger, nullable=False),
    Column("event_seq", BigInteger, nullable=False),  # the event's seq in session_events
    Column("event_id", String(ID_LEN, **_KEY), nullable=False),
    Column("invocation_id", String(256, **_KEY), nullable=True),
    # temp_state (any author) | tool_scratch (written by a tool: the event carries its response)
    Column("kind", String(16), nullable=False),
    Column("tool_name", String(256), nullable=True),  # comma-separated when parallel calls share one event
    Column("state_key", String(STATE_KEY_LEN, **_KEY), nullable=False),  # with its temp: prefix
    Column("value_json", LONGTEXT, nullable=False),
    Column("created_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_id", "session_id", "entry_seq", name="pk_debug_archive"),
    **_TABLE_OPTS,
)

audit_log = Table(
    "audit_log",
    metadata,
    # Append-only: one row per audited operation (adk_oceanbase.audit). Ids and
    # numbers only, never content, so the log itself holds no personal data.
    Column("audit_id", BigInteger, primary_key=True, autoincrement=True),
    Column("at", _ts(), nullable=False),
    # create_session | get_session | list_sessions | delete_session | append | compaction
    # | memory_add | memory_search | memory_delete | retention_sweep | delete_user
    # | memory_taint | memory_opt_out | memory_opt_in (migration 0014)
    Column("operation", String(32), nullable=False),
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=True),
    Column("session_id", String(ID_LEN, **_KEY), nullable=True),
    Column("event_id", String(ID_LEN, **_KEY), nullable=True),
    Column("invocation_id", String(256, **_KEY), nullable=True),
    Column("duration_ms", Double, nullable=False),
    Column("status", String(8), nullable=False),  # ok | error
    Column("error_code", String(64), nullable=True),  # the error's class name (and driver error number)
    Column("row_count", BigInteger, nullable=True),
    # who did it (migration 0014): AuditSettings.actor, audit_actor(...), or the CLI's --actor
    Column("actor", String(ID_LEN, **_KEY), nullable=True),
    Index("ix_audit_user_time", "app_name", "user_id", "at"),
    Index("ix_audit_time", "at"),
    **_TABLE_OPTS,
)

state_checkpoints = Table(
    "state_checkpoints",
    metadata,
    # Materialised turn snapshots (migration 0016, adk_oceanbase.context.snapshots): the merged
    # state (session keys, and the app:/user: keys as they were then) right after the event at
    # ``seq``, written lazily by snapshot reads every CHECKPOINT_EVERY events, so a snapshot
    # folds at most that many of the session's deltas plus other sessions' writes since ``ts``.
    # Derived from session_events (already redacted); valid only while ``event_id`` is still the
    # event at ``seq`` (a deleted and re-created session has other events).
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("event_id", String(ID_LEN, **_KEY), nullable=False),
    Column("ts", Double, nullable=False),
    Column("state_json", LONGTEXT, nullable=False),
    Column("created_at", _ts(), nullable=False, server_default=_SERVER_NOW),
    PrimaryKeyConstraint("app_name", "user_id", "session_id", "seq", name="pk_state_checkpoints"),
    # the user's newest checkpoint before an instant, whatever its session: a base for shared keys
    Index("ix_checkpoints_user_ts", "app_name", "user_id", "ts"),
    **_TABLE_OPTS,
)

model_prices = Table(
    "model_prices",
    metadata,
    # Prices the cost views (v_cost_daily) multiply token counts by (migration 0016); analysts
    # fill it. USD per million tokens; cached prompt tokens at cached_usd_per_mtok when set.
    Column("model", String(128, **_KEY), nullable=False),
    Column("prompt_usd_per_mtok", Double, nullable=False),
    Column("completion_usd_per_mtok", Double, nullable=False),
    Column("cached_usd_per_mtok", Double, nullable=True),
    Column("updated_at", _ts(), nullable=False, server_default=_SERVER_NOW),
    PrimaryKeyConstraint("model", name="pk_model_prices"),
    **_TABLE_OPTS,
)

# Not part of ``metadata`` (nor of any revision): setup creates it before the
# first revision can run, and keeps it through ``downgrade base``, like
# Alembic's version table.  ``setup_lock.schema_lock`` row-locks its one row.
setup_lock = Table(
    LOCK_TABLE,
    MetaData(),
    Column("name", String(64, **_KEY), nullable=False),
    PrimaryKeyConstraint("name", name="pk_adk_oceanbase_lock"),
    **_TABLE_OPTS,
)

# Index clauses of ``CREATE TABLE`` that SQLAlchemy cannot spell, per engine
# (``EngineDialect.name``): the HNSW index.  A new database is created at head
# from the tables above plus these (:mod:`adk_oceanbase.head_schema`); the
# revision that made it is 0001.  (The full-text index on ``search_text``,
# 0005, was dropped by 0021: search reads ``memory_terms``.)  A revision adding
# an engine-specific index adds its clause here too; tests/test_head_schema.py
# checks that the one-step schema equals the revision chain on both engines.
ENGINE_INDEXES: dict[str, dict[str, tuple[str, ...]]] = {
    "agent_memories": {
        "oceanbase": (
            "VECTOR INDEX ix_memories_embedding (embedding) WITH (distance=cosine, type=hnsw, lib=vsag)",
        ),
    },
}

# The Agno (revision 0018) and LangGraph (revision 0017) tables live in their own module on the same metadata.
from . import schema_agno  # noqa: E402,F401  (registers its tables on metadata)
from .schema_procedural import procedure_runs, procedure_scenarios, procedure_stats  # noqa: E402,F401
from .schema_langgraph import (  # noqa: E402,F401  (registers its tables; re-exported)
    lg_checkpoint_blobs,
    lg_checkpoint_writes,
    lg_checkpoints,
    lg_store_fields,
    lg_store_items,
)
