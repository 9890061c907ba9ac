"""Statements of procedural memory: pure builders over the Core tables, no I/O.

Every count moves by ``x = x + :delta`` in the database (never a value read
and written back), so two extractors adding to one path both land.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import Delete, Insert, Select, Update, and_, delete, func, select, tuple_, update
from sqlalchemy.dialects.mysql import insert as mysql_insert

from ..schema import procedure_runs as runs
from ..schema import procedure_scenarios as scen
from ..schema import procedure_stats as stats

__all__ = [
    "COUNTS",
    "add_stats",
    "delete_stats_of",
    "lock_headers",
    "lock_stats_of",
    "move_runs",
    "move_runs_by_key",
    "scenario_runs",
    "scope_paths",
    "taint_stats",
    "touch_header",
    "delete_empty_stats",
    "delete_headers",
    "delete_orphan_scenarios",
    "scopes_with_scenarios",
    "procedural_apps",
    "failure_reasons",
    "lock_run",
    "lock_scenario",
    "recent_outcomes",
    "run_keys",
    "vectors_of",
    "scenarios_of",
    "stats_of",
    "success_iterations",
    "subtract_stats",
    "touch_run",
    "update_run",
    "user_runs",
]

COUNTS = ("successes", "failures", "unknowns", "iterations_sum", "tool_calls_sum")
"""The additive columns of ``procedure_stats``."""

_KEY = ("app_name", "user_id", "session_id", "invocation_id")


def touch_run(key: dict[str, str], extractor: str, scope_user: str, created_at: datetime) -> Insert:
    """Creates the run's row if missing, changing nothing when it exists: the row the caller then locks."""
    stmt = mysql_insert(runs).values(**key, extractor=extractor, scope_user=scope_user, created_at=created_at)
    return stmt.on_duplicate_key_update(app_name=runs.c.app_name)


def _run_where(key: dict[str, str]) -> Any:
    return and_(*(runs.c[k] == key[k] for k in _KEY))


def lock_run(key: dict[str, str]) -> Select:
    return select(runs).where(_run_where(key)).with_for_update()


def update_run(key: dict[str, str], values: dict[str, Any]) -> Update:
    return update(runs).where(_run_where(key)).values(**values)


def add_stats(
    app: str, user: str, scenario: str, path: str, tool_path: str, deltas: dict[str, int], seen: datetime, now: datetime
) -> Insert:
    """Adds ``deltas`` to the path's counts, creating its row; the newest run's shapes and time win."""
    stmt = mysql_insert(stats).values(
        app_name=app, user_id=user, scenario_id=scenario, path_hash=path, tool_path=tool_path,
        last_seen=seen, updated_at=now, **{c: deltas.get(c, 0) for c in COUNTS},
    )
    return stmt.on_duplicate_key_update(
        tool_path=stmt.inserted.tool_path,
        last_seen=func.greatest(stats.c.last_seen, stmt.inserted.last_seen),
        updated_at=stmt.inserted.updated_at,
        **{c: stats.c[c] + stmt.inserted[c] for c in COUNTS},
    )


def _stats_where(app: str, user: str, scenario: str, path: str) -> Any:
    return and_(stats.c.app_name == app, stats.c.user_id == user, stats.c.scenario_id == scenario, stats.c.path_hash == path)


def subtract_stats(app: str, user: str, scenario: str, path: str, deltas: dict[str, int], now: datetime) -> Update:
    """Takes a run's (or a user's) numbers back out of a path's counts."""
    values = {c: stats.c[c] - deltas.get(c, 0) for c in COUNTS if deltas.get(c)}
    return update(stats).where(_stats_where(app, user, scenario, path)).values(**values, updated_at=now)


def delete_empty_stats(app: str, user: str, keys: Sequence[tuple[str, str]]) -> Delete:
    """Paths no run counts in any more (their last contributor was erased or expired)."""
    return delete(stats).where(
        stats.c.app_name == app, stats.c.user_id == user,
        tuple_(stats.c.scenario_id, stats.c.path_hash).in_(list(keys)),
        stats.c.successes + stats.c.failures + stats.c.unknowns <= 0,
    )


def touch_header(app: str, user: str, now: datetime) -> Insert:
    """The scope's header row (``scenario_id`` ``''``), created if missing and changed by nothing: its lock row."""
    stmt = mysql_insert(scen).values(app_name=app, user_id=user, scenario_id="", members=0, created_at=now, updated_at=now)
    return stmt.on_duplicate_key_update(app_name=scen.c.app_name)


def lock_headers(app: str, users: Sequence[str] | None = None) -> Select:
    """The header rows of the app's scopes (of ``users`` only, if given), locked in key order; none are created."""
    stmt = select(scen.c.user_id).where(scen.c.app_name == app, scen.c.scenario_id == "")
    if users is not None:
        stmt = stmt.where(scen.c.user_id.in_(list(users)))
    return stmt.order_by(scen.c.user_id).with_for_update()


def delete_orphan_scenarios(app: str) -> Delete:
    """The app's scenarios (labelled ones, or emptied) that no stored run counts in; never a scope's header."""
    no_run = ~select(runs.c.app_name).where(
        runs.c.app_name == scen.c.app_name, runs.c.scope_user == scen.c.user_id, runs.c.scenario_id == scen.c.scenario_id
    ).exists()
    return delete(scen).where(scen.c.app_name == app, scen.c.scenario_id != "", scen.c.members <= 0, no_run)


def scopes_with_scenarios(app: str) -> Select:
    return select(scen.c.user_id).distinct().where(scen.c.app_name == app, scen.c.scenario_id != "")


def delete_headers(app: str, users: Sequence[str]) -> Delete:
    """Headers of scopes with no scenario left (read first: MySQL cannot delete from a table its subquery reads)."""
    return delete(scen).where(scen.c.app_name == app, scen.c.scenario_id == "", scen.c.user_id.in_(list(users)))


def procedural_apps() -> Select:
    """Apps with procedural rows: retention visits them even when they have no sessions or memories left."""
    return select(runs.c.app_name).distinct().union(select(scen.c.app_name).distinct())


def scope_paths(app: str, user: str) -> Select:
    """Which paths each scenario of a scope was run on, with their known outcomes (what a merge compares)."""
    # a locking read, like scenarios_of(lock=True): the newest committed paths, not the transaction's snapshot
    return select(stats.c.scenario_id, stats.c.path_hash, stats.c.successes, stats.c.failures).where(stats.c.app_name == app, stats.c.user_id == user).with_for_update()


def move_runs(app: str, user: str, src: str, dst: str) -> Update:
    """A merge: the runs of scenario ``src`` now count in ``dst``."""
    return update(runs).where(runs.c.app_name == app, runs.c.scope_user == user, runs.c.scenario_id == src).values(
        scenario_id=dst
    )


def scenario_runs(app: str, user: str, scenario: str, limit: int) -> Select:
    """A scenario's newest counted runs, newest first, locked: what the split check reads (the run's key
    breaks ties, so two extractors see them in one order)."""
    return (
        select(runs)
        .where(runs.c.app_name == app, runs.c.scope_user == user, runs.c.scenario_id == scenario, runs.c.counted == 1)
        .order_by(runs.c.created_at.desc(), runs.c.stored_at.desc(), runs.c.user_id.desc(), runs.c.session_id.desc(),
                  runs.c.invocation_id.desc())
        .limit(limit)
        .with_for_update()
    )


def move_runs_by_key(app: str, keys: Sequence[tuple[str, str, str]], dst: str) -> Update:
    """A split: these runs ``(user_id, session_id, invocation_id)`` of ``app`` now count in ``dst``."""
    return update(runs).where(
        runs.c.app_name == app, tuple_(runs.c.user_id, runs.c.session_id, runs.c.invocation_id).in_(list(keys))
    ).values(scenario_id=dst)


def lock_stats_of(app: str, user: str, scenario: str) -> Select:
    return select(stats).where(stats.c.app_name == app, stats.c.user_id == user, stats.c.scenario_id == scenario).with_for_update()


def delete_stats_of(app: str, user: str, scenario: str) -> Delete:
    return delete(stats).where(stats.c.app_name == app, stats.c.user_id == user, stats.c.scenario_id == scenario)


def taint_stats(app: str, user: str, scenario: str, path: str, now: datetime) -> Update:
    return update(stats).where(_stats_where(app, user, scenario, path)).values(tainted=1, updated_at=now)


def scenarios_of(app: str, user: str, *, lock: bool = False) -> Select:
    """A scope's scenarios.  ``lock``: a locking read, which sees the newest committed rows; MySQL's plain
    reads in a transaction see the snapshot its first read took, before the scope's lock was granted."""
    stmt = select(scen.c.scenario_id, scen.c.label, scen.c.vector_sum, scen.c.members, scen.c.embedding_model).where(
        scen.c.app_name == app, scen.c.user_id == user
    )
    return stmt.with_for_update() if lock else stmt


def lock_scenario(app: str, user: str, scenario: str) -> Select:
    return select(scen).where(scen.c.app_name == app, scen.c.user_id == user, scen.c.scenario_id == scenario).with_for_update()


def stats_of(app: str, user: str, scenarios: Sequence[str]) -> Select:
    return select(stats).where(
        stats.c.app_name == app, stats.c.user_id == user, stats.c.scenario_id.in_(list(scenarios))
    )


def _scenario_runs(app: str, user: str, scenarios: Sequence[str]) -> Any:
    return and_(runs.c.app_name == app, runs.c.scope_user == user, runs.c.scenario_id.in_(list(scenarios)),
                runs.c.counted == 1)


def recent_outcomes(app: str, user: str, scenarios: Sequence[str], limit: int) -> Select:
    """The scenarios' newest known outcomes, all paths together: recall weighs each by its age among them."""
    return (
        select(runs.c.path_hash, runs.c.outcome)
        .where(_scenario_runs(app, user, scenarios), runs.c.outcome.in_(("success", "failure")))
        .order_by(runs.c.created_at.desc(), runs.c.stored_at.desc())
        .limit(limit)
    )


def run_keys(app: str, user: str, limit: int, model: str) -> Select:
    """The scope's newest counted runs of embedding ``model``, newest first: the runs recall votes with, by
    key and scenario (their vectors, or none, come from :func:`vectors_of`, for the runs the store has not
    seen: ``vote_cache``).  A run's model is its scenario's (vectors of another model are not comparable,
    even at the same dimension).  ``ix_procedure_runs_recent`` holds every column read here, in this order:
    a backward scan of the index that stops at ``limit`` (no test of the vector: it is not in the index)."""
    return (
        select(runs.c.user_id, runs.c.session_id, runs.c.invocation_id, runs.c.request_hash, runs.c.scenario_id)
        .join(scen, and_(scen.c.app_name == runs.c.app_name, scen.c.user_id == runs.c.scope_user,
                         scen.c.scenario_id == runs.c.scenario_id))
        .where(runs.c.app_name == app, runs.c.scope_user == user, runs.c.counted == 1,
               (scen.c.embedding_model.is_(None)) | (scen.c.embedding_model == model))
        .order_by(runs.c.created_at.desc(), runs.c.stored_at.desc())
        .limit(limit)
    )


def vectors_of(app: str, keys: Sequence[tuple[str, str, str]]) -> Select:
    """The request vectors (and request hashes) of runs ``(user_id, session_id, invocation_id)`` of ``app``, by key."""
    return select(runs.c.user_id, runs.c.session_id, runs.c.invocation_id, runs.c.request_hash,
                  runs.c.request_vector).where(
        runs.c.app_name == app, tuple_(runs.c.user_id, runs.c.session_id, runs.c.invocation_id).in_(list(keys)))


def success_iterations(app: str, user: str, scenarios: Sequence[str]) -> Select:
    """How many successful runs of each path took how many iterations (the median's input)."""
    return (
        select(runs.c.path_hash, runs.c.iterations, func.count())
        .where(_scenario_runs(app, user, scenarios), runs.c.outcome == "success")
        .group_by(runs.c.path_hash, runs.c.iterations)
    )


def failure_reasons(app: str, user: str, scenarios: Sequence[str]) -> Select:
    return (
        select(runs.c.path_hash, runs.c.failed_tool, runs.c.reason, func.count().label("n"))
        .where(_scenario_runs(app, user, scenarios), runs.c.outcome == "failure")
        .group_by(runs.c.path_hash, runs.c.failed_tool, runs.c.reason)
        .order_by(func.count().desc())
        .limit(50)
    )


def user_runs(app: str, user: str, *, stored_before: datetime | None = None, limit: int | None = None) -> Select:
    """A user's counted runs (erasure), or an app's runs stored before a cutoff (retention), locked."""
    stmt = select(runs).where(runs.c.app_name == app)
    if user:
        stmt = stmt.where(runs.c.user_id == user)
    if stored_before is not None:
        stmt = stmt.where(runs.c.stored_at < stored_before).order_by(runs.c.stored_at)
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt.with_for_update()
