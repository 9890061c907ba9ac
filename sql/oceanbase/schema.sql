-- adk-oceanbase schema for OceanBase 4.3.5+ / seekdb (MySQL mode), equivalent to Alembic head (revision 0010) and adk_oceanbase/schema.py.
-- Prefer `adk-oceanbase db upgrade --url URL`: it creates exactly this and records the revision.
-- This file is for DBAs who apply DDL by hand (then apply ../views.sql for the analyst views); tests/test_sql_files.py checks it matches a migrated database.
-- Keys are utf8mb4_bin (case-sensitive, like ADK's ids); timestamps are UTC (DATETIME(6)), exact epochs in DOUBLE.

CREATE TABLE agent_sessions (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  last_seq BIGINT NOT NULL DEFAULT 0,         -- seq of the newest event; the append compare-and-set revision
  event_count BIGINT NOT NULL DEFAULT 0,
  total_tokens BIGINT NOT NULL DEFAULT 0,
  last_update_time DOUBLE NOT NULL,           -- exact float epoch ADK returns as Session.last_update_time
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  initial_state LONGTEXT,                     -- create_session's state as JSON (replay's baseline)
  touched_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),  -- last create/append/import by the database clock: retention counts from it (0015)
  CONSTRAINT pk_agent_sessions PRIMARY KEY (app_name, user_id, session_id),
  INDEX ix_sessions_user_recent (app_name, user_id, last_update_time, session_id),
  INDEX ix_sessions_app_recent (app_name, last_update_time, user_id, session_id),
  INDEX ix_sessions_app_touched (app_name, touched_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE session_events (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  seq BIGINT NOT NULL,                        -- per-session order: 1, 2, 3, ...
  event_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  invocation_id VARCHAR(256) COLLATE utf8mb4_bin,
  author VARCHAR(256),
  branch VARCHAR(512),
  event_type VARCHAR(32) NOT NULL,            -- message | function_call | function_response | compaction | state | error | other
  ts DOUBLE NOT NULL,                         -- the event's own timestamp (epoch seconds)
  event_time DATETIME(6) NOT NULL,            -- the same instant, UTC, for people
  token_count INTEGER NOT NULL DEFAULT 0,
  is_final SMALLINT NOT NULL DEFAULT 0,
  compacted_by BIGINT,                        -- seq of the compaction event covering this one; NULL while live
  event_json LONGTEXT NOT NULL,               -- the full ADK Event as JSON
  redacted SMALLINT NOT NULL DEFAULT 0,       -- 1: the app's redaction policy ran over it before it was written
  CONSTRAINT pk_session_events PRIMARY KEY (app_name, user_id, session_id, seq),
  CONSTRAINT uq_session_events_event_id UNIQUE (app_name, user_id, session_id, event_id),
  INDEX ix_events_session_ts (app_name, user_id, session_id, ts),
  INDEX ix_events_app_ts (app_name, ts)                  -- other sessions' shared-state writes in a window (0016)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE session_state (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  scope VARCHAR(8) COLLATE utf8mb4_bin NOT NULL,          -- app | user | session
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,      -- '' for app scope
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,   -- '' for app and user scopes
  state_key VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,    -- without the app:/user: prefix
  value_json LONGTEXT NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_session_state PRIMARY KEY (app_name, scope, user_id, session_id, state_key)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agent_memories (
  memory_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  content LONGTEXT NOT NULL,
  content_hash VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,  -- sha256 of normalised content (exact dedupe)
  author VARCHAR(256),
  session_id VARCHAR(128) COLLATE utf8mb4_bin,
  event_ids LONGTEXT,                                     -- JSON list: provenance
  topics LONGTEXT,                                        -- JSON list of strings
  custom_metadata LONGTEXT,                               -- JSON object
  importance_score FLOAT NOT NULL DEFAULT 0.5,
  access_count INTEGER NOT NULL DEFAULT 0,
  last_accessed_at DATETIME(6),
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  embedding VECTOR(384),
  embedding_model VARCHAR(128),
  embedding_dim INTEGER,
  embed_status VARCHAR(16) NOT NULL DEFAULT 'pending',   -- pending | embedding (claimed) | ready | failed | deleted
  embed_attempts INTEGER NOT NULL DEFAULT 0,
  extractor VARCHAR(64),
  superseded_by VARCHAR(64) COLLATE utf8mb4_bin,
  search_text LONGTEXT,                                   -- lexical.stem_text("<date>, <author>: <content>") (what is embedded, stemmed): the source of memory_terms
  turn_pos BIGINT,                                        -- a turn's position in its session (event seq): the context signal's neighbours
  embed_claim VARCHAR(32) COLLATE utf8mb4_bin,            -- a vectorizer's claim token (status 'embedding')
  embed_claimed_at DATETIME(6),                           -- when it was claimed: older than the lease = taken over
  tainted SMALLINT NOT NULL DEFAULT 0,                    -- 1: never returned by search nor injected (mark_tainted)
  confidence FLOAT NOT NULL DEFAULT 1,                    -- 0..1; below MemorySettings.min_confidence: never returned
  term_count INTEGER NOT NULL DEFAULT 0,                  -- terms in search_text (lexical.doc_terms): BM25 document length; 0 = tombstone; < 0 = minus the length while the vectorizer owes the postings (memory.postings)
  occurrences INTEGER NOT NULL DEFAULT 1,                 -- times this exact content was stored (merged onto the newest occurrence)
  stored_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),  -- last insert/merged repeat/deletion by the database clock (retention, 0015)
  last_served_at DATETIME(6),                              -- last search that served it, database clock (retention, 0015)
  original_length INTEGER,                                 -- characters of the source the pipeline made it from (0020)
  compression_ratio FLOAT,                                 -- len(content) / original_length (0020)
  condensed SMALLINT,                                      -- 1: an LLM condensed it, 0: stored raw, NULL: not the pipeline's (0020)
  CONSTRAINT pk_agent_memories PRIMARY KEY (app_name, user_id, memory_id),
  INDEX ix_memories_user_time (app_name, user_id, created_at),
  INDEX ix_memories_user_hash (app_name, user_id, content_hash),
  INDEX ix_memories_embed_status (embed_status, updated_at),
  INDEX ix_memories_session_pos (app_name, user_id, session_id, turn_pos),
  INDEX ix_memories_user_terms (app_name, user_id, term_count),
  INDEX ix_memories_app_stored (app_name, stored_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE audit_log (                                  -- one row per audited operation; ids and numbers, never content
  audit_id BIGINT NOT NULL AUTO_INCREMENT,
  at DATETIME(6) NOT NULL,
  operation VARCHAR(32) NOT NULL,                         -- create_session | get_session | list_sessions | delete_session | append | compaction | memory_add | memory_search | memory_delete | retention_sweep | delete_user | memory_taint | memory_untaint | memory_opt_out | memory_opt_in
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  session_id VARCHAR(128) COLLATE utf8mb4_bin,
  event_id VARCHAR(128) COLLATE utf8mb4_bin,
  invocation_id VARCHAR(256) COLLATE utf8mb4_bin,
  duration_ms DOUBLE NOT NULL,
  status VARCHAR(8) NOT NULL,                             -- ok | error
  error_code VARCHAR(64),                                 -- the error's class name (":<driver error number>" when it has one)
  row_count BIGINT,                                       -- events, sessions, memories or rows the operation read or wrote
  actor VARCHAR(128) COLLATE utf8mb4_bin,                 -- who made the call (AuditSettings.actor, audit_actor(), CLI --actor)
  PRIMARY KEY (audit_id),
  INDEX ix_audit_user_time (app_name, user_id, at),
  INDEX ix_audit_time (at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE VECTOR INDEX ix_memories_embedding ON agent_memories(embedding) WITH (distance=cosine, type=hnsw, lib=vsag);

CREATE TABLE memory_terms (                               -- per-user lexical index: postings of search_text, scored with BM25 by search
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  term VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,           -- a stemmed word, or a CJK/kana/Hangul character bigram
  memory_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  tf INTEGER NOT NULL,                                     -- occurrences of the term in the memory's search_text
  doc_len INTEGER NOT NULL DEFAULT 0,                       -- the memory's term_count (BM25 length, read without its row)
  CONSTRAINT pk_memory_terms PRIMARY KEY (app_name, user_id, term, memory_id),
  INDEX ix_memory_terms_memory (app_name, user_id, memory_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE state_checkpoints (                          -- materialised turn snapshots, written lazily by snapshot reads (0016)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  seq BIGINT NOT NULL,                                     -- the state right after this event
  event_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,      -- valid while this is still the event at seq
  ts DOUBLE NOT NULL,
  state_json LONGTEXT NOT NULL,                            -- merged state: session keys and app:/user: keys as of ts
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT pk_state_checkpoints PRIMARY KEY (app_name, user_id, session_id, seq),
  INDEX ix_checkpoints_user_ts (app_name, user_id, ts)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE model_prices (                               -- USD per million tokens per model, for v_cost_daily (0016)
  model VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  prompt_usd_per_mtok DOUBLE NOT NULL,
  completion_usd_per_mtok DOUBLE NOT NULL,
  cached_usd_per_mtok DOUBLE,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT pk_model_prices PRIMARY KEY (model)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE memory_extraction_jobs (                     -- the durable extraction queue: one row per exchange (memory.pipeline, 0020)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  job_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,         -- the id of the first memory it writes
  session_id VARCHAR(128) COLLATE utf8mb4_bin,
  payload LONGTEXT NOT NULL,                               -- JSON: the exchange's turns (redacted) and metadata, '' once done
  generation BIGINT NOT NULL DEFAULT 0,                    -- the user's write-guard generation at enqueue
  status VARCHAR(16) NOT NULL DEFAULT 'pending',           -- pending | running (claimed) | done | failed
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6) NOT NULL,                    -- retry backoff, persisted
  claim VARCHAR(32) COLLATE utf8mb4_bin,                   -- the claiming worker's token
  claimed_at DATETIME(6),                                  -- older than PipelineSettings.claim_lease_s: taken over
  last_error VARCHAR(256),                                 -- the exception's class, never its message
  created_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_memory_extraction_jobs PRIMARY KEY (app_name, user_id, job_id),
  INDEX ix_extraction_jobs_due (status, next_attempt_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE memory_opt_out (                             -- users who asked not to be remembered (set_memory_opt_out)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  opted_out_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_memory_opt_out PRIMARY KEY (app_name, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE memory_user_gen (                            -- memory write guard: writes lock it, erasure and opt-out bump it
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_key VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,      -- sha256(user_id), hex: the row outlives the user's erasure
  generation BIGINT NOT NULL DEFAULT 0,
  erased_at DATETIME(6),                                  -- the user's latest delete_user_data
  updated_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_memory_user_gen PRIMARY KEY (app_name, user_key)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE debug_archive (                              -- temp: state and tool scratch values ADK discards (debug mode only)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  entry_seq BIGINT NOT NULL,                              -- 1, 2, 3, ... per session: a bounded FIFO
  event_seq BIGINT NOT NULL,                              -- the event's seq in session_events
  event_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  invocation_id VARCHAR(256) COLLATE utf8mb4_bin,
  kind VARCHAR(16) NOT NULL,                              -- temp_state | tool_scratch
  tool_name VARCHAR(256),                                 -- tool_scratch: the tool(s) whose response carried the value
  state_key VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,    -- with its temp: prefix
  value_json LONGTEXT NOT NULL,
  created_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_debug_archive PRIMARY KEY (app_name, user_id, session_id, entry_seq)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE lg_checkpoints (                             -- LangGraph checkpoints (OceanBaseSaver): the checkpoint without its channel values
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  thread_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  checkpoint_ns VARCHAR(255) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  checkpoint_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  parent_checkpoint_id VARCHAR(64) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',  -- the thread's user ('' = none): erasure
  run_id VARCHAR(128) COLLATE utf8mb4_bin,                -- metadata's run_id: delete_for_runs
  value_type VARCHAR(32) NOT NULL,
  checkpoint LONGBLOB NOT NULL,
  metadata LONGTEXT NOT NULL,                             -- JSON; list(filter=...) is JSON_CONTAINS
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  delta_channel VARCHAR(128) COLLATE utf8mb4_bin,           -- one changed channel value of the put (the message list's delta), as a blob row
  delta_version VARCHAR(64) COLLATE utf8mb4_bin,            -- would hold it: a put is then one statement (revision 0023)
  delta_type VARCHAR(32),
  delta_payload LONGBLOB,
  CONSTRAINT pk_lg_checkpoints PRIMARY KEY (app_name, thread_id, checkpoint_ns, checkpoint_id),
  INDEX ix_lg_checkpoints_user (app_name, user_id),
  INDEX ix_lg_checkpoints_run (app_name, run_id),
  INDEX ix_lg_checkpoints_created (app_name, created_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE lg_checkpoint_blobs (                        -- one channel value per (channel, version), as the Postgres saver stores them
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  thread_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  checkpoint_ns VARCHAR(255) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  channel VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  version VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  value_type VARCHAR(32) NOT NULL,                        -- "empty": no value at that version
  payload LONGBLOB,
  CONSTRAINT pk_lg_checkpoint_blobs PRIMARY KEY (app_name, thread_id, checkpoint_ns, channel, version),
  INDEX ix_lg_blobs_user (app_name, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE lg_checkpoint_writes (                       -- pending writes of a checkpoint's tasks
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  thread_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  checkpoint_ns VARCHAR(255) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  checkpoint_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  task_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  idx INTEGER NOT NULL,                                   -- negative for special writes (errors, interrupts)
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  channel VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  task_path VARCHAR(255) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  value_type VARCHAR(32) NOT NULL,
  payload LONGBLOB,
  CONSTRAINT pk_lg_checkpoint_writes PRIMARY KEY (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx),
  INDEX ix_lg_writes_user (app_name, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE lg_store_items (                             -- LangGraph Store items (OceanBaseStore)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  namespace VARCHAR(300) COLLATE utf8mb4_bin NOT NULL,    -- labels joined by "."
  item_key VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',  -- the namespace's user ('' = none): erasure
  value_json LONGTEXT NOT NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6),                                 -- TTL; NULL never expires
  ttl_minutes DOUBLE,
  indexed_fields INTEGER NOT NULL DEFAULT 0,              -- agent_memories rows holding this item's indexed fields
  stored_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT pk_lg_store_items PRIMARY KEY (app_name, namespace, item_key),
  INDEX ix_lg_store_user (app_name, user_id),
  INDEX ix_lg_store_expires (app_name, expires_at),
  INDEX ix_lg_store_unindexed (app_name, indexed_fields, namespace)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE lg_store_fields (                            -- a Store item's indexed field -> the agent_memories row holding its text
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  namespace VARCHAR(300) COLLATE utf8mb4_bin NOT NULL,
  item_key VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,
  field_no INTEGER NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  path VARCHAR(255) COLLATE utf8mb4_bin NOT NULL,         -- the field's path in the value ("text", "tags[0]")
  memory_user VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,  -- whose memory pool (agent_memories.user_id) holds it
  memory_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  CONSTRAINT pk_lg_store_fields PRIMARY KEY (app_name, namespace, item_key, field_no),
  INDEX ix_lg_fields_user (app_name, user_id),
  INDEX ix_lg_fields_memory (app_name, memory_user, memory_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- ---------------------------------------------------------------- Agno (revision 0018, adk_oceanbase.agno)
-- Agno's BaseDb on this store: sessions with their runs, metrics, eval runs, knowledge, traces, spans,
-- learnings and the schema version (Agno's user memories are rows of agent_memories).
CREATE TABLE agno_ob_eval_runs (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  run_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  eval_type VARCHAR(50) NOT NULL,
  eval_data LONGTEXT,
  eval_input LONGTEXT,
  name VARCHAR(255),
  agent_id VARCHAR(128) COLLATE utf8mb4_bin,
  team_id VARCHAR(128) COLLATE utf8mb4_bin,
  workflow_id VARCHAR(128) COLLATE utf8mb4_bin,
  model_id VARCHAR(128) COLLATE utf8mb4_bin,
  model_provider VARCHAR(128),
  evaluated_component_name VARCHAR(255),
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  CONSTRAINT pk_agno_ob_eval_runs PRIMARY KEY (app_name, run_id),
  INDEX ix_agno_evals_time (app_name, created_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_knowledge (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  name VARCHAR(255),
  description LONGTEXT,
  metadata LONGTEXT,
  type VARCHAR(50),
  size BIGINT,
  linked_to VARCHAR(128) COLLATE utf8mb4_bin,
  access_count BIGINT,
  created_at BIGINT,
  updated_at BIGINT,
  status VARCHAR(50),
  status_message LONGTEXT,
  external_id VARCHAR(128) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  CONSTRAINT pk_agno_ob_knowledge PRIMARY KEY (app_name, id),
  INDEX ix_agno_knowledge_user (app_name, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_learnings (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  learning_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  learning_type VARCHAR(64) NOT NULL,
  namespace VARCHAR(128) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  agent_id VARCHAR(128) COLLATE utf8mb4_bin,
  team_id VARCHAR(128) COLLATE utf8mb4_bin,
  workflow_id VARCHAR(128) COLLATE utf8mb4_bin,
  session_id VARCHAR(128) COLLATE utf8mb4_bin,
  entity_id VARCHAR(128) COLLATE utf8mb4_bin,
  entity_type VARCHAR(64),
  content LONGTEXT,
  metadata LONGTEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  CONSTRAINT pk_agno_ob_learnings PRIMARY KEY (app_name, learning_id),
  INDEX ix_agno_learnings_type (app_name, learning_type, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_metrics (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  agent_runs_count BIGINT NOT NULL DEFAULT '0',
  team_runs_count BIGINT NOT NULL DEFAULT '0',
  workflow_runs_count BIGINT NOT NULL DEFAULT '0',
  agent_sessions_count BIGINT NOT NULL DEFAULT '0',
  team_sessions_count BIGINT NOT NULL DEFAULT '0',
  workflow_sessions_count BIGINT NOT NULL DEFAULT '0',
  users_count BIGINT NOT NULL DEFAULT '0',
  token_metrics LONGTEXT,
  model_metrics LONGTEXT,
  date DATE NOT NULL,
  aggregation_period VARCHAR(20) NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  completed SMALLINT NOT NULL DEFAULT '0',
  CONSTRAINT pk_agno_ob_metrics PRIMARY KEY (app_name, id),
  CONSTRAINT uq_agno_metrics_bucket UNIQUE (app_name, date, aggregation_period, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_runs (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  run_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  run_type VARCHAR(20),
  agent_id VARCHAR(128) COLLATE utf8mb4_bin,
  team_id VARCHAR(128) COLLATE utf8mb4_bin,
  workflow_id VARCHAR(128) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  parent_run_id VARCHAR(128) COLLATE utf8mb4_bin,
  status VARCHAR(32),
  run_index BIGINT,
  run_data LONGTEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  CONSTRAINT pk_agno_ob_runs PRIMARY KEY (app_name, run_id),
  INDEX ix_agno_runs_session (app_name, session_id, run_index),
  INDEX ix_agno_runs_user (app_name, user_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_schema_versions (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  table_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  version VARCHAR(16) NOT NULL,
  created_at VARCHAR(64) NOT NULL,
  updated_at VARCHAR(64),
  CONSTRAINT pk_agno_ob_schema_versions PRIMARY KEY (app_name, table_name)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_sessions (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_type VARCHAR(20) NOT NULL,
  agent_id VARCHAR(128) COLLATE utf8mb4_bin,
  team_id VARCHAR(128) COLLATE utf8mb4_bin,
  workflow_id VARCHAR(128) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  session_data LONGTEXT,
  agent_data LONGTEXT,
  team_data LONGTEXT,
  workflow_data LONGTEXT,
  metadata LONGTEXT,
  summary LONGTEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  touched_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT pk_agno_ob_sessions PRIMARY KEY (app_name, session_id),
  INDEX ix_agno_sessions_touched (app_name, touched_at),
  INDEX ix_agno_sessions_type (app_name, session_type, created_at),
  INDEX ix_agno_sessions_user (app_name, user_id, created_at)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_spans (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  span_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  trace_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  parent_span_id VARCHAR(128) COLLATE utf8mb4_bin,
  name VARCHAR(255),
  span_kind VARCHAR(50),
  status_code VARCHAR(50),
  status_message LONGTEXT,
  start_time VARCHAR(64) NOT NULL,
  end_time VARCHAR(64) NOT NULL,
  duration_ms BIGINT,
  attributes LONGTEXT,
  created_at VARCHAR(64) NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  CONSTRAINT pk_agno_ob_spans PRIMARY KEY (app_name, span_id),
  INDEX ix_agno_spans_trace (app_name, trace_id, start_time)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE agno_ob_traces (
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  trace_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  name VARCHAR(255),
  status VARCHAR(50),
  start_time VARCHAR(64) NOT NULL,
  end_time VARCHAR(64) NOT NULL,
  duration_ms BIGINT,
  run_id VARCHAR(128) COLLATE utf8mb4_bin,
  session_id VARCHAR(128) COLLATE utf8mb4_bin,
  user_id VARCHAR(128) COLLATE utf8mb4_bin,
  agent_id VARCHAR(128) COLLATE utf8mb4_bin,
  team_id VARCHAR(128) COLLATE utf8mb4_bin,
  workflow_id VARCHAR(128) COLLATE utf8mb4_bin,
  created_at VARCHAR(64) NOT NULL,
  CONSTRAINT pk_agno_ob_traces PRIMARY KEY (app_name, trace_id),
  INDEX ix_agno_traces_run (app_name, run_id),
  INDEX ix_agno_traces_session (app_name, session_id),
  INDEX ix_agno_traces_start (app_name, start_time)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE procedure_runs (                             -- procedural memory: one row per invocation, a user's contribution (0019)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  session_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  invocation_id VARCHAR(256) COLLATE utf8mb4_bin NOT NULL,
  extractor VARCHAR(32) NOT NULL,                         -- e.g. path:v1
  scope_user VARCHAR(128) COLLATE utf8mb4_bin NOT NULL DEFAULT '',  -- '' : counted in the app's aggregates
  scenario_id VARCHAR(64) COLLATE utf8mb4_bin,
  path_hash VARCHAR(64) COLLATE utf8mb4_bin,
  tool_path LONGTEXT,                                     -- JSON: tool names and argument shapes, never values
  outcome VARCHAR(8) NOT NULL DEFAULT 'unknown',          -- success | failure | unknown
  outcome_source VARCHAR(16) NOT NULL DEFAULT 'none',     -- api | metadata | state | judge | none
  reason VARCHAR(256),                                    -- redacted failure reason
  failed_tool VARCHAR(256),
  iterations INT NOT NULL DEFAULT 0,
  tool_calls INT NOT NULL DEFAULT 0,
  tool_errors INT NOT NULL DEFAULT 0,
  retries INT NOT NULL DEFAULT 0,
  request_hash VARCHAR(64) COLLATE utf8mb4_bin,           -- sha256 of the request; the text is not kept
  request_vector LONGTEXT,                                -- base64 float32
  event_ids LONGTEXT,                                     -- JSON list: provenance
  counted SMALLINT NOT NULL DEFAULT 0,                    -- 1: in procedure_stats
  created_at DATETIME(6) NOT NULL,
  stored_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),  -- retention's clock
  CONSTRAINT pk_procedure_runs PRIMARY KEY (app_name, user_id, session_id, invocation_id),
  INDEX ix_procedure_runs_scenario (app_name, scope_user, scenario_id, created_at, stored_at, counted, outcome, path_hash, iterations),  -- covering (0022)
  INDEX ix_procedure_runs_app_stored (app_name, stored_at),
  INDEX ix_procedure_runs_recent (app_name, scope_user, created_at, stored_at, counted, scenario_id, request_hash)  -- recall's vote (0022)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE procedure_stats (                            -- per scenario and tool path: counts moved by atomic increments (0019)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,      -- '' : the app's aggregate
  scenario_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  path_hash VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  tool_path LONGTEXT NOT NULL,
  successes BIGINT NOT NULL DEFAULT 0,
  failures BIGINT NOT NULL DEFAULT 0,
  unknowns BIGINT NOT NULL DEFAULT 0,
  iterations_sum BIGINT NOT NULL DEFAULT 0,
  tool_calls_sum BIGINT NOT NULL DEFAULT 0,
  tainted SMALLINT NOT NULL DEFAULT 0,                    -- never served while 1
  last_seen DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_procedure_stats PRIMARY KEY (app_name, user_id, scenario_id, path_hash)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE procedure_scenarios (                        -- requests grouped: vector sums and member counts (0019)
  app_name VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  user_id VARCHAR(128) COLLATE utf8mb4_bin NOT NULL,
  scenario_id VARCHAR(64) COLLATE utf8mb4_bin NOT NULL,
  label VARCHAR(256),
  vector_sum LONGTEXT,                                    -- base64 float32
  members BIGINT NOT NULL DEFAULT 0,
  embedding_model VARCHAR(128),
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  CONSTRAINT pk_procedure_scenarios PRIMARY KEY (app_name, user_id, scenario_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
