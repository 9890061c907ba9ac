"""Per-user vector search on seekdb: exact key-range scan vs ``APPROXIMATE`` by user size.

Why ``MemorySettings.vector_search="auto"`` scans users below
``exact_scan_rows`` exactly.  One app holds users of 1k, 2k, 5k, 10k, 20k and
50k memories (88k rows; seeded clustered 384-d vectors, bulk-inserted
``ready``); for each user, queries near its own rows run the vector
candidate statement of ``search_sql`` (``LIMIT candidate_pool``, ef =
pool) both ways, in blocks, before and after ``DBMS_VECTOR.REBUILD_INDEX``
and after ``DBMS_STATS.GATHER_TABLE_STATS``; recall@10 of the index vs
exact and the plan's vector operator are recorded.

Usage::

    python benchmarks/vector_user_sizes.py --out benchmarks/results/vector-user-sizes-<date>.json
    python benchmarks/vector_user_sizes.py --url oceanbase://root@127.0.0.1:PORT/x   # an existing server
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from sqlalchemy import text

from benchmarks._common import ensure_database, environment, print_environment, seekdb_or_url, write_json
from benchmarks._metrics import summarise_latencies
from benchmarks._synthetic import clustered_vectors

APP, MODEL, DB = "sizes", "sizes-synthetic-384", "bench_vector_user_sizes"
SIZES = (1000, 2000, 5000, 10000, 20000, 50000)
_WHERE = ("a.app_name = :app AND a.user_id = :user AND a.embed_status <> 'deleted' AND a.tainted = 0 "
          "AND a.confidence >= 0.5 AND a.superseded_by IS NULL AND a.embedding_model = :model")
SQL = {
    "ann": f"SELECT a.memory_id FROM agent_memories a WHERE {_WHERE} "
           "ORDER BY cosine_distance(a.embedding, :qv) APPROXIMATE LIMIT :k",
    "exact": f"SELECT a.memory_id FROM agent_memories a WHERE {_WHERE} "
             "ORDER BY cosine_distance(a.embedding, :qv), a.memory_id LIMIT :k",
}


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


async def _load(db: Any, vecs: np.ndarray) -> float:
    start, i = time.perf_counter(), 0
    cols = ("memory_id, app_name, user_id, content, content_hash, created_at, updated_at, embedding, embedding_model, "
            "embedding_dim, embed_status, extractor")
    row = "(%s,%s,%s,'c',%s,'2024-01-01','2024-01-01',%s,%s,384,'ready','turn:v1')"
    for n in SIZES:
        for lo in range(0, n, 500):
            args: list[Any] = []
            for j in range(lo, min(n, lo + 500)):
                args += [f"m{j:07d}", APP, f"s{n}", f"h{j}", _vec(vecs[i]), MODEL]
                i += 1
            async with db.engine.begin() as conn:
                await conn.exec_driver_sql(f"INSERT INTO agent_memories ({cols}) VALUES " + ",".join([row] * (len(args) // 6)),
                                           tuple(args))
    return time.perf_counter() - start


async def _measure(db: Any, queries: dict[int, list[str]], pool: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with db.engine.connect() as conn:
        await conn.execute(text("SET ob_query_timeout = 600000000"))
        await conn.execute(text(f"SET ob_hnsw_ef_search = {pool}"))
        for n, qs in queries.items():
            res: dict[str, Any] = {}
            found: dict[str, list[list[str]]] = {}
            for mode in ("ann", "exact", "ann", "exact"):  # blocks, twice: the second pair is timed
                lat, ids = [], []
                for qv in qs:
                    p = {"app": APP, "user": f"s{n}", "model": MODEL, "qv": qv, "k": pool}
                    start = time.perf_counter()
                    ids.append([r[0] for r in (await conn.execute(text(SQL[mode]), p)).all()])
                    lat.append(time.perf_counter() - start)
                found[mode] = ids
                res[f"latency_{mode}"] = summarise_latencies(lat)
            res["recall@10_ann_vs_exact"] = float(np.mean(
                [len(set(a[:10]) & set(e[:10])) / 10 for a, e in zip(found["ann"], found["exact"])]))
            plan = (await conn.execute(text("EXPLAIN " + SQL["ann"]),
                                       {"app": APP, "user": f"s{n}", "model": MODEL, "qv": qs[0], "k": pool})).all()
            res["plan_ann"] = [line for (line,) in plan if "VECTOR INDEX" in line or "TABLE" in line]
            out[str(n)] = res
            print(f"  user of {n:>6} rows: ANN p50/p95 {res['latency_ann']['p50_ms']:6.1f}/{res['latency_ann']['p95_ms']:6.1f} ms, "
                  f"exact {res['latency_exact']['p50_ms']:6.1f}/{res['latency_exact']['p95_ms']:6.1f} ms, "
                  f"recall@10 {res['recall@10_ann_vs_exact']:.3f}  {' '.join(res['plan_ann'][0].split('|')[2:3]).strip()}",
                  flush=True)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from adk_oceanbase.config import Config
    from adk_oceanbase.engine import Database
    from adk_oceanbase.memory import MemorySettings
    from adk_oceanbase.migrations import upgrade

    pool = MemorySettings().candidate_pool
    vecs = clustered_vectors(sum(SIZES), 384, seed=args.seed)
    rng = np.random.default_rng(args.seed + 1)
    queries, base = {}, 0
    for n in SIZES:
        picks = rng.choice(n, size=args.queries, replace=False) + base
        qv = vecs[picks] + rng.standard_normal((args.queries, 384)).astype(np.float32) * (0.3 / np.sqrt(384))
        queries[n] = [_vec(v / np.linalg.norm(v)) for v in qv]
        base += n
    result: dict[str, Any] = {"environment": environment(("adk-oceanbase", "pylibseekdb", "numpy", "SQLAlchemy")),
                              "sizes": SIZES, "queries_per_user": args.queries, "candidate_pool": pool, "phases": {}}
    print_environment(result["environment"])
    with seekdb_or_url(args.url, memory_budget="4G") as server:
        url = server.url(DB, scheme="oceanbase") if server else args.url.rsplit("/", 1)[0] + "/" + DB
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        ensure_database("127.0.0.1", port, "root", None, DB, fresh=True)
        db = Database(Config.from_url(url))
        await db.start()
        try:
            await upgrade(db)
            result["insert_seconds"] = await _load(db, vecs)
            for phase in ("grown_row_by_row", "rebuilt", "rebuilt_and_analyzed"):
                async with db.engine.begin() as conn:
                    await conn.execute(text("SET ob_query_timeout = 1800000000"))
                    start = time.perf_counter()
                    if phase == "rebuilt":
                        await conn.execute(text(
                            "CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', 0)"))
                    elif phase == "rebuilt_and_analyzed":
                        await conn.execute(text(f"CALL DBMS_STATS.GATHER_TABLE_STATS('{DB}', 'agent_memories')"))
                    took = time.perf_counter() - start
                print(f"\n== {phase} ({took:.0f} s)")
                result["phases"][phase] = {"seconds": took, "users": await _measure(db, queries, pool)}
        finally:
            await db.close()
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="an existing seekdb (the database bench_vector_user_sizes is recreated)")
    p.add_argument("--queries", type=int, default=20, help="queries per user")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--out", help="results JSON")
    args = p.parse_args()
    result = asyncio.run(run(args))
    if args.out:
        write_json(args.out, result)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
