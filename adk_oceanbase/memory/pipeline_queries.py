"""SQL of the durable extraction queue (``memory_extraction_jobs``); named builders, no I/O.

A job is one exchange waiting for extraction.  Claims work like the
vectorizer's (:func:`.queries.claim_for_embedding`): a conditional UPDATE sets
a token, so of two processes racing for a job exactly one matches it, and a
claim older than the lease (its process died) is taken over.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.sql.elements import TextClause

__all__ = [
    "J",
    "claim_jobs",
    "claimed_jobs",
    "complete_job",
    "due_jobs",
    "RAW_ENQUEUE_JOBS",
    "enqueue_job",
    "existing_jobs",
    "job_counts",
    "release_claims",
    "record_condensation",
    "reschedule_job",
    "running_elsewhere",
    "session_turns",
]

J = "memory_extraction_jobs"
_DUE = "((status = 'pending' AND next_attempt_at <= :now) OR (status = 'running' AND claimed_at < :stale))"


def existing_jobs(app_name: str, user_id: str, job_ids: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Which of these jobs are queued (any status) or already wrote their first memory: enqueueing adds nothing for them.

    One statement for both tables, as driver-level SQL for ``RawTransaction.batch``
    (the driver renders the tuple as ``('a', 'b')``; SQLAlchemy's expanding
    parameter was compiled again on every call): it runs on the request path.
    ``job_ids`` must not be empty.
    """
    sql = (
        f"SELECT job_id FROM {J} WHERE app_name = %(app)s AND user_id = %(user)s AND job_id IN %(ids)s "
        "UNION ALL SELECT memory_id FROM agent_memories "
        "WHERE app_name = %(app)s AND user_id = %(user)s AND memory_id IN %(ids)s"
    )
    return sql, {"app": app_name, "user": user_id, "ids": tuple(job_ids)}


def enqueue_job() -> TextClause:
    """Inserts one job (executemany-friendly), due at once."""
    return text(
        f"INSERT INTO {J} (app_name, user_id, job_id, session_id, payload, generation, status, attempts, "
        "next_attempt_at, created_at) VALUES (:app_name, :user_id, :job_id, :session_id, :payload, :generation, "
        "'pending', 0, :now, :now)"
    )


RAW_ENQUEUE_JOBS = (
    f"INSERT INTO {J} (app_name, user_id, job_id, session_id, payload, generation, status, attempts, "
    "next_attempt_at, created_at) VALUES (%(app_name)s, %(user_id)s, %(job_id)s, %(session_id)s, %(payload)s, "
    "%(generation)s, 'pending', 0, %(now)s, %(now)s)"
)
""":func:`enqueue_job` for ``RawTransaction.batch``: a list of rows becomes one multi-row INSERT."""


def session_turns(app_name: str, user_id: str, session_id: str) -> tuple[TextClause, dict[str, Any]]:
    """A stored session's FULL event log (compacted events included) with each event's place, in ``seq`` order.

    ``queries.session_event_log`` with the ``seq`` too: ``add_session_to_memory``
    takes the turns' positions from here instead of asking for them again.
    """
    stmt = text(
        "SELECT seq, event_json FROM session_events WHERE app_name = :app AND user_id = :user AND session_id = :sid "
        "ORDER BY seq"
    )
    return stmt, {"app": app_name, "user": user_id, "sid": session_id}


def due_jobs(now: datetime, stale_before: datetime, limit: int) -> tuple[TextClause, dict[str, Any]]:
    """Keys of jobs a worker may claim: pending and due, or claimed by a process whose lease ran out; oldest first."""
    stmt = text(f"SELECT app_name, user_id, job_id FROM {J} WHERE {_DUE} ORDER BY next_attempt_at LIMIT :n")
    return stmt, {"now": now, "stale": stale_before, "n": int(limit)}


def claim_jobs(
    app_name: str, user_id: str, job_ids: Sequence[str], claim: str, now: datetime, stale_before: datetime
) -> tuple[TextClause, dict[str, Any]]:
    """Claims the due jobs among ``job_ids`` (one user's) for ``claim``; counts the attempt."""
    stmt = text(
        f"UPDATE {J} SET status = 'running', claim = :claim, claimed_at = :now, attempts = attempts + 1 "
        f"WHERE app_name = :app AND user_id = :user AND job_id IN :ids AND {_DUE}"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"claim": claim, "now": now, "stale": stale_before, "app": app_name, "user": user_id,
                  "ids": list(job_ids)}


def claimed_jobs(app_name: str, user_id: str, job_ids: Sequence[str], claim: str) -> tuple[TextClause, dict[str, Any]]:
    """The jobs among ``job_ids`` (one user's) that ``claim`` holds, with what processing them needs."""
    stmt = text(
        f"SELECT app_name, user_id, job_id, session_id, payload, generation, attempts FROM {J} "
        "WHERE app_name = :app AND user_id = :user AND job_id IN :ids AND claim = :claim AND status = 'running'"
    ).bindparams(bindparam("ids", expanding=True))
    return stmt, {"app": app_name, "user": user_id, "ids": list(job_ids), "claim": claim}


def complete_job(app_name: str, user_id: str, job_id: str, claim: str) -> tuple[TextClause, dict[str, Any]]:
    """Marks a job ``done`` (if this claim still holds it) and drops its payload, the conversation text.

    The row stays as the "seen" mark: an exchange whose extraction yielded no
    memory is not queued again by the next ``add_session_to_memory`` of the
    same session.  Erasure deletes it with the user's other rows.
    """
    stmt = text(
        f"UPDATE {J} SET status = 'done', payload = '', claim = NULL, last_error = NULL "
        "WHERE app_name = :app AND user_id = :user AND job_id = :id AND claim = :claim"
    )
    return stmt, {"app": app_name, "user": user_id, "id": job_id, "claim": claim}


def reschedule_job(
    app_name: str, user_id: str, job_id: str, claim: str, *, failed: bool, next_at: datetime, error: str
) -> tuple[TextClause, dict[str, Any]]:
    """After a failed attempt: pending again at ``next_at``, or ``failed`` (left alone) when out of attempts."""
    stmt = text(
        f"UPDATE {J} SET status = :status, next_attempt_at = :next, claim = NULL, claimed_at = NULL, "
        "last_error = :error WHERE app_name = :app AND user_id = :user AND job_id = :id AND claim = :claim"
    )
    return stmt, {"status": "failed" if failed else "pending", "next": next_at, "error": error[:256],
                  "app": app_name, "user": user_id, "id": job_id, "claim": claim}


def release_claims(claim: str) -> tuple[TextClause, dict[str, Any]]:
    """Gives a closing worker's unfinished jobs back (pending, due now, the attempt not counted)."""
    stmt = text(
        f"UPDATE {J} SET status = 'pending', claim = NULL, claimed_at = NULL, attempts = GREATEST(attempts - 1, 0) "
        "WHERE claim = :claim AND status = 'running'"
    )
    return stmt, {"claim": claim}


def running_elsewhere(claim: str, stale_before: datetime) -> tuple[TextClause, dict[str, Any]]:
    """Jobs another live worker holds: flush waits for them."""
    stmt = text(
        f"SELECT COUNT(*) FROM {J} WHERE status = 'running' AND claimed_at >= :stale "
        "AND (claim IS NULL OR claim <> :claim)"
    )
    return stmt, {"claim": claim, "stale": stale_before}


def job_counts(app_name: str | None) -> tuple[TextClause, dict[str, Any]]:
    """Jobs per app and status (``pending``, ``running``, ``done``, ``failed``)."""
    where = "WHERE app_name = :app " if app_name is not None else ""
    stmt = text(f"SELECT app_name, status, COUNT(*) FROM {J} {where}GROUP BY app_name, status")
    return stmt, {"app": app_name} if app_name is not None else {}


def record_condensation() -> TextClause:
    """Stores how much a new memory condensed its source (executemany-friendly; same transaction as its insert)."""
    return text(
        "UPDATE agent_memories SET original_length = :original_length, compression_ratio = :ratio, "
        "condensed = :condensed WHERE app_name = :app AND user_id = :user AND memory_id = :memory_id"
    )
