"""Procedural memory's tables (revision 0019, :mod:`adk_oceanbase.procedural`): runs, per-path statistics, scenarios."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, PrimaryKeyConstraint, SmallInteger, String, Table
from sqlalchemy.dialects.mysql import LONGTEXT

from .schema_base import ID_LEN, metadata
from .schema_base import KEY as _KEY
from .schema_base import SERVER_NOW as _SERVER_NOW
from .schema_base import TABLE_OPTS as _TABLE_OPTS
from .schema_base import ts as _ts

__all__ = ["procedure_runs", "procedure_scenarios", "procedure_stats"]

# ---------------------------------------------------------------- procedural memory (issue 27, revision 0019)
procedure_runs = Table(
    "procedure_runs",
    metadata,
    # One row per invocation a user ran (adk_oceanbase.procedural): the user's contribution to
    # procedure_stats, so correcting an outcome, erasing the user or expiring the run subtracts
    # exactly what it added.  Tool arguments are never stored, only their shape (names and types).
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("session_id", String(ID_LEN, **_KEY), nullable=False),
    Column("invocation_id", String(256, **_KEY), nullable=False),
    Column("extractor", String(32), nullable=False),  # e.g. 'path:v1'; a newer version re-extracts, an older one is ignored
    # whose aggregates the run counts in: '' (the app's, learned across users) or the user's id
    Column("scope_user", String(ID_LEN, **_KEY), nullable=False, server_default=""),
    Column("scenario_id", String(64, **_KEY), nullable=True),  # NULL: not extracted yet (an outcome arrived first)
    Column("path_hash", String(64, **_KEY), nullable=True),  # sha256 of the tool names in order
    Column("tool_path", LONGTEXT, nullable=True),  # JSON: [{"tool": name, "args": {name: type}}], shapes only
    Column("outcome", String(8), nullable=False, server_default="unknown"),  # success | failure | unknown
    Column("outcome_source", String(16), nullable=False, server_default="none"),  # api | metadata | state | judge | none
    Column("reason", String(256), nullable=True),  # redacted, shortened failure reason
    Column("failed_tool", String(256), nullable=True),  # the first tool whose response was an error
    Column("iterations", Integer, nullable=False, server_default="0"),  # model steps that called tools
    Column("tool_calls", Integer, nullable=False, server_default="0"),
    Column("tool_errors", Integer, nullable=False, server_default="0"),
    Column("retries", Integer, nullable=False, server_default="0"),  # a failed tool called again at once
    Column("request_hash", String(64, **_KEY), nullable=True),  # sha256 of the request: the text is not kept
    Column("request_vector", LONGTEXT, nullable=True),  # base64 float32: taken back out of the scenario on erasure
    Column("event_ids", LONGTEXT, nullable=True),  # JSON list: provenance
    Column("counted", SmallInteger, nullable=False, server_default="0"),  # 1: its numbers are in procedure_stats
    Column("created_at", _ts(), nullable=False),  # the invocation's own time (its first event), UTC
    Column("stored_at", _ts(), nullable=False, server_default=_SERVER_NOW),  # retention's clock: the database's
    PrimaryKeyConstraint("app_name", "user_id", "session_id", "invocation_id", name="pk_procedure_runs"),
    # recall reads a scenario's newest outcomes and counts from this index alone (covering since 0022)
    Index("ix_procedure_runs_scenario", "app_name", "scope_user", "scenario_id", "created_at", "stored_at", "counted",
          "outcome", "path_hash", "iterations"),
    Index("ix_procedure_runs_app_stored", "app_name", "stored_at"),
    # recall's vote reads the scope's newest runs (``queries.run_keys``) from this index alone (0022)
    Index("ix_procedure_runs_recent", "app_name", "scope_user", "created_at", "stored_at", "counted", "scenario_id",
          "request_hash"),
    **_TABLE_OPTS,
)

procedure_stats = Table(
    "procedure_stats",
    metadata,
    # Per (app, scope, scenario, tool path): counts kept by atomic increments (``x = x + :d``), so
    # concurrent extractors never lose one.  user_id '' holds the app's aggregates (every user's runs);
    # a user's id holds that user's own when ProceduralSettings.scope is 'user'.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),
    Column("scenario_id", String(64, **_KEY), nullable=False),
    Column("path_hash", String(64, **_KEY), nullable=False),
    Column("tool_path", LONGTEXT, nullable=False),  # the newest run's shapes
    Column("successes", BigInteger, nullable=False, server_default="0"),
    Column("failures", BigInteger, nullable=False, server_default="0"),
    Column("unknowns", BigInteger, nullable=False, server_default="0"),
    Column("iterations_sum", BigInteger, nullable=False, server_default="0"),
    Column("tool_calls_sum", BigInteger, nullable=False, server_default="0"),
    Column("tainted", SmallInteger, nullable=False, server_default="0"),  # never served while 1
    Column("last_seen", _ts(), nullable=False),
    Column("updated_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_id", "scenario_id", "path_hash", name="pk_procedure_stats"),
    **_TABLE_OPTS,
)

procedure_scenarios = Table(
    "procedure_scenarios",
    metadata,
    # What users asked for, grouped: the sum of the member requests' unit vectors (the centroid's
    # direction) and how many there are, so erasing a user's runs takes their vectors back out.
    Column("app_name", String(ID_LEN, **_KEY), nullable=False),
    Column("user_id", String(ID_LEN, **_KEY), nullable=False),  # '' : the app's scenarios
    Column("scenario_id", String(64, **_KEY), nullable=False),
    Column("label", String(256), nullable=True),  # the explicit label the agent gave, if any
    Column("vector_sum", LONGTEXT, nullable=True),  # base64 float32
    Column("members", BigInteger, nullable=False, server_default="0"),
    Column("embedding_model", String(128), nullable=True),
    Column("created_at", _ts(), nullable=False),
    Column("updated_at", _ts(), nullable=False),
    PrimaryKeyConstraint("app_name", "user_id", "scenario_id", name="pk_procedure_scenarios"),
    **_TABLE_OPTS,
)
