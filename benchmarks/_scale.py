"""``--scale N``: N memories in one app, two layouts; search latency and ANN recall against exact search.

Layouts (each in its own freshly migrated database, so the indexes are ours):

* ``users``: N memories spread over N/100 users (100 each) -- the common case;
* ``single``: N memories of ONE user -- the worst case for a per-user filter.

Data: seeded unit vectors from a Gaussian mixture (``clustered_vectors``:
1000 topics, like sentence embeddings; uniform random 384-d vectors would all
be nearly orthogonal, a pessimistic HNSW case no real store sees) with seeded
template sentences as content and ``search_text`` in the service's layout,
bulk-inserted as ``ready`` rows with multi-row INSERTs (embedding the text
would take N/110 s on this CPU and is not what is measured).  Queries are
perturbed copies of stored vectors; the truth is numpy's exact top-10 over the
querying user's rows.

After the load the HNSW index is rebuilt (``DBMS_VECTOR.REBUILD_INDEX``) and
the data compacted (``ALTER SYSTEM MAJOR FREEZE``, waited for: ``_scale_load.compact``).
The index:
an index grown row by row answers ~30x slower (measured 15-60 ms vs 0.8 ms
unfiltered top-10 at 100k) until the server's own refresh/rebuild runs, so
both are reported (``ann_unfiltered_incremental`` vs ``..._rebuilt``).
With ``--url``, a ``bench_scale_<layout>_<N>`` database already holding N
rows is reused as is (load and rebuild skipped; drop it to reload).

Measured per layout (``--ef-search 64,200`` adds ef values; the candidate
pool of ``MemorySettings`` is always tried as ef too, since a pool above ef
makes the filtered ANN scan iterate: 88 ms vs 12 ms at pool 200):

* ``vec_*``: the vector half alone, as the service's ANN candidate CTE runs
  it (tenant + liveness filter); ``LIMIT 10`` and ``LIMIT pool``; recall@10
  of the first ten rows against exact; the plan's operators are kept.
* ``ft_*``: the full-text half alone: the per-user BM25 over ``memory_terms``
  the service runs (revision 0012) in its two forms, ``ft_bm25_rows_first``
  (every matching posting joined to its row) and ``ft_bm25_postings_first``
  (scored from the postings, the best ``pool x fulltext_overfetch`` checked;
  what the service uses for big users, revision 0013), with the share of
  queries whose candidate lists are identical; and ``ft_match_filtered``,
  the ``MATCH ... AGAINST`` on the ik FULLTEXT index it replaced (table-wide
  statistics; the index is still there for analysts), filtered to the user.
* ``service_*``: ``OceanBaseMemoryService.search`` end to end (hybrid SQL),
  query vector served by a lookup embedder so embedding time is excluded,
  with and without the full-text half (``--scale-service-queries``).
"""

from __future__ import annotations

import argparse
import logging
import random
import time
from typing import Any

import numpy as np
from sqlalchemy import text

from benchmarks._common import environment, ensure_database, print_environment, seekdb_or_url
from benchmarks._metrics import summarise_latencies
from benchmarks._scale_load import (
    APP, DIM, MODEL, PER_USER, LookupEmbedder, TextSource, bulk_insert, compact, loaded_rows, rebuild_index, user_of,
    user_rows, vec_text,
)
from benchmarks._synthetic import clustered_vectors

logger = logging.getLogger(__name__)

# The vector candidate list exactly as search_sql.hybrid_search filters it.
_WHERE = ("a.app_name = :app AND a.user_id = :user AND a.embed_status <> 'deleted' AND a.superseded_by IS NULL "
          "AND a.embedding_model = :model")
VEC_SQL = "SELECT a.memory_id FROM agent_memories a WHERE " + _WHERE + \
    " ORDER BY cosine_distance(a.embedding, :qv){approx} LIMIT :k"
UNFILTERED_ANN_SQL = "SELECT memory_id FROM agent_memories ORDER BY cosine_distance(embedding, :qv) APPROXIMATE LIMIT 10"
_FT_WHERE = "f.app_name = :app AND f.user_id = :user AND f.embed_status <> 'deleted' AND f.superseded_by IS NULL"
FT_FILTERED_SQL = (
    "SELECT f.memory_id, MATCH(f.search_text) AGAINST(:qtext) AS fts FROM agent_memories f WHERE " + _FT_WHERE +
    " AND MATCH(f.search_text) AGAINST(:qtext) ORDER BY fts DESC, f.memory_id LIMIT :k"
)


def bm25_sql(query: str, pool: int, overfetch: int | None = None) -> tuple[str, dict[str, Any]]:
    """The service's full-text candidate list (``postings.bm25_ctes``) for one query, alone."""
    from adk_oceanbase.memory.lexical import query_terms
    from adk_oceanbase.memory.postings import bm25_ctes

    params: dict[str, Any] = {}
    ctes = bm25_ctes(query_terms(query.split()), _FT_WHERE, params, pool, overfetch=overfetch)
    return f"WITH {', '.join(ctes)} SELECT memory_id, fts FROM ft", params


async def _statement_warmup(conn: Any, base: list[dict[str, Any]], pool: int, ef: int, res: dict[str, Any],
                            runs: int = 40) -> None:
    """The first executions of a new statement text, without optimizer statistics and with them.

    The service's ANN candidate list (query vector in a session variable, as ``bind_query_vector``
    does), under a table alias never used before, so the server has no plan for it: ``runs``
    executions right after deleting the table's statistics (the state a bulk load leaves), then
    the same under another new alias after ``DBMS_STATS.GATHER_TABLE_STATS`` (what the service's
    index upkeep and ``rebuild_vector_index`` do; ``stats_seconds``).  Every run afterwards
    measures with statistics, as the service keeps them.
    """
    await conn.execute(text(f"SET ob_hnsw_ef_search = {int(ef)}"))

    async def fresh_text(tag: str) -> dict[str, Any]:
        alias = f"w{tag}{random.randrange(10**9)}"
        sql = VEC_SQL.replace(" a.", f" {alias}.").replace("(a.", f"({alias}.").replace(
            "agent_memories a ", f"agent_memories {alias} ").replace(":qv", "@adk_ob_qv").format(approx=" APPROXIMATE")
        lat = []
        for i in range(runs):
            p = base[i % len(base)]
            await conn.execute(text("SET @adk_ob_qv = :qv"), {"qv": p["qv"]})
            start = time.perf_counter()
            (await conn.execute(text(sql), dict(p, k=pool))).fetchall()
            lat.append(time.perf_counter() - start)
        return {"first_30": summarise_latencies(lat[:30]), "after_30": summarise_latencies(lat[30:]),
                "plan": await _explain(conn, sql.replace("@adk_ob_qv", ":qv"), dict(base[0], k=pool)),
                "per_run_ms": [round(x * 1000, 2) for x in lat]}

    await conn.execute(text("CALL DBMS_STATS.DELETE_TABLE_STATS(DATABASE(), 'agent_memories')"))
    res["ann_new_statement_no_stats"] = await fresh_text("n")
    start = time.perf_counter()
    await conn.execute(text("CALL DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), 'agent_memories')"))
    res["stats_seconds"] = time.perf_counter() - start
    res["ann_new_statement_with_stats"] = await fresh_text("s")


def _recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f[:10]) & set(t)) / len(t) for f, t in zip(found, truth)]))


async def _explain(conn: Any, sql: str, params: dict[str, Any]) -> list[str]:
    """The plan's operator column (``VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)``, ``TABLE RANGE SCAN``...)."""
    rows = (await conn.execute(text("EXPLAIN " + sql), params)).fetchall()
    ops = []
    for (line,) in rows:
        parts = line.split("|")
        if len(parts) > 3 and parts[1].strip().isdigit():
            ops.append(f"{parts[2].strip()} {parts[3].strip()}".strip())
    return ops


async def _timed(conn: Any, sql: str, params_list: list[dict[str, Any]], ef: int | None, warm: int = 3):
    if ef is not None:
        await conn.execute(text(f"SET ob_hnsw_ef_search = {int(ef)}"))
    for p in params_list[:warm]:
        (await conn.execute(text(sql), p)).fetchall()
    ids, lat = [], []
    for p in params_list:
        start = time.perf_counter()
        rows = (await conn.execute(text(sql), p)).fetchall()
        lat.append(time.perf_counter() - start)
        ids.append([r[0] for r in rows])
    return ids, lat


async def _service_runs(url: str, embedder: LookupEmbedder, queries: list[str], users: list[str],
                        groups: list[list[tuple[str, dict[str, Any], dict[str, float] | None]]]) -> dict[str, Any]:
    """End-to-end ``search`` through the memory service (hybrid statement).

    ``groups`` of modes (label, settings, weights) run one after another; the modes
    of one group take turns query by query (in alternating order, after one untimed
    pass over the queries), so neither drift of the machine nor reading a query's
    data for the first time can pass for a difference between them (an exact full
    scan between two ANN searches would slow the second one down, which is why not
    everything is interleaved).
    """
    from adk_oceanbase.config import Config
    from adk_oceanbase.memory import OceanBaseMemoryService
    from adk_oceanbase.memory.settings import MemorySettings

    out: dict[str, Any] = {}
    tops: dict[str, list[list[str]]] = {}
    for modes in groups:
        svcs = {label: OceanBaseMemoryService(config=Config.from_url(url), embedder=embedder,
                                              settings=MemorySettings(bump_access=False, **kw))
                for label, kw, _ in modes}
        lat: dict[str, list[float]] = {label: [] for label, _, _ in modes}
        try:
            # One untimed pass first: a query's postings and rows are read from storage the first time
            # (LoCoMo text: up to ~50 ms, paid by whichever mode ran a query first); the timed passes
            # then measure the steady state, and the modes alternate their order query by query.
            first_label, _, first_weights = modes[0]
            for q, u in zip(queries, users):
                await svcs[first_label].search(APP, u, q, top_k=10, weights=first_weights)
            for i, (q, u) in enumerate(zip(queries, users)):
                for label, _, weights in (modes if i % 2 == 0 else modes[::-1]):
                    start = time.perf_counter()
                    hits = await svcs[label].search(APP, u, q, top_k=10, weights=weights)
                    if i >= 2:  # the first two warm the connections and plan caches
                        lat[label].append(time.perf_counter() - start)
                    tops.setdefault(label, []).append([h.memory_id for h in hits])
        finally:
            for svc in svcs.values():
                await svc.close()
        out.update({label: {"settings": kw, "weights": weights, "latency": summarise_latencies(lat[label])}
                    for label, kw, weights in modes})
    # Agreement with the exact vector scan of the same weights (``service_<tag>_exact``): the share of
    # its top 10 each mode returns too (the ANN modes' recall of the exact service's answer).
    for label, val in out.items():
        ref = tops.get(label.split("_ann")[0] + "_exact") if "_ann" in label else None
        if ref is not None:
            val["agreement@10_with_exact"] = float(np.mean(
                [len(set(a) & set(b)) / len(b) if b else 1.0 for a, b in zip(tops[label], ref)]))
    return out


async def _run_layout(args: argparse.Namespace, layout: str, server: Any, efs: list[int], pool: int) -> dict[str, Any]:
    from adk_oceanbase.config import Config
    from adk_oceanbase.engine import Database
    from adk_oceanbase.memory import search_sql as msq
    from adk_oceanbase.memory.settings import MemorySettings
    from adk_oceanbase.migrations import upgrade

    n, nq = args.scale, args.scale_queries
    vecs = clustered_vectors(n, DIM, seed=args.seed)
    qrng = np.random.default_rng(args.seed + 1)
    picks = qrng.choice(n, size=nq, replace=False)
    qvecs = vecs[picks] + qrng.standard_normal((nq, DIM)).astype(np.float32) * (0.3 / np.sqrt(DIM))
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    users = [user_of(int(i), layout, n) for i in picks]
    truth = []
    for j, i in enumerate(picks):
        rows = user_rows(int(i), layout, n)
        truth.append([f"m{r:08d}" for r in rows[np.argsort(-(vecs[rows] @ qvecs[j]))[:10]]])
    source = TextSource(getattr(args, "scale_text", "synthetic"), args.seed, getattr(args, "locomo", None))
    qtexts = source.queries(nq, args.seed + 2)

    dbname = f"bench_scale_{layout}_{n}" + ("" if source.kind == "synthetic" else f"_{source.kind}")
    url = server.url(dbname, scheme="oceanbase") if server else args.url.rsplit("/", 1)[0] + "/" + dbname
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    res: dict[str, Any] = {"layout": layout, "users": max(n // PER_USER, 1) if layout == "users" else 1,
                           "rows_per_user": PER_USER if layout == "users" else n}
    reuse = server is None and loaded_rows(port, dbname) == n
    if not reuse:
        ensure_database("127.0.0.1", port, "root", None, dbname, fresh=True)
    db = Database(Config.from_url(url))
    await db.start()
    try:
        await upgrade(db)
        res["reused_database"] = reuse
        if not reuse:
            res["insert_seconds"] = await bulk_insert(db, vecs, layout, source)
        base = [{"app": APP, "user": u, "model": MODEL, "qv": vec_text(q)} for u, q in zip(users, qvecs)]
        async with db.engine.connect() as conn:
            await conn.execute(text("SET ob_query_timeout = 600000000"))
            if not reuse:
                _, lat = await _timed(conn, UNFILTERED_ANN_SQL, base[:20], 64)
                res["ann_unfiltered_incremental"] = summarise_latencies(lat)
                await rebuild_index(conn, res)
            await compact(conn, res)
            await _statement_warmup(conn, base, pool, max(pool, 64), res)
            _, lat = await _timed(conn, UNFILTERED_ANN_SQL, base[:20], 64)
            res["ann_unfiltered_rebuilt"] = summarise_latencies(lat)

            variants: list[tuple[str, str, int, int | None]] = [("vec_exact_k10", "", 10, None),
                                                                ("vec_exact_pool", "", pool, None)]
            for ef in sorted(set(efs + [pool])):
                variants += [(f"vec_ann_k10_ef{ef}", " APPROXIMATE", 10, ef), (f"vec_ann_pool_ef{ef}", " APPROXIMATE", pool, ef)]
            for label, approx, k, ef in variants:
                sql = VEC_SQL.format(approx=approx)
                params = [dict(p, k=k) for p in base]
                found, lat = await _timed(conn, sql, params, ef if ef is not None else 64)
                res[label] = {"latency": summarise_latencies(lat), "recall@10": _recall(found, truth),
                              "plan": await _explain(conn, sql, params[0])}

            ftq = [msq.fulltext_query(t) for t in qtexts]
            ftp = [{"app": APP, "user": u, "qtext": t, "k": pool} for u, t in zip(users, ftq)]
            match_ft, lat = await _timed(conn, FT_FILTERED_SQL, ftp, None)
            res["ft_match_filtered"] = {"latency": summarise_latencies(lat),
                                        "plan": await _explain(conn, FT_FILTERED_SQL, ftp[0]),
                                        "mean_hits": float(np.mean([len(f) for f in match_ft]))}
            # the two forms of the per-user BM25 list (postings.bm25_ctes), query by query in turns
            forms = {"ft_bm25_rows_first": None, "ft_bm25_postings_first": MemorySettings().fulltext_overfetch}
            bm25_ids: dict[str, list[list[Any]]] = {k: [] for k in forms}
            bm25_lat: dict[str, list[float]] = {k: [] for k in forms}
            for j, (u, t) in enumerate(zip(users, ftq)):
                for label, over in forms.items():
                    sql, params = bm25_sql(t, pool, over)
                    params.update(app=APP, user=u)
                    start = time.perf_counter()
                    rows = (await conn.execute(text(sql), params)).fetchall()
                    if j >= 3:
                        bm25_lat[label].append(time.perf_counter() - start)
                    bm25_ids[label].append([(r[0], round(float(r[1]), 9)) for r in rows])
            for label, over in forms.items():
                sql, params = bm25_sql(ftq[0], pool, over)
                res[label] = {"latency": summarise_latencies(bm25_lat[label]),
                              "plan": await _explain(conn, sql, dict(params, app=APP, user=users[0])),
                              "mean_hits": float(np.mean([len(f) for f in bm25_ids[label]]))}
            res["ft_bm25_postings_first"]["same_list_as_rows_first"] = float(np.mean(
                [a == b for a, b in zip(bm25_ids["ft_bm25_rows_first"], bm25_ids["ft_bm25_postings_first"])]))
    finally:
        await db.close()

    embedder = LookupEmbedder()
    embedder.table.update(zip(qtexts, qvecs))
    ns = args.scale_service_queries
    ef_pool = max(pool, 64)
    groups: list[list[tuple[str, dict[str, Any], dict[str, float] | None]]] = []
    for tag, weights in (("vector_only", {"fulltext": 0.0}), ("hybrid", None)):
        groups += [[(f"service_{tag}_exact", {"vector_search": "exact"}, weights)],
                   [(f"service_{tag}_ann_ef_default", {"vector_search": "ann"}, weights)],
                   [(f"service_{tag}_ann_ef{ef_pool}", {"vector_search": "ann", "ef_search": ef_pool}, weights)]]
    # The HNSW list's depth before ``ann_pool`` (100): the candidate pool, at ef 200, interleaved with the default.
    groups[-2].append(("service_hybrid_ann_pool200_ef200", {"vector_search": "ann", "ann_pool": None, "ef_search": 200}, None))
    # ... and the full-text list cut to 100 as well (candidate_pool 100): what the top 10 loses when it is.
    groups[-2].append(("service_hybrid_ann_ft100", {"vector_search": "ann", "candidate_pool": 100}, None))
    # ... and the BM25 statistics as CTEs of the statement (before session 9), beside the variables (the default).
    groups[-2].append(("service_hybrid_ann_stats_inline", {"vector_search": "ann", "fulltext_statistics": "inline"}, None))
    ann = {"vector_search": "ann", "ef_search": ef_pool}
    # What the version signal costs (facts compared pairwise), and the row-first full-text list
    # (fulltext_overfetch=None), interleaved with the defaults.
    groups[-1].append((f"service_hybrid_ann_ef{ef_pool}_version_off", ann, {"version": 0.0}))
    groups[-1].append((f"service_hybrid_ann_ef{ef_pool}_ft_rows_first", dict(ann, fulltext_overfetch=None), None))
    if ns:
        res["service"] = await _service_runs(url, embedder, qtexts[:ns], users[:ns], groups)
    return res


def _print_layout(res: dict[str, Any]) -> None:
    load = ("reused loaded database" if res.get("reused_database") else
            f"insert {res['insert_seconds']:.0f} s, index rebuild {res['rebuild_seconds']:.0f} s") + (
        f", compaction {res['compaction_seconds']:.0f} s" if "compaction_seconds" in res else "")
    print(f"\n== layout {res['layout']}: {res['users']} user(s), {res['rows_per_user']} rows each ({load})")
    for key in ("ann_unfiltered_incremental", "ann_unfiltered_rebuilt"):
        if key not in res:
            continue
        lat = res[key]
        print(f"{key:<30} p50 {lat['p50_ms']:7.2f} ms  p95 {lat['p95_ms']:7.2f} ms")
    for key in ("ann_new_statement_no_stats", "ann_new_statement_with_stats"):
        if key in res:
            a, b = res[key]["first_30"], res[key]["after_30"]
            print(f"{key:<30} first 30 runs p50 {a['p50_ms']:7.2f} ms, later p50 {b['p50_ms']:7.2f} ms  "
                  f"plan: {' / '.join(res[key]['plan'])}")
    for key, val in res.items():
        if key.startswith(("vec_", "ft_")):
            lat = val["latency"]
            extra = f"recall@10 {val['recall@10']:.3f}" if "recall@10" in val else (
                f"recall_of_filtered {val['recall_of_filtered']:.3f}" if val.get("recall_of_filtered") is not None
                else f"hits {val.get('mean_hits', 0):.0f}" + (
                    f", same list {val['same_list_as_rows_first']:.2f}" if "same_list_as_rows_first" in val else ""))
            print(f"{key:<30} p50 {lat['p50_ms']:7.2f} ms  p95 {lat['p95_ms']:7.2f} ms  {extra:<24} "
                  f"plan: {' / '.join(val['plan'])}")
    for key, val in res.get("service", {}).items():
        if "latency" not in val:
            print(f"{key:<40} {val}")
            continue
        lat = val["latency"]
        agree = f"  agreement@10 with exact {val['agreement@10_with_exact']:.3f}" if "agreement@10_with_exact" in val else ""
        print(f"{key:<40} p50 {lat['p50_ms']:7.2f} ms  p95 {lat['p95_ms']:7.2f} ms{agree}")


async def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    from adk_oceanbase.memory.settings import MemorySettings

    efs = [int(x) for x in str(args.ef_search).split(",") if x]
    pool = MemorySettings().candidate_pool
    result: dict[str, Any] = {"environment": environment(("adk-oceanbase", "pylibseekdb", "numpy", "SQLAlchemy")),
                              "n": args.scale, "queries": args.scale_queries, "seed": args.seed,
                              "candidate_pool": pool, "ann_pool": MemorySettings().ann_pool, "vectors": "clustered_vectors (1000-centre Gaussian mixture)",
                              "text": getattr(args, "scale_text", "synthetic"), "layouts": {}}
    with seekdb_or_url(args.url, memory_budget=getattr(args, "scale_memory", "4G"), log_disk_size="8G") as server:
        print_environment(result["environment"])
        print(f"\n== scale: {args.scale} memories in one app ({result['text']} text), {args.scale_queries} queries, "
              f"candidate pool {pool}")
        for layout in args.scale_layouts.split(","):  # printed as each finishes: a killed run keeps what it measured
            result["layouts"][layout] = await _run_layout(args, layout, server, efs, pool)
            _print_layout(result["layouts"][layout])
    return result

