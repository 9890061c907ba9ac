"""``--histories``: long-history users in an app that grows to 100k memories.

What a real deployment looks like after months: each user has hundreds to
thousands of turns, and the app holds many such users.  The benchmark:

* **measured users**: the LoCoMo conversations (300-700 turns each), ingested
  the way an agent does it (``_ours.OursSystem``: ADK events through
  ``add_events_to_memory``, the background vectorizer, consolidation), so the
  HNSW index grows row by row exactly as in production;
* **filler users**: seeded users of 300-700 rows each, bulk-inserted as
  ``ready`` turn rows (texts reused from LoCoMo, vectors = a LoCoMo turn's
  MiniLM vector plus seeded noise, cosine ~0.85 to it: the distribution of
  real sentence embeddings without embedding 100k texts on this CPU).

Phases (``--histories-phases``, total rows in the app; ``x10`` means ten times
the measured users' rows of other users; ``rebuilt``: the same rows after a
forced ``REBUILD_INDEX``): after each load the same questions
(LoCoMo categories 1-4 of the measured users, seeded sample of
``--histories-queries``) are asked through ``OceanBaseMemoryService.search``
in several modes, each mode in a block of all questions (twice: blocks
forward, then reversed).  Reported per phase:

* ``vector_half``: the ANN candidate statement alone (as ``search_sql`` runs
  it, ``LIMIT candidate_pool``, ef = pool) vs the exact scan: recall@10 and
  latency, and the plan's operators;
* ``recall_vs_exact``: |shipped top-10 ∩ exact top-10| / 10 (hybrid);
* ``locomo_r10``: LoCoMo R@10 of each mode (hits mapped to dialogue ids);
* latency p50/p95 of ``search`` (query vectors come from the embedding
  cache: the model is excluded): shipped (``vector_search="auto"``), exact,
  ann (the index for every user, the default before ``auto``), and shipped /
  ann with the full-text weight 0 (vector half + join-back + signals only);
* ``same_as_first_phase``: the fraction of questions whose shipped top-10 is
  identical to the first phase's (tenant independence: other users' rows must
  not change a user's results).

``--url`` reuses a server (the database ``bench_histories`` is recreated).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text

from benchmarks._common import environment, print_environment, seekdb_or_url
from benchmarks._metrics import query_metrics, summarise_latencies
from benchmarks._scale import _explain

logger = logging.getLogger(__name__)

FILLER_MIN, FILLER_MAX = 300, 700
NOISE = 0.6  # norm of the noise added to a reused unit vector: cosine ~0.85 to it
_VEC_SQL = (
    "SELECT a.memory_id FROM agent_memories a WHERE a.app_name = :app AND a.user_id = :user "
    "AND a.embed_status <> 'deleted' AND a.tainted = 0 AND a.confidence >= 0.5 AND a.superseded_by IS NULL "
    "AND a.embedding_model = :model ORDER BY cosine_distance(a.embedding, :qv){order} LIMIT :k"
)


def _vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


async def _app_rows(conn: Any, app: str) -> int:
    return int((await conn.execute(text("SELECT COUNT(*) FROM agent_memories WHERE app_name = :a"), {"a": app})).scalar())


async def _load_filler(db_engine: Any, app: str, pool: list[tuple[str, np.ndarray, str]], first_user: int,
                       rows: int, rng: np.random.Generator, batch: int = 500) -> tuple[int, float]:
    """Inserts ``rows`` filler rows (users ``f<NNNNN>`` from ``first_user``); returns (next user, seconds)."""
    from adk_oceanbase.memory.extraction import TURN_EXTRACTOR, search_text

    cols = ("memory_id, app_name, user_id, content, search_text, content_hash, author, session_id, importance_score, "
            "access_count, created_at, updated_at, embedding, embedding_model, embedding_dim, embed_status, "
            "embed_attempts, extractor, turn_pos")
    row_sql = "(%s,%s,%s,%s,%s,%s,%s,%s,0.5,0,%s,%s,%s,'all-MiniLM-L6-v2',384,'ready',0,%s,%s)"
    # Rows of whole users, user by user (as sessions would add them).
    plan: list[tuple[str, int]] = []
    left, u = rows, first_user
    while left > 0:
        n = min(left, int(rng.integers(FILLER_MIN, FILLER_MAX + 1)))
        plan.append((f"f{u:05d}", n))
        left -= n
        u += 1
    start = time.perf_counter()
    buf: list[Any] = []
    count = 0
    t0 = datetime(2023, 1, 1)

    async def flush() -> None:
        nonlocal buf, count
        if not buf:
            return
        n = len(buf) // 13
        async with db_engine.begin() as conn:
            await conn.exec_driver_sql(f"INSERT INTO agent_memories ({cols}) VALUES " + ",".join([row_sql] * n), tuple(buf))
        count += n
        buf = []

    for user, n in plan:
        picks = rng.integers(0, len(pool), size=n)
        noise = rng.standard_normal((n, 384)).astype(np.float32) * (NOISE / np.sqrt(384))
        for j, p in enumerate(picks):
            author, vec, content = pool[int(p)]
            v = vec + noise[j]
            v /= np.linalg.norm(v)
            created = t0 + timedelta(hours=j * 3)
            mid = hashlib.sha256(f"{user}:{j}".encode()).hexdigest()[:32]
            buf += [mid, app, user, content, search_text(author, created, content),
                    hashlib.sha256(f"{content}:{j}".encode()).hexdigest(), author, f"{user}-s{j // 20}",
                    created, created, _vec_text(v), TURN_EXTRACTOR, j]
            if len(buf) >= 13 * batch:
                await flush()
    await flush()
    return u, time.perf_counter() - start


async def _vector_half(db: Any, app: str, model: str, queries: list[Any], pool: int) -> dict[str, Any]:
    """The ANN candidate list alone vs the exact scan (recall@10, latency, plans)."""
    approx_sql, exact_sql = _VEC_SQL.format(order=" APPROXIMATE"), _VEC_SQL.format(order=", a.memory_id")
    out: dict[str, Any] = {}
    lat: dict[str, list[float]] = {"ann_pool": [], "exact_pool": []}
    recalls = []
    async with db.engine.connect() as conn:
        await conn.execute(text(f"SET ob_hnsw_ef_search = {max(pool, 64)}"))
        for i, qu in enumerate(queries):
            p = {"app": app, "user": qu.scope, "model": model, "qv": _vec_text(qu.vector), "k": pool}
            found = {}
            for label, sql in (("ann_pool", approx_sql), ("exact_pool", exact_sql)):
                start = time.perf_counter()
                found[label] = [r[0] for r in (await conn.execute(text(sql), p)).fetchall()]
                if i >= 2:
                    lat[label].append(time.perf_counter() - start)
            truth = found["exact_pool"][:10]
            if truth:
                recalls.append(len(set(found["ann_pool"][:10]) & set(truth)) / len(truth))
        p = {"app": app, "user": queries[0].scope, "model": model, "qv": _vec_text(queries[0].vector), "k": pool}
        out["plan_ann"] = await _explain(conn, approx_sql, p)
        out["plan_exact"] = await _explain(conn, exact_sql, p)
    out["recall@10_ann_vs_exact"] = float(np.mean(recalls)) if recalls else None
    out.update({f"latency_{k}": summarise_latencies(v) for k, v in lat.items()})
    return out


async def _service_phase(url: str, embedder: Any, app: str, queries: list[Any], now: dict[str, datetime],
                         first: dict[int, list[str]] | None) -> tuple[dict[str, Any], dict[int, list[str]]]:
    """Shipped vs exact vs shipped-vector-only searches, interleaved query by query."""
    from adk_oceanbase.config import Config
    from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

    from benchmarks._ours import _doc_ids

    modes = {
        "shipped": (MemorySettings(bump_access=False), None),
        "exact": (MemorySettings(bump_access=False, vector_search="exact"), None),
        "ann": (MemorySettings(bump_access=False, vector_search="ann"), None),
        "shipped_no_fulltext": (MemorySettings(bump_access=False), {"fulltext": 0.0}),
        "ann_no_fulltext": (MemorySettings(bump_access=False, vector_search="ann"), {"fulltext": 0.0}),
        # issue #13: semantic + full-text only (recency, frequency, importance, context, version off)
        "relevance_only": (MemorySettings(bump_access=False),
                           {"recency": 0.0, "frequency": 0.0, "importance": 0.0, "context": 0.0, "version": 0.0}),
    }
    svcs = {m: OceanBaseMemoryService(config=Config.from_url(url), embedder=embedder, settings=s)
            for m, (s, _) in modes.items()}
    lat: dict[str, list[float]] = {m: [] for m in modes}
    ids: dict[str, list[list[str]]] = {m: [] for m in modes}
    metrics: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    try:
        # Each mode answers every question in one block (forward, then the blocks again in reverse
        # order: drift of the machine is shared out).  Interleaving modes query by query made
        # whichever mode ran right after an ANN search 3-5x slower (an exact scan after an HNSW
        # search: 64 vs 13 ms), a history effect no single-mode deployment has.
        names = list(modes)
        for rnd, order in enumerate((names, names[::-1])):
            for m in order:
                weights = modes[m][1]
                for i, qu in enumerate(queries):
                    start = time.perf_counter()
                    hits = await svcs[m].search(app, qu.scope, qu.question, top_k=10, weights=weights,
                                                now=now[qu.scope])
                    if i >= 3:
                        lat[m].append(time.perf_counter() - start)
                    if rnd == 0:
                        ids[m].append([h.memory_id for h in hits])
                        metrics[m].append(query_metrics([d for h in hits for d in _doc_ids(h)], qu.relevant))
    finally:
        for svc in svcs.values():
            await svc.close()
    out: dict[str, Any] = {f"latency_{m}": summarise_latencies(v) for m, v in lat.items()}
    for m in modes:
        out[f"locomo_r10_{m}"] = float(np.mean([x["R@10"] for x in metrics[m]]))
    for m in ("shipped", "ann"):
        rec = [len(set(a) & set(b)) / len(b) for a, b in zip(ids[m], ids["exact"]) if b]
        out[f"recall@10_{m}_vs_exact"] = float(np.mean(rec))
        out[f"queries_below_0.9_of_exact_{m}"] = int(sum(r < 0.9 for r in rec))
    shipped = dict(enumerate(ids["shipped"]))
    if first is not None:
        same = [shipped[i] == first[i] for i in shipped]
        overlap = [len(set(shipped[i]) & set(first[i])) / max(len(first[i]), 1) for i in shipped]
        out["same_top10_as_first_phase"] = float(np.mean(same))
        out["overlap_top10_with_first_phase"] = float(np.mean(overlap))
    return out, shipped


def _print_phase(name: str, rows: int, res: dict[str, Any]) -> None:
    vh = res["vector_half"]
    print(f"\n== phase {name}: {rows} rows in the app")
    print(f"vector half: recall@10 ANN vs exact {vh['recall@10_ann_vs_exact']:.3f}; "
          f"ANN p50/p95 {vh['latency_ann_pool']['p50_ms']:.1f}/{vh['latency_ann_pool']['p95_ms']:.1f} ms, "
          f"exact {vh['latency_exact_pool']['p50_ms']:.1f}/{vh['latency_exact_pool']['p95_ms']:.1f} ms")
    print(f"  plan ANN: {' / '.join(vh['plan_ann'])}")
    print(f"  plan exact: {' / '.join(vh['plan_exact'])}")
    sv = res["service"]
    for m in ("shipped", "ann"):
        print(f"service: recall@10 {m} vs exact {sv[f'recall@10_{m}_vs_exact']:.3f} "
              f"({sv[f'queries_below_0.9_of_exact_{m}']} queries below 0.9)")
    for m in ("shipped", "exact", "ann", "shipped_no_fulltext", "ann_no_fulltext", "relevance_only"):
        if f"latency_{m}" not in sv:
            continue
        lat = sv[f"latency_{m}"]
        print(f"  {m:<22} LoCoMo R@10 {sv[f'locomo_r10_{m}']:.3f}   p50 {lat['p50_ms']:6.1f} ms  p95 {lat['p95_ms']:6.1f} ms")
    if "same_top10_as_first_phase" in sv:
        print(f"  tenant independence: identical top-10 as in the first phase {sv['same_top10_as_first_phase']:.3f}, "
              f"overlap {sv['overlap_top10_with_first_phase']:.3f}")


async def run_histories(args: argparse.Namespace) -> dict[str, Any]:
    from adk_oceanbase.config import Config
    from adk_oceanbase.engine import Database
    from adk_oceanbase.memory import MemorySettings

    from benchmarks._embed_cache import CachedEmbedder
    from benchmarks._ours import APP, OursSystem
    from benchmarks._dataset import locomo_dataset

    if not args.locomo:
        raise SystemExit("--histories needs --locomo PATH")
    embedder = CachedEmbedder(Path(args.cache_dir) if args.cache_dir else None)
    ds, _ = locomo_dataset(args.locomo, args.conversations, embedder)
    embedder.save()
    rng = random.Random(args.seed)
    questions = [q for q in ds.queries if q.group in ds.headline_groups]
    if args.histories_queries and len(questions) > args.histories_queries:
        questions = sorted(rng.sample(questions, args.histories_queries), key=lambda q: (q.scope, q.question))
    pool = [(d.author, d.vector, d.content) for docs in ds.docs.values() for d in docs]
    pool_sets = MemorySettings().candidate_pool
    result: dict[str, Any] = {
        "environment": environment(("adk-oceanbase", "pylibseekdb", "numpy", "SQLAlchemy")),
        "measured_users": {s: len(d) for s, d in ds.docs.items()}, "queries": len(questions), "seed": args.seed,
        "filler": f"users of {FILLER_MIN}-{FILLER_MAX} rows, LoCoMo texts, MiniLM vector + noise (norm {NOISE})",
        "phases": {},
    }
    print_environment(result["environment"])
    with seekdb_or_url(args.url, memory_budget=args.histories_memory) as server:
        url = server.url("bench_histories", scheme="oceanbase") if server else \
            args.url.rsplit("/", 1)[0] + "/bench_histories"
        ours = OursSystem(url, embedder)
        start = time.perf_counter()
        try:
            for scope, docs in ds.docs.items():
                await ours.index(scope, docs)
            await ours.ready()
        finally:
            await ours.close()
        result["ingest_seconds"] = time.perf_counter() - start
        result["ingest"] = ours.ingest_stats
        db = Database(Config.from_url(url))
        await db.start()
        frng = np.random.default_rng(args.seed)
        next_user, first = 0, None
        try:
            async with db.engine.connect() as conn:
                measured_rows = await _app_rows(conn, APP)
            for phase in args.histories_phases.split(","):
                async with db.engine.connect() as conn:
                    have = await _app_rows(conn, APP)
                    if phase == "rebuilt":  # the same rows after a forced REBUILD_INDEX
                        await conn.execute(text("SET ob_query_timeout = 1800000000"))
                        start = time.perf_counter()
                        await conn.execute(text(
                            "CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', 0)"))
                        rebuild_s = time.perf_counter() - start
                target = {"measured": measured_rows, "x10": measured_rows * 11, "rebuilt": have}.get(phase) or int(phase)
                res: dict[str, Any] = {"rebuild_seconds": rebuild_s} if phase == "rebuilt" else {}
                if target > have:
                    next_user, secs = await _load_filler(db.engine, APP, pool, next_user, target - have, frng)
                    res["filler_insert_seconds"] = secs
                async with db.engine.connect() as conn:
                    rows = await _app_rows(conn, APP)
                res["rows"] = rows
                res["vector_half"] = await _vector_half(db, APP, embedder.model_name, questions, pool_sets)
                res["service"], shipped = await _service_phase(url, embedder, APP, questions, ds.now, first)
                first = first if first is not None else shipped
                result["phases"][phase] = res
                _print_phase(phase, rows, res)
        finally:
            await db.close()
    return result

