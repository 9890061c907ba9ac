"""``--scale N``: N memories in one app and user; search latency and ANN recall against exact search.

Data: seeded unit vectors from a Gaussian mixture (``clustered_vectors``:
1000 topics, like sentence embeddings; uniform random 384-d vectors would all
be nearly orthogonal, a case no real store sees) with seeded template
sentences as content, bulk-inserted as ``ready`` rows (embedding the text would
take N/110 s on this CPU and is not what is measured).  Queries are
perturbed copies of stored vectors.

Measured, per ``ob_hnsw_ef_search`` value (``--ef-search 16,64,200``):

* ``sql_ann``: the vector half alone, ``ORDER BY cosine_distance(...)
  APPROXIMATE LIMIT 10`` with the tenant filter, as the service's ANN
  candidate subquery runs it; recall@10 against exact top-10 from numpy.
* ``sql_exact``: the same without ``APPROXIMATE`` (a full scan of the user's rows).
* ``service_ann`` / ``service_exact``: ``OceanBaseMemoryService.search`` end
  to end (hybrid: vector + full-text candidates, SQL scoring), query vector
  served by a lookup embedder so embedding time is excluded
  (``--scale-service-queries``, default 20: its full-text half is slow, see the report).

EXPLAIN of the ANN statement is saved, so the report shows the HNSW index is used.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import numpy as np
from sqlalchemy import text

from benchmarks._common import environment, ensure_database, print_environment, seekdb_or_url
from benchmarks._metrics import summarise_latencies
from benchmarks._synthetic import PEOPLE, clustered_vectors

logger = logging.getLogger(__name__)

APP, USER = "scale", "u1"
MODEL = "scale-synthetic-384"
DIM = 384
_WORDS = (
    "garden coffee meeting flight doctor budget recipe guitar marathon invoice birthday museum laptop "
    "vacation apartment insurance concert deadline bicycle kitchen soccer novel podcast dentist"
).split()

ANN_SQL = (
    "SELECT memory_id FROM agent_memories WHERE app_name = :app AND user_id = :user "
    "ORDER BY cosine_distance(embedding, :qv) APPROXIMATE LIMIT :k"
)
EXACT_SQL = (
    "SELECT memory_id FROM agent_memories WHERE app_name = :app AND user_id = :user "
    "ORDER BY cosine_distance(embedding, :qv) LIMIT :k"
)


def sentence(rng: random.Random, i: int) -> str:
    a, b, c = rng.sample(_WORDS, 3)
    return f"{rng.choice(PEOPLE)} talked about the {a} and the {b} near the {c} (note {i})."


class LookupEmbedder:
    """Returns precomputed vectors for known texts: search latency without the model."""

    model_name = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


async def _bulk_insert(db: Any, vecs: np.ndarray, texts: list[str], batch: int = 1000) -> float:
    import hashlib

    now = datetime.now(timezone.utc).replace(tzinfo=None)
    stmt = text(
        "INSERT INTO agent_memories (memory_id, app_name, user_id, content, content_hash, author, "
        "importance_score, access_count, created_at, updated_at, embedding, embedding_model, embedding_dim, "
        "embed_status, embed_attempts, extractor) VALUES (:id, :app, :user, :content, :hash, 'user', 0.5, 0, "
        ":created, :created, :emb, :model, :dim, 'ready', 0, 'bench')"
    )
    start = time.perf_counter()
    for lo in range(0, len(texts), batch):
        rows = [
            {
                "id": f"m{i:08d}", "app": APP, "user": USER, "content": texts[i],
                "hash": hashlib.sha256(texts[i].encode()).hexdigest(),
                "created": now - timedelta(minutes=len(texts) - i),
                "emb": db.dialect.encode_vector(vecs[i]), "model": MODEL, "dim": DIM,
            }
            for i in range(lo, min(lo + batch, len(texts)))
        ]
        async with db.engine.begin() as conn:
            await conn.execute(stmt, rows)
        if (lo // batch) % 10 == 0:
            logger.info("inserted %d/%d", lo + len(rows), len(texts))
    return time.perf_counter() - start


async def _timed_sql(db: Any, sql: str, qvecs: np.ndarray, ef: int | None, k: int = 10):
    ids, lat = [], []
    async with db.engine.connect() as conn:
        if ef is not None:
            await conn.execute(text(f"SET ob_hnsw_ef_search = {int(ef)}"))
        for q in qvecs:
            params = {"app": APP, "user": USER, "qv": db.dialect.encode_vector(q), "k": k}
            start = time.perf_counter()
            rows = (await conn.execute(text(sql), params)).fetchall()
            lat.append(time.perf_counter() - start)
            ids.append([r[0] for r in rows])
    return ids, lat


def _recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


async def _service_runs(url: str, embedder: LookupEmbedder, queries: list[str], truth, efs) -> dict[str, Any]:
    """End-to-end ``search`` through the memory service, ANN and exact."""
    try:
        from adk_oceanbase.memory import OceanBaseMemoryService
        from adk_oceanbase.memory.settings import MemorySettings
    except ImportError as exc:
        return {"skipped": f"memory service not importable: {exc}"}
    from adk_oceanbase.config import Config

    out: dict[str, Any] = {}
    modes = [("service_exact", "exact", None)] + [(f"service_ann_ef{ef}", "ann", ef) for ef in efs]
    for label, mode, ef in modes:
        settings = MemorySettings(vector_search=mode, ef_search=ef, bump_access=False)
        svc = OceanBaseMemoryService(config=Config.from_url(url), embedder=embedder, settings=settings)
        try:
            lat, found = [], []
            for q in queries:
                start = time.perf_counter()
                res = await svc.search(APP, USER, q, top_k=10)
                lat.append(time.perf_counter() - start)
                found.append([_entry_id(e) for e in res])
            out[label] = {"latency": summarise_latencies(lat), "recall@10_vs_exact_vector": _recall(found, truth)}
        finally:
            await svc.close()
    return out


def _entry_id(entry: Any) -> str:
    for attr in ("memory_id", "id"):
        if getattr(entry, attr, None):
            return getattr(entry, attr)
    return entry.entry.id  # a wrapper around an ADK MemoryEntry


async def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    from adk_oceanbase.config import Config
    from adk_oceanbase.engine import Database
    from adk_oceanbase.migrations import upgrade

    n, nq = args.scale, args.scale_queries
    efs = [int(x) for x in str(args.ef_search).split(",") if x]
    rng = random.Random(args.seed)
    vecs = clustered_vectors(n, DIM, seed=args.seed)
    texts = [sentence(rng, i) for i in range(n)]
    qrng = np.random.default_rng(args.seed + 1)
    picks = qrng.choice(n, size=nq, replace=False)
    qvecs = vecs[picks] + qrng.standard_normal((nq, DIM)).astype(np.float32) * (0.3 / np.sqrt(DIM))
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    qtexts = [sentence(rng, int(i)) for i in picks]
    truth_idx = np.argsort(-(qvecs @ vecs.T), axis=1)[:, :10]
    truth = [[f"m{i:08d}" for i in row] for row in truth_idx]
    result: dict[str, Any] = {"environment": environment(("adk-oceanbase", "pylibseekdb", "numpy", "SQLAlchemy")),
                              "n": n, "queries": nq, "seed": args.seed}
    dbname = f"bench_scale_{n}"
    with seekdb_or_url(args.url, memory_budget="4G") as server:
        url = server.url(dbname, scheme="oceanbase") if server else args.url
        cfg = Config.from_url(url)
        ensure_database("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]), "root", None,
                        url.rsplit("/", 1)[1], fresh=True)
        db = Database(cfg)
        await db.start()
        try:
            await upgrade(db)
            result["insert_seconds"] = await _bulk_insert(db, vecs, texts)
            async with db.engine.connect() as conn:
                plan = (await conn.execute(text("EXPLAIN " + ANN_SQL), {
                    "app": APP, "user": USER, "qv": db.dialect.encode_vector(qvecs[0]), "k": 10})).fetchall()
                result["explain_ann"] = "\n".join(str(r[0]) for r in plan)
            found, lat = await _timed_sql(db, EXACT_SQL, qvecs, None)
            result["sql_exact"] = {"latency": summarise_latencies(lat), "recall@10": _recall(found, truth)}
            for ef in efs:
                found, lat = await _timed_sql(db, ANN_SQL, qvecs[:5], ef)  # warm the index
                found, lat = await _timed_sql(db, ANN_SQL, qvecs, ef)
                result[f"sql_ann_ef{ef}"] = {"latency": summarise_latencies(lat), "recall@10": _recall(found, truth)}
        finally:
            await db.close()
        embedder = LookupEmbedder()
        embedder.table.update(zip(qtexts, qvecs))
        ns = args.scale_service_queries
        result["service_queries"] = ns
        result["service"] = await _service_runs(url, embedder, qtexts[:ns], truth[:ns], efs) if ns else {}
    print_environment(result["environment"])
    print(f"\n== scale: {n} memories in one app/user, {nq} queries (insert {result['insert_seconds']:.0f} s)")
    for key, val in result.items():
        if key.startswith("sql_"):
            lat_ = val["latency"]
            print(f"{key:<22} p50 {lat_['p50_ms']:7.2f} ms  p95 {lat_['p95_ms']:7.2f} ms  recall@10 {val['recall@10']:.3f}")
    for key, val in result["service"].items():
        if isinstance(val, dict):
            lat_ = val["latency"]
            print(f"{key:<22} p50 {lat_['p50_ms']:7.2f} ms  p95 {lat_['p95_ms']:7.2f} ms  "
                  f"recall@10 {val['recall@10_vs_exact_vector']:.3f}")
        else:
            print(f"service: {val}")
    print("\nEXPLAIN (ANN statement):\n" + result["explain_ann"])
    return result


if __name__ == "__main__":  # pragma: no cover - use retrieval.py --scale
    raise SystemExit("run: python benchmarks/retrieval.py --scale N")
