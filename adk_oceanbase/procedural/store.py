"""``ProcedureStore``: learns which tool paths work from ADK sessions, and recalls them.

Seed 000 sections 8.2 and A.1, "Procedural-first": only structured, provable
conclusions are stored (tool names, argument shapes, counts, redacted
failure reasons, provenance event ids), each run once per (session,
invocation, extractor version); confidence comes from the sample size
(a Wilson lower bound) and tainted paths are never served.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .. import gateway
from .._lifecycle import DatabaseService, adk_uri
from ..audit import AuditEntry, AuditSettings, Auditor, audited, by_ids, by_session, current_entry
from ..config import Config
from ..engine import Database
from ..errors import DuplicateKeyError, MemoryWriteRaceError, ValidationError, is_rerunnable
from ..governance import guard
from ..memory.embedding import Embedder, default_embedder, normalize_rows
from ..redaction import Redactor, RuleRedactor
from ..schema import procedure_stats
from ..validation import check_id
from . import ledger
from . import queries as q
from . import scenarios as sc
from . import splitting
from .extraction import EXTRACTOR, Invocation, extract_invocations, path_hash
from .recall import Recall, build_recall
from .settings import ProceduralSettings
from .stats import decode_vector, encode_vector
from .vote_cache import RunKey, VoteVectors

__all__ = ["ExtractReport", "ProcedureStore"]

logger = logging.getLogger(__name__)

_EXTRACT, _OUTCOME, _RECALL, _TAINT = "procedure_extract", "procedure_outcome", "procedure_recall", "procedure_taint"
_VECTOR_BATCH = 500
"""Run keys per ``vectors_of`` statement (a recall with nothing cached reads its window in two or so)."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _utc(epoch: float | None) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(tzinfo=None) if epoch else _now()


class ExtractReport(dict):
    """``{"invocations": n, "changed": n, "skipped": n}`` of one :meth:`ProcedureStore.extract_session`."""


def _retry_when(exc: BaseException) -> bool:
    # a deadlock victim was rolled back; a duplicate key is two first writes racing for a new user's guard row.
    # Re-running is harmless: applying the same run twice changes nothing the second time.
    return is_rerunnable(exc) or isinstance(exc, DuplicateKeyError)


class ProcedureStore(DatabaseService):
    """Procedural memory of an app: extraction, outcomes, statistics and recall.

    Example:
        >>> async def learn(session_service, procedures, session):
        ...     await procedures.extract_session(session)  # after the invocation ended
        ...     hits = await procedures.recall_procedures("shop", "refund order 123")
        ...     return hits.procedures[0].tools if hits.procedures else None
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        embedder: Embedder | None = None,
        settings: ProceduralSettings | None = None,
        redactor: Redactor | None = None,
        audit: AuditSettings | None = None,
        auto_setup: bool = True,
        uri: str | None = None,
    ):
        self._bind_database(adk_uri(url, uri), config, database, engine, auto_setup)
        self._auditor = Auditor(audit)
        self._embedder = embedder or default_embedder()
        self.settings = settings or ProceduralSettings()
        # failure reasons and labels are free text from tools and agents: redacted before they are stored
        self._redactor = redactor or RuleRedactor()
        self._votes = VoteVectors()  # request vectors of the runs recall votes with, by run key

    async def close(self) -> None:
        await self._release()

    async def __aenter__(self) -> "ProcedureStore":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _scope(self, user_id: str) -> str:
        return user_id if self.settings.scope == "user" else ""

    async def _embed(self, texts: Sequence[str]) -> np.ndarray:
        # the model is blocking and CPU-bound: never on the event loop
        return normalize_rows(await asyncio.to_thread(self._embedder.embed, list(texts)))

    # ---------------------------------------------------------------- extraction
    @audited(by_session(_EXTRACT))
    async def extract_session(self, session: Any) -> ExtractReport:
        """Turns each finished invocation of ``session`` (an ADK ``Session``) into one run and counts it.

        Idempotent: extracting a session again changes only what changed
        (an outcome that arrived since, more tool calls of an invocation that
        was still running).  Invocations that called no tool are skipped.
        A user who opted out of memory (``set_memory_opt_out``) contributes
        nothing; a user erased while this ran raises
        :class:`~adk_oceanbase.errors.MemoryWriteRaceError` and stores nothing.
        """
        app, user, sid = (check_id(k, getattr(session, a, None)) for k, a in
                          (("app_name", "app_name"), ("user_id", "user_id"), ("session_id", "id")))
        invs = extract_invocations(session.events or [], outcome_key=self.settings.outcome_key, judge=self.settings.judge)
        report = ExtractReport(invocations=len(invs), changed=0, skipped=0)
        if not invs:
            return report
        reasons = await self._redactor.redact_many([i.failure_reason() or "" for i in invs])
        labels = await self._redactor.redact_many([i.scenario_label or "" for i in invs])
        asked = [i for i in invs if i.request]
        vectors = dict(zip((i.invocation_id for i in asked), await self._embed([i.request for i in asked]))) if asked else {}
        scope = self._scope(user)
        start = await self._read(lambda conn: guard.started(conn, app, user))
        work = sorted(zip(invs, reasons, labels), key=lambda w: w[0].invocation_id)  # one lock order

        async def once() -> int:
            async with self._tx() as conn:
                now = _now()
                gen = await guard.lock(conn, app, user, now)
                if gen.generation != start.generation:
                    raise MemoryWriteRaceError(f"the data of user {user!r} was erased while this extraction ran")
                if gen.opted_out:
                    return -1
                # scenarios are chosen here, under the scope's lock, on every centroid committed so far
                await ledger.lock_scope(conn, app, scope, now)
                grouping = sc.Grouping(
                    await self._centroids(conn, app, scope, lock=True), join=self.settings.similarity,
                    merge=self.settings.merge_similarity, overlap=self.settings.merge_overlap,
                    agreement=self.settings.merge_agreement, outcomes=await ledger.scope_paths(conn, app, scope),
                    path_join=self.settings.path_similarity, split_p=self.settings.split_p,
                    split_min=self.settings.split_min_runs,
                )
                changed = 0
                for inv, reason, label in work:
                    key = {"app_name": app, "user_id": user, "session_id": sid, "invocation_id": inv.invocation_id}
                    old = await self._lock_run(conn, key, scope, _utc(inv.started), EXTRACTOR)
                    values = self._run_values(app, scope, inv, reason or None, label or None,
                                              vectors.get(inv.invocation_id), old, grouping)
                    merges = values.pop("_merges")
                    applied = await self._apply(conn, key, old, values, now, from_events=True)
                    changed += applied
                    filed = values["scenario_id"]
                    for src, dst in merges if applied else ():  # a run left as it was joined nothing new
                        await ledger.merge_scenarios(conn, app, scope, src, dst, now)
                        filed = dst
                    if applied and self.settings.split_p is not None:
                        await self._split(conn, app, scope, filed, grouping, now, (user, sid))
                if (entry := current_entry()) is not None:
                    entry.row_count = changed
                    await conn.execute(entry.insert())
                return changed

        changed = await gateway.retrying(once, when=_retry_when, attempts=3, what="procedure extraction")
        report["changed"], report["skipped"] = max(changed, 0), len(invs) if changed < 0 else 0
        return report

    async def _split(
        self, conn: AsyncConnection, app: str, scope: str, scenario: str, grouping: sc.Grouping, now: datetime,
        who: tuple[str, str],
    ) -> None:
        """Moves the wording clusters of ``scenario`` that run other paths than the rest out of it (``split_p``).

        Reads the scenario's newest ``split_window`` runs (locked, under the
        scope's lock: every extractor decides on the same rows), asks
        :func:`.splitting.split_of`, and moves what it names to the scenario
        :meth:`.scenarios.Grouping.split_to` picks (:func:`.ledger.move_runs`);
        the move is logged and, with auditing on, written to the audit log as
        ``procedure_split`` with the number of runs moved.
        """
        have = grouping.known.get(scenario)
        if have is None or have.label or have.direction is None:
            return  # a labelled scenario was named outright: never split (nor one without request vectors)
        s = self.settings
        rows = (await conn.execute(q.scenario_runs(app, scope, scenario, s.split_window))).mappings().all()
        decoded = [(r, decode_vector(r["request_vector"])) for r in reversed(rows)]  # oldest first
        decoded = [(r, v) for r, v in decoded if v is not None and v.shape == have.direction.shape]
        if len(decoded) < 2 * s.split_min_runs:
            return
        rows = [r for r, _ in decoded]
        vectors = np.stack([v for _, v in decoded])
        paths = [r["path_hash"] for r in rows]
        outcomes = [None if r["outcome"] not in ("success", "failure") else r["outcome"] == "success" for r in rows]
        found = splitting.split_of(vectors, paths, outcomes, link=s.split_link, p=s.split_p,
                                   min_count=s.split_min_runs, overlap=s.merge_overlap)
        if found is None:
            return
        moved = [rows[i] for i in found.rows]
        table = splitting.outcome_table(found.rows, paths, outcomes)
        total = vectors[list(found.rows)].sum(axis=0)
        dst = grouping.split_to(scenario, total, table, found.path, sc.split_id(app, scope, moved[0]["request_hash"] or ""))
        left = await ledger.move_runs(conn, app, scope, scenario, dst, moved, now, model=self._embedder.model_name)
        grouping.move(scenario, dst, total, len(moved), table, left)
        logger.info("procedure split: %d of %d runs of scenario %s moved to %s (%.0f%% on paths the rest ran)",
                    len(moved), len(rows), scenario, dst, 100 * found.covered)
        if current_entry() is not None:
            await conn.execute(AuditEntry("procedure_split", app, user_id=who[0], session_id=who[1], row_count=len(moved)).insert())

    async def _centroids(self, conn: AsyncConnection, app: str, scope: str, *, lock: bool = False) -> list[sc.Centroid]:
        rows = (await conn.execute(q.scenarios_of(app, scope, lock=lock))).all()
        return sc.centroids(rows, self._embedder.model_name)

    def _run_values(
        self, app: str, scope: str, inv: Invocation, reason: str | None, label: str | None,
        vec: np.ndarray | None, old: dict[str, Any], grouping: sc.Grouping,
    ) -> dict[str, Any]:
        req_hash = sc.request_hash(inv.request) if inv.request else None
        path = path_hash(inv.tools)
        merges: list[tuple[str, str]] = []
        if label:
            scenario = sc.label_id(label)
        elif old["counted"] and old["scenario_id"] and old["request_hash"] == req_hash:
            scenario = old["scenario_id"]  # extracted before (and perhaps merged since): it stays where it is
            vec = decode_vector(old["request_vector"])
            grouping.add(scenario, None, path)  # its outcome is counted in the stats already (or moves with this run)
        elif vec is not None:
            api = old.get("outcome_source") == "api" and old.get("outcome") in ("success", "failure")
            outcome = old["outcome"] == "success" if api else inv.outcome  # record_outcome wins (see _apply)
            scenario, merges = grouping.assign(vec, sc.new_id(app, scope, req_hash or ""), path, outcome)
        else:
            scenario = sc.new_id(app, scope, "")  # no request text: one "unspecified" scenario per scope
        values: dict[str, Any] = {
            "extractor": EXTRACTOR, "scope_user": scope, "scenario_id": scenario, "path_hash": path,
            "tool_path": json.dumps(inv.shapes(), ensure_ascii=False, sort_keys=True),
            "failed_tool": inv.failed_tool, "iterations": inv.iterations, "tool_calls": len(inv.steps),
            "tool_errors": inv.tool_errors, "retries": inv.retries, "request_hash": req_hash,
            "request_vector": old["request_vector"] if scenario == old["scenario_id"] and vec is not None
            and old["request_hash"] == req_hash else (encode_vector(vec) if vec is not None else None),
            "event_ids": json.dumps(inv.event_ids), "created_at": _utc(inv.started), "counted": 1,
            "_label": label, "_merges": merges,
        }
        if inv.outcome is not None:
            values.update(outcome="success" if inv.outcome else "failure", outcome_source=inv.outcome_source,
                          reason=None if inv.outcome else reason)
        else:
            values.update(outcome="unknown", outcome_source="none", reason=reason)
        return values

    async def _lock_run(
        self, conn: AsyncConnection, key: dict[str, str], scope: str, created_at: datetime, extractor: str
    ) -> dict[str, Any]:
        """The run's row, created if missing, locked: what it counted so far."""
        await conn.execute(q.touch_run(key, extractor, scope, created_at))
        return dict((await conn.execute(q.lock_run(key))).mappings().one())

    async def _apply(
        self, conn: AsyncConnection, key: dict[str, str], old: dict[str, Any], values: dict[str, Any], now: datetime,
        *, from_events: bool,
    ) -> int:
        """Writes one locked run and moves the aggregates by the difference; 1 if anything changed."""
        app = key["app_name"]
        label = values.pop("_label", None)
        if from_events:
            if old["counted"] and old["extractor"] > values["extractor"]:
                return 0  # written by a newer extractor: an older one must not undo it
            if old["outcome_source"] == "api":  # record_outcome wins over what the events say
                values.update(outcome=old["outcome"], outcome_source="api", reason=old["reason"])
        new = {**old, **values}
        if all(old.get(k) == new.get(k) for k in values):
            return 0
        before, after = ledger.contribution(old), ledger.contribution(new)
        if before is not None:
            await ledger.subtract(conn, app, before, now)
        if after is not None:
            await ledger.add(conn, app, after, new["created_at"], now)
        if old.get("request_vector") != new.get("request_vector") or old.get("scenario_id") != new.get("scenario_id"):
            if before is not None and old.get("request_vector"):
                await ledger.move_scenario(conn, app, old["scope_user"], old["scenario_id"],
                                           decode_vector(old["request_vector"]), -1, now)
            if after is not None:
                await ledger.move_scenario(conn, app, new["scope_user"], new["scenario_id"],
                                           decode_vector(new["request_vector"]), 1, now, label=label,
                                           model=self._embedder.model_name)
        if before is not None and after is not None and before[:3] != after[:3]:
            await conn.execute(q.delete_empty_stats(app, before[0], [(before[1], before[2])]))
        await conn.execute(q.update_run(key, values))
        return 1

    @audited(by_session(_OUTCOME))
    async def record_outcome(
        self, session: Any, invocation_id: str, success: bool, *, reason: str | None = None, scenario: str | None = None
    ) -> None:
        """Says how an invocation ended: the strongest outcome signal, overriding what its events said.

        May come before or after :meth:`extract_session`: a run not extracted
        yet keeps the outcome and is counted when its path is extracted.
        Calling it again with another outcome moves the counts.
        """
        if not isinstance(success, bool):
            raise ValidationError(f"success must be True or False, not {success!r}")
        app, user, sid = check_id("app_name", session.app_name), check_id("user_id", session.user_id), check_id("session_id", session.id)
        inv = check_id("invocation_id", invocation_id, max_len=256)
        red_reason, red_label = await self._redactor.redact_many([(reason or "")[:200], (scenario or "")[:256]])
        start = await self._read(lambda conn: guard.started(conn, app, user))

        async def once() -> None:
            async with self._tx() as conn:
                now = _now()
                gen = await guard.lock(conn, app, user, now)
                if gen.generation != start.generation:
                    raise MemoryWriteRaceError(f"the data of user {user!r} was erased while this outcome was recorded")
                if gen.opted_out:
                    return
                scope = self._scope(user)
                await ledger.lock_scope(conn, app, scope, now)
                key = {"app_name": app, "user_id": user, "session_id": sid, "invocation_id": inv}
                values: dict[str, Any] = {
                    "scope_user": scope, "outcome": "success" if success else "failure",
                    "outcome_source": "api", "reason": None if success else (red_reason or None),
                }
                if red_label:
                    values["scenario_id"], values["_label"] = sc.label_id(red_label), red_label
                old = await self._lock_run(conn, key, scope, now, EXTRACTOR)
                n = await self._apply(conn, key, old, values, now, from_events=False)
                if (entry := current_entry()) is not None:
                    entry.invocation_id, entry.row_count = inv, n
                    await conn.execute(entry.insert())

        await gateway.retrying(once, when=_retry_when, attempts=3, what="record_outcome")

    # ---------------------------------------------------------------- serving
    @audited(by_ids(_RECALL), read=True, count=lambda r: len(r.procedures))
    async def recall_procedures(
        self, app_name: str, query: str | None = None, *, scenario: str | None = None,
        user_id: str | None = None, top_k: int = 3,
    ) -> Recall:
        """The paths that worked best for the scenario ``query`` (or the label ``scenario``) belongs to.

        The scenario is the one most of the stored runs nearest ``query`` belong
        to (``ProceduralSettings.recall_neighbours``: their request vectors, read
        from the store); with none near, or ``recall_neighbours=None``, every
        scenario whose centroid is near is pooled.

        Returns a :class:`~.recall.Recall`: promoted paths by confidence (the
        Wilson lower bound of their outcomes among the scenario's newest
        ``recent_window``, weighted by recency: ``half_life``),
        each with its success rate, sample size, median iterations and
        failure reasons, and the paths to avoid.  ``user_id`` is needed when
        the settings' scope is ``"user"``.  Tainted paths and paths with
        fewer than ``min_samples`` known outcomes are never promoted.
        """
        app = check_id("app_name", app_name)
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 50:
            raise ValidationError(f"top_k must be an integer from 1 to 50, not {top_k!r}")
        if self.settings.scope == "user" and user_id is None:
            raise ValidationError("recall_procedures needs user_id when ProceduralSettings.scope is 'user'")
        scope = self._scope(check_id("user_id", user_id)) if user_id is not None else ""
        if scenario:
            vec = None
        elif query and query.strip():
            vec = (await self._embed([query]))[0]
        else:
            raise ValidationError("recall_procedures needs a query or a scenario")
        window = self.settings.recent_window

        async def read(conn: AsyncConnection) -> Recall:
            # which scenarios, then their numbers: one read of the store, no vector held across calls
            targets = [(sc.label_id(scenario), 1.0)] if vec is None else await self._targets(conn, app, scope, vec)
            if not targets:
                return Recall(scenario_id=None, similarity=0.0, procedures=[], avoid=[])
            ids = [t[0] for t in targets]
            stats = (await conn.execute(q.stats_of(app, scope, ids))).mappings().all()
            recent = (await conn.execute(q.recent_outcomes(app, scope, ids, window))).all()
            iters = (await conn.execute(q.success_iterations(app, scope, ids))).all()
            fails = (await conn.execute(q.failure_reasons(app, scope, ids))).all()
            return build_recall(ids[0], targets[0][1], stats, recent, iters, fails, self.settings, top_k)

        return await self._read(read)

    async def _targets(self, conn: AsyncConnection, app: str, scope: str, vec: np.ndarray) -> list[tuple[str, float]]:
        """The scenarios recall ranks for a request vector: the one its nearest runs vote for
        (``recall_neighbours``), else every scenario whose centroid is near (``pool_similarity``)."""
        floor = self.settings.similarity if self.settings.pool_similarity is None else self.settings.pool_similarity
        k = self.settings.recall_neighbours
        if k is not None:
            decoded = await self._run_vectors(conn, app, scope, vec.shape)
            if decoded:
                winner, cosine = sc.vote(vec, [s for s, _ in decoded], np.stack([v for _, v in decoded]), k, floor)
                if winner is not None:
                    return [(winner, cosine)]
        return sc.near(vec, await self._centroids(conn, app, scope), floor)

    async def _run_vectors(self, conn: AsyncConnection, app: str, scope: str, shape: tuple[int, ...]) -> list[tuple[str, np.ndarray]]:
        """``(scenario, request vector)`` of the scope's newest ``neighbour_window`` runs, newest first.

        The keys and scenarios are read every time (so an erased, expired or
        merged run votes as the store says now); the vectors only for runs
        this store has not seen (:mod:`.vote_cache`)."""
        model = self._embedder.model_name
        rows = (await conn.execute(q.run_keys(app, scope, self.settings.neighbour_window, model))).all()
        keys = [(r.user_id, r.session_id, r.invocation_id, r.request_hash) for r in rows]
        have = self._votes.keep((app, scope, model), keys)
        missing = [key for key in keys if key not in have]
        fetched: dict[RunKey, np.ndarray | None] = {}
        for at in range(0, len(missing), _VECTOR_BATCH):
            chunk = missing[at : at + _VECTOR_BATCH]
            for r in (await conn.execute(q.vectors_of(app, [key[:3] for key in chunk]))).all():
                # a run without a request vector (no user text) is remembered as such: it never votes
                fetched[(r.user_id, r.session_id, r.invocation_id, r.request_hash)] = decode_vector(r.request_vector)
        self._votes.add((app, scope, model), fetched)
        have.update(fetched)
        out = []
        for r, key in zip(rows, keys):
            v = have.get(key)
            if v is not None and v.shape == shape:
                out.append((r.scenario_id, v))
        return out

    @audited(by_ids(_TAINT))
    async def taint(self, app_name: str, scenario_id: str, path_hash: str, *, tainted: bool = True, user_id: str | None = None) -> int:
        """Marks a path (poisoned, or wrong advice) so it is never served; ``tainted=False`` lifts it.  Returns rows changed."""
        app = check_id("app_name", app_name)
        scope = self._scope(check_id("user_id", user_id)) if user_id is not None else ""
        t = procedure_stats
        stmt = t.update().where(
            t.c.app_name == app, t.c.user_id == scope, t.c.scenario_id == check_id("scenario_id", scenario_id),
            t.c.path_hash == check_id("path_hash", path_hash),
        ).values(tainted=int(bool(tainted)), updated_at=_now())
        async with self._tx() as conn:
            n = int((await conn.execute(stmt)).rowcount or 0)
            if (entry := current_entry()) is not None:
                entry.row_count = n
                await conn.execute(entry.insert())
        return n
