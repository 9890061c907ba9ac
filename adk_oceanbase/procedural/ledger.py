"""What a run adds to the aggregates, and taking it back out: one place for extraction, erasure and retention.

A run row with ``counted = 1`` is in ``procedure_stats`` (its outcome's
count, its iterations and tool calls) and, when it has a request vector, in
its scenario's ``vector_sum`` / ``members``.  Every change of a run (a new
outcome, a re-extraction, erasure, expiry) subtracts what the old row added
and adds what the new one does, inside the caller's transaction and under
the run's row lock, so the aggregates always equal the sum of the stored runs.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Iterable, Mapping

import numpy as np
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from ..schema import procedure_runs, procedure_scenarios
from . import queries as q
from .stats import decode_vector, encode_vector

__all__ = ["Contribution", "add", "contribution", "lock_scope", "merge_scenarios", "move_runs", "move_scenario", "remove_runs",
           "scope_paths", "subtract"]


class Contribution(tuple):
    """``(scope_user, scenario_id, path_hash, tool_path, deltas)`` of one counted run."""


def contribution(run: Mapping[str, Any]) -> Contribution | None:
    """What a run row adds to ``procedure_stats``; ``None`` when it is not counted."""
    if not run.get("counted") or not run.get("scenario_id") or not run.get("path_hash"):
        return None
    outcome = run.get("outcome") or "unknown"
    deltas = {
        "successes": int(outcome == "success"),
        "failures": int(outcome == "failure"),
        "unknowns": int(outcome not in ("success", "failure")),
        "iterations_sum": int(run.get("iterations") or 0),
        "tool_calls_sum": int(run.get("tool_calls") or 0),
    }
    return Contribution((run["scope_user"], run["scenario_id"], run["path_hash"], run.get("tool_path") or "[]", deltas))


async def add(conn: AsyncConnection, app: str, c: Contribution, seen: datetime, now: datetime) -> None:
    scope, scenario, path, tool_path, deltas = c
    await conn.execute(q.add_stats(app, scope, scenario, path, tool_path, deltas, seen, now))


async def subtract(conn: AsyncConnection, app: str, c: Contribution, now: datetime) -> None:
    scope, scenario, path, _tool_path, deltas = c
    await conn.execute(q.subtract_stats(app, scope, scenario, path, deltas, now))


async def lock_scope(conn: AsyncConnection, app: str, scope: str, now: datetime) -> None:
    """Locks the scope's header row, creating it the first time: every procedural write of the scope takes it first.

    Choosing a scenario reads every centroid of the scope and may start a
    new scenario or merge two: two extractors that both missed used to both
    start one (two scenarios for one task).  Under this lock the second sees
    the first's scenario and joins it.  Lock order: the user's guard row,
    then this, then runs, statistics, scenarios.
    """
    await conn.execute(q.touch_header(app, scope, now))
    await conn.execute(q.lock_headers(app, [scope]))


async def scope_paths(conn: AsyncConnection, app: str, scope: str) -> dict[str, dict[str, tuple[int, int]]]:
    """``{scenario: {path: (successes, failures)}}`` of a scope: the paths each scenario ran and how they ended."""
    out: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for scenario, path, successes, failures in (await conn.execute(q.scope_paths(app, scope))).all():
        out[scenario][path] = (int(successes), int(failures))
    return out


async def merge_scenarios(conn: AsyncConnection, app: str, scope: str, src: str, dst: str, now: datetime) -> None:
    """Folds scenario ``src`` into ``dst``: its runs, its paths' counts (tainted stays tainted), its vectors.

    Runs under the scope's header lock (:func:`lock_scope`), so no other
    write of the scope is choosing a scenario meanwhile.
    """
    rows = (await conn.execute(q.lock_stats_of(app, scope, src))).mappings().all()
    await conn.execute(q.move_runs(app, scope, src, dst))
    for row in rows:
        deltas = {c: int(row[c]) for c in q.COUNTS}
        await conn.execute(q.add_stats(app, scope, dst, row["path_hash"], row["tool_path"], deltas, row["last_seen"], now))
        if row["tainted"]:
            await conn.execute(q.taint_stats(app, scope, dst, row["path_hash"], now))
    await conn.execute(q.delete_stats_of(app, scope, src))
    gone = (await conn.execute(q.lock_scenario(app, scope, src))).mappings().first()
    if gone is None:
        return
    vec = decode_vector(gone["vector_sum"])
    if vec is not None and int(gone["members"]) > 0:
        await move_scenario(conn, app, scope, dst, vec, int(gone["members"]), now, model=gone["embedding_model"])
    t = procedure_scenarios
    await conn.execute(t.delete().where(t.c.app_name == app, t.c.user_id == scope, t.c.scenario_id == src))


async def move_runs(
    conn: AsyncConnection, app: str, scope: str, src: str, dst: str, runs: Iterable[Mapping[str, Any]], now: datetime,
    *, model: str | None = None,
) -> set[str]:
    """Moves some counted runs of scenario ``src`` (locked rows) to ``dst``: their counts per path, their vectors,
    their rows (and with the rows their iterations, failure reasons and outcomes, which recall reads from
    them).  A path tainted in ``src`` is tainted in ``dst`` too.  Returns the paths ``src`` still counts.

    Runs under the scope's header lock (:func:`lock_scope`), like :func:`merge_scenarios`.
    """
    tainted = {r["path_hash"] for r in (await conn.execute(q.lock_stats_of(app, scope, src))).mappings().all() if r["tainted"]}
    per_path: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(q.COUNTS, 0))
    newest: dict[str, Mapping[str, Any]] = {}
    total, members, keys = None, 0, []
    for run in runs:
        c = contribution(run)
        if c is None or c[1] != src:
            continue
        keys.append((run["user_id"], run["session_id"], run["invocation_id"]))
        for name, value in c[4].items():
            per_path[c[2]][name] += value
        if c[2] not in newest or run["created_at"] > newest[c[2]]["created_at"]:
            newest[c[2]] = run
        vec = decode_vector(run.get("request_vector"))
        if vec is not None:
            total = vec if total is None else total + vec
            members += 1
    for path, deltas in sorted(per_path.items()):
        run = newest[path]
        await conn.execute(q.subtract_stats(app, scope, src, path, deltas, now))
        await conn.execute(q.add_stats(app, scope, dst, path, run.get("tool_path") or "[]", deltas, run["created_at"], now))
        if path in tainted:
            await conn.execute(q.taint_stats(app, scope, dst, path, now))
    if per_path:
        await conn.execute(q.delete_empty_stats(app, scope, [(src, path) for path in sorted(per_path)]))
    if keys:
        await conn.execute(q.move_runs_by_key(app, sorted(keys), dst))
    if total is not None:
        await move_scenario(conn, app, scope, src, total, -members, now)
        await move_scenario(conn, app, scope, dst, total, members, now, model=model)
    return {r["path_hash"] for r in (await conn.execute(q.lock_stats_of(app, scope, src))).mappings().all()}


async def move_scenario(
    conn: AsyncConnection, app: str, scope: str, scenario: str, vec: np.ndarray | None, sign: int, now: datetime,
    *, label: str | None = None, model: str | None = None,
) -> None:
    """Adds (``sign`` 1) or takes out (-1) request vectors of a scenario; ``vec`` may be a sum of several.

    ``members`` moves by ``sign`` times the number of vectors only when
    ``vec`` is one vector; :func:`remove_runs` passes sums with ``sign = -k``.
    A scenario left with no members and no label is deleted.
    """
    row = (await conn.execute(q.lock_scenario(app, scope, scenario))).mappings().first()
    if row is None:
        if sign <= 0:
            return
        await conn.execute(
            insert(procedure_scenarios).values(
                app_name=app, user_id=scope, scenario_id=scenario, label=label,
                vector_sum=encode_vector(vec) if vec is not None else None, members=sign if vec is not None else 0,
                embedding_model=model, created_at=now, updated_at=now,
            )
        )
        return
    total = decode_vector(row["vector_sum"])
    members = int(row["members"])
    if vec is not None:
        step = np.asarray(vec, dtype=np.float32) * (1 if sign > 0 else -1)
        total = step if total is None or total.shape != step.shape else total + step
        members += sign if abs(sign) >= 1 else 0
    values: dict[str, Any] = {"members": max(members, 0), "updated_at": now}
    values["vector_sum"] = encode_vector(total) if total is not None and members > 0 else None
    if label and not row["label"]:
        values["label"] = label
    if model and not row["embedding_model"]:
        values["embedding_model"] = model
    table = procedure_scenarios
    where = (table.c.app_name == app, table.c.user_id == scope, table.c.scenario_id == scenario)
    if members <= 0 and not (row["label"] or label):
        await conn.execute(table.delete().where(*where))
    else:
        await conn.execute(table.update().where(*where).values(**values))


async def remove_runs(conn: AsyncConnection, app: str, runs: Iterable[Mapping[str, Any]], now: datetime) -> int:
    """Takes locked runs out of every aggregate and deletes them; returns how many runs were deleted.

    Sums are grouped per path and per scenario, so erasing a user with 10,000
    runs on 20 paths is 20 updates, not 10,000.
    """
    per_path: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(q.COUNTS, 0))
    per_scenario: dict[tuple[str, str], list[Any]] = {}
    keys = []
    for run in runs:
        keys.append((run["user_id"], run["session_id"], run["invocation_id"]))
        c = contribution(run)
        if c is None:
            continue
        scope, scenario, path, _tp, deltas = c
        for name, value in deltas.items():
            per_path[(scope, scenario, path)][name] += value
        vec = decode_vector(run.get("request_vector"))
        if vec is not None:
            acc = per_scenario.setdefault((scope, scenario), [None, 0])
            acc[0] = vec if acc[0] is None else acc[0] + vec
            acc[1] += 1
    for (scope, scenario, path), deltas in sorted(per_path.items()):
        await conn.execute(q.subtract_stats(app, scope, scenario, path, deltas, now))
    by_scope: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for scope, scenario, path in per_path:
        by_scope[scope].append((scenario, path))
    for scope, pairs in sorted(by_scope.items()):
        await conn.execute(q.delete_empty_stats(app, scope, sorted(pairs)))
    for (scope, scenario), (vec, n) in sorted(per_scenario.items(), key=lambda kv: kv[0]):
        await move_scenario(conn, app, scope, scenario, vec, -n, now)
    deleted = 0
    t = procedure_runs
    for user, session, invocation in keys:
        deleted += (
            await conn.execute(
                t.delete().where(
                    t.c.app_name == app, t.c.user_id == user, t.c.session_id == session, t.c.invocation_id == invocation
                )
            )
        ).rowcount or 0
    return deleted
