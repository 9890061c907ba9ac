-- Purpose: place adk-oceanbase's tables on an OceanBase cluster so one append (session row, event, state,
--          audit) stays on one node instead of becoming a distributed transaction (issue #32).
--          `adk-oceanbase db upgrade --colocate by-user|one-node` runs the same statements (adk_oceanbase/colocation.py;
--          tests/test_colocation.py checks this file against it). Run as the tenant user, in the database of
--          ADK_OCEANBASE_URL, after `db upgrade`. Pick ONE variant. Re-partitioning rewrites each table: do it
--          while the tables are small, or off-peak.
-- Parameters: none (edit the partition count, 16, and the table group name, adk_oceanbase_tg, if you must).
-- Output: none (DDL).
--
-- seekdb 1.4 accepts the PARTITION BY statements and rejects every TABLEGROUP statement (error 1064);
-- MySQL/MariaDB: do not run this (InnoDB has no FULLTEXT index on a partitioned table).

-- Variant A, by-user: one user's rows together, users spread over the cluster.
-- The primary key of each of these tables starts with (app_name, user_id), as KEY partitioning requires.
-- audit_log stays out: its primary key is audit_id alone (error 1503 "A PRIMARY KEY must include all
-- columns in the table's partitioning function"), so with auditing on an append has one more participant.
ALTER TABLE agent_sessions PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE session_events PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE session_state PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE agent_memories PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE memory_terms PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE memory_opt_out PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
ALTER TABLE debug_archive PARTITION BY KEY(app_name, user_id) PARTITIONS 16;
CREATE TABLEGROUP IF NOT EXISTS adk_oceanbase_tg SHARDING = 'PARTITION';
ALTER TABLEGROUP adk_oceanbase_tg ADD TABLE agent_sessions, session_events, session_state, agent_memories, memory_terms, memory_opt_out, debug_archive;

-- Variant B, one-node: every table unpartitioned in one SHARDING='NONE' group: the cluster keeps all
-- their leaders on one node (no append is ever distributed; the data set is bounded by that node).
-- CREATE TABLEGROUP IF NOT EXISTS adk_oceanbase_tg SHARDING = 'NONE';
-- ALTER TABLEGROUP adk_oceanbase_tg ADD TABLE agent_memories, agent_sessions, agno_ob_eval_runs, agno_ob_knowledge, agno_ob_learnings, agno_ob_metrics, agno_ob_runs, agno_ob_schema_versions, agno_ob_sessions, agno_ob_spans, agno_ob_traces, audit_log, debug_archive, lg_checkpoint_blobs, lg_checkpoint_writes, lg_checkpoints, lg_store_fields, lg_store_items, memory_extraction_jobs, memory_opt_out, memory_terms, memory_user_gen, model_prices, procedure_runs, procedure_scenarios, procedure_stats, session_events, session_state, state_checkpoints;

-- Both variants: keep the tenant's leaders in one zone (as root@sys; OceanBase 4.x sets it per tenant):
-- ALTER TENANT test PRIMARY_ZONE = 'zone1';
