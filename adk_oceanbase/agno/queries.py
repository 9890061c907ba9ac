"""The Agno database's hot statements as plain SQL text (``%(name)s`` parameters), sent in one packet each.

What an Agent does on every turn (``upsert_session``, ``upsert_run``,
``get_session``) goes through :mod:`adk_oceanbase.rawtx` like the session
service's append: the statements and the COMMIT in one round trip, no
SQLAlchemy compilation per call.  Everything else uses SQLAlchemy Core in the
area modules.
"""

from __future__ import annotations

__all__ = ["RAW_GET_SESSION", "RAW_GET_SESSION_OF_USER", "RAW_LOCK_SESSION", "RAW_SESSION_COLUMNS", "RAW_SESSION_RUNS",
           "RAW_UPSERT_RUN", "RAW_UPSERT_SESSION"]

RAW_SESSION_COLUMNS = ("session_id", "session_type", "agent_id", "team_id", "workflow_id", "user_id", "session_data",
                       "agent_data", "team_data", "workflow_data", "metadata", "summary", "created_at", "updated_at")

RAW_GET_SESSION = (
    f"SELECT {', '.join(RAW_SESSION_COLUMNS)} FROM agno_ob_sessions "
    "WHERE app_name = %(app)s AND session_id = %(sid)s"
)
RAW_GET_SESSION_OF_USER = RAW_GET_SESSION + " AND user_id = %(uid)s"

# every run of the session in its order (the runs_limit variant stays in SQLAlchemy Core)
RAW_SESSION_RUNS = (
    "SELECT run_id, run_data FROM agno_ob_runs WHERE app_name = %(app)s AND session_id = %(sid)s "
    "ORDER BY run_index, created_at, run_id"
)

# An update keeps the run's place (run_index) and its creation time, as Agno's SQL databases do.
RAW_UPSERT_RUN = (
    "INSERT INTO agno_ob_runs (app_name, run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, "
    "parent_run_id, status, run_index, run_data, created_at, updated_at) VALUES (%(app_name)s, %(run_id)s, "
    "%(session_id)s, %(run_type)s, %(agent_id)s, %(team_id)s, %(workflow_id)s, %(user_id)s, %(parent_run_id)s, "
    "%(status)s, %(run_index)s, %(run_data)s, %(created_at)s, %(updated_at)s) "
    "ON DUPLICATE KEY UPDATE status = VALUES(status), run_data = VALUES(run_data), user_id = VALUES(user_id), "
    "parent_run_id = VALUES(parent_run_id), updated_at = VALUES(updated_at), "
    "run_index = COALESCE(run_index, VALUES(run_index))"
)

# Read (and lock) the owner before the upsert, in the same packet: the caller learns whether the
# upsert was refused (another user's session) and the stored created_at.
RAW_LOCK_SESSION = (
    "SELECT user_id, created_at, session_type FROM agno_ob_sessions "
    "WHERE app_name = %(app_name)s AND session_id = %(session_id)s FOR UPDATE"
)

# Agno's ownership rule inside the statement: an existing session whose user_id is set and differs
# keeps every column.  MySQL, MariaDB and OceanBase assign left to right and later IF()s see the
# new user_id, which is the old one when refused and VALUES(user_id) when allowed: the same answer.
_OWNED = "(user_id IS NULL OR user_id <=> VALUES(user_id))"
RAW_UPSERT_SESSION = (
    "INSERT INTO agno_ob_sessions (app_name, session_id, session_type, agent_id, team_id, workflow_id, user_id, "
    "session_data, agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at) VALUES ("
    "%(app_name)s, %(session_id)s, %(session_type)s, %(agent_id)s, %(team_id)s, %(workflow_id)s, %(user_id)s, "
    "%(session_data)s, %(agent_data)s, %(team_data)s, %(workflow_data)s, %(metadata)s, %(summary)s, "
    "%(created_at)s, %(created_at)s) ON DUPLICATE KEY UPDATE "
    + ", ".join(f"{c} = IF({_OWNED}, VALUES({c}), {c})" for c in ("user_id", "agent_id", "team_id", "workflow_id",
                                                                  "session_data", "agent_data", "team_data",
                                                                  "workflow_data", "metadata", "summary"))
    + f", updated_at = IF({_OWNED}, %(updated_at)s, updated_at)"
    + f", touched_at = IF({_OWNED}, CURRENT_TIMESTAMP(6), touched_at)"
)
