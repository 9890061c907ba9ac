"""Recall of procedural memory at scale: a scope with 1k .. 100k stored runs, with and without ``ix_procedure_runs_recent``.

    python benchmarks/procedural_scale.py [--runs 1000,10000,100000] [--recalls 40] [--url URL]

``recall_procedures`` votes with the request vectors of the scope's newest
``neighbour_window`` (1,000) runs (``procedural.queries.run_vectors``).  That
read orders the scope's runs by ``created_at``; revision 0022 adds an index in
that order.  This script fills one app scope with N runs over 200 scenarios
(4 tool paths each, random unit request vectors labelled with the embedder's
model, as extraction writes them) and times ``recall_procedures`` end to end,
and the vote's read alone, with the index and with it dropped, alternating the
two in rounds on the same server and data (the ratio is what to read: the
machine is shared).  The embedder is ``HashEmbedder`` (a query embeds in ~20 us),
so the time is the store's, not a model's.

A throw-away seekdb server is started unless ``--url`` names a database.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import ensure_database, environment, percentile, print_environment, seekdb_or_url, write_json  # noqa: E402

from adk_oceanbase import Config, Database  # noqa: E402
from adk_oceanbase.memory.embedding import HashEmbedder  # noqa: E402
from adk_oceanbase.procedural import ProcedureStore  # noqa: E402
from adk_oceanbase.procedural import queries as q  # noqa: E402
from adk_oceanbase.procedural.extraction import path_hash  # noqa: E402
from adk_oceanbase.procedural.stats import encode_vector  # noqa: E402

APP = "scale"
SCENARIOS = 200
PATHS = [["lookup"], ["lookup", "refund"], ["search", "lookup", "refund"], ["ticket"]]
INDEX = "ix_procedure_runs_recent"
CREATE_INDEX = f"CREATE INDEX {INDEX} ON procedure_runs (app_name, scope_user, created_at, stored_at)"
DROP_INDEX = f"DROP INDEX {INDEX} ON procedure_runs"

INSERT_RUN = (
    "INSERT INTO procedure_runs (app_name, user_id, session_id, invocation_id, extractor, scope_user, scenario_id, "
    "path_hash, tool_path, outcome, outcome_source, iterations, tool_calls, request_hash, request_vector, counted, "
    "created_at, stored_at) VALUES (%s, %s, %s, %s, 'path:v1', '', %s, %s, %s, %s, 'state', 1, %s, %s, %s, 1, %s, %s)"
)
INSERT_SCENARIO = (
    "INSERT INTO procedure_scenarios (app_name, user_id, scenario_id, label, vector_sum, members, embedding_model, "
    "created_at, updated_at) VALUES (%s, '', %s, NULL, %s, %s, %s, %s, %s)"
)
INSERT_STATS = (
    "INSERT INTO procedure_stats (app_name, user_id, scenario_id, path_hash, tool_path, successes, failures, unknowns, "
    "iterations_sum, tool_calls_sum, tainted, last_seen, updated_at) VALUES (%s, '', %s, %s, %s, %s, %s, 0, %s, %s, 0, %s, %s)"
)


def _fill(conn, total: int, done: int, model: str, rng: np.random.Generator, t0: datetime) -> None:
    """Adds runs ``done .. total - 1`` (scenario ``i % SCENARIOS``, one minute apart), and the scenario / stats rows once."""
    centres = CENTRES
    with conn.cursor() as cur:
        if done == 0:
            cur.executemany(INSERT_SCENARIO, [
                (APP, f"s{s}", encode_vector(centres[s]), 1, model, t0, t0) for s in range(SCENARIOS)])
            cur.executemany(INSERT_STATS, [
                (APP, f"s{s}", path_hash(p), json.dumps([{"tool": t, "args": {}} for t in p]), 10, 5, 15, 15 * len(p), t0, t0)
                for s in range(SCENARIOS) for p in PATHS])
        batch = []
        for i in range(done, total):
            s = i % SCENARIOS
            vec = centres[s] + 0.3 * rng.normal(size=384).astype(np.float32) / np.sqrt(384)
            vec /= np.linalg.norm(vec)
            p = PATHS[i % len(PATHS)]
            at = t0 + timedelta(minutes=i)
            batch.append((APP, f"u{i % 997}", f"sess{i}", f"inv{i}", f"s{s}", path_hash(p),
                          json.dumps([{"tool": t, "args": {}} for t in p]), "success" if i % 3 else "failure",
                          len(p), hashlib.sha256(str(i).encode()).hexdigest(), encode_vector(vec), at, at))
            if len(batch) == 1000:
                cur.executemany(INSERT_RUN, batch)
                conn.commit()
                batch = []
        if batch:
            cur.executemany(INSERT_RUN, batch)
        conn.commit()


def _has_index(conn) -> bool:
    with conn.cursor() as cur:
        cur.execute("SHOW INDEX FROM procedure_runs")
        return any(r[2] == INDEX for r in cur.fetchall())


class CentreEmbedder:
    """Embeds ``"scenario N ..."`` near scenario N's centre, as a paraphrase of a stored task lands near its runs."""

    dim = 384
    model_name = HashEmbedder().model_name  # the model the stored runs are labelled with

    def __init__(self) -> None:
        self.rng = np.random.default_rng(7)

    def embed(self, texts):
        out = []
        for text in texts:
            words = text.split()
            s = int(words[1]) if len(words) > 1 and words[0] == "scenario" and words[1].isdigit() else 0
            v = CENTRES[s] + 0.3 * self.rng.normal(size=384).astype(np.float32) / np.sqrt(384)
            out.append(v / np.linalg.norm(v))
        return np.asarray(out, dtype=np.float32)


CENTRES = np.random.default_rng(0).normal(size=(SCENARIOS, 384)).astype(np.float32)
CENTRES /= np.linalg.norm(CENTRES, axis=1, keepdims=True)


async def _time(db: Database, store: ProcedureStore, recalls: int, rng: np.random.Generator, cold: bool) -> dict:
    """p50/p95 of ``recall_procedures`` (``cold``: a new store each time, so every vote vector is read, as before
    the vote cache) and of the vote's key read alone."""
    stmt = q.run_keys(APP, "", store.settings.neighbour_window, CentreEmbedder.model_name)
    recall_ms, read_ms = [], []
    for _ in range(recalls):
        query = f"scenario {int(rng.integers(SCENARIOS))} please"
        s = ProcedureStore(database=db, embedder=CentreEmbedder()) if cold else store
        t = time.perf_counter()
        hit = await s.recall_procedures(APP, query)
        recall_ms.append((time.perf_counter() - t) * 1000)
        assert hit.scenario_id == query.split()[1] or hit.scenario_id == f"s{query.split()[1]}", hit.scenario_id
        async with db.engine.connect() as conn:
            t = time.perf_counter()
            rows = (await conn.execute(stmt)).all()
            read_ms.append((time.perf_counter() - t) * 1000)
        assert rows, "the vote read found no runs"
    return {"recall_p50_ms": percentile(recall_ms, 50), "recall_p95_ms": percentile(recall_ms, 95),
            "key_read_p50_ms": percentile(read_ms, 50)}


PHASES = [("index", False), ("no index", False), ("index", True), ("no index", True)]
"""(index, cold): each timed in every round, the order rotating; ``cold`` reads every vote vector (as before 0022)."""


async def main(args: argparse.Namespace) -> None:
    import pymysql

    sizes = [int(x) for x in args.runs.split(",")]
    results: list[dict] = []
    with seekdb_or_url(args.url) as server:
        url = args.url or f"oceanbase://root@127.0.0.1:{server.port}/procscale"
        config = Config.from_url(url)
        if server is not None:
            ensure_database("127.0.0.1", server.port, "root", None, "procscale", fresh=True)
        db = Database(config)
        store = ProcedureStore(database=db, embedder=CentreEmbedder())
        await store.recall_procedures(APP, "scenario 0")  # creates the schema (auto_setup)
        raw = pymysql.connect(host=config.host, port=config.port, user=config.user, password=config.password or "",
                              database=config.database, autocommit=False)
        with raw.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
        rng = np.random.default_rng(args.seed)
        t0 = datetime(2026, 1, 1)
        done = 0
        try:
            for size in sizes:
                t = time.perf_counter()
                _fill(raw, size, done, CentreEmbedder.model_name, rng, t0)
                print(f"{size:,} runs stored ({size - done:,} new in {time.perf_counter() - t:.1f} s)", flush=True)
                done = size
                timed: dict[tuple[str, bool], list[dict]] = {p: [] for p in PHASES}
                for r in range(args.rounds):
                    for index, cold in PHASES[r % len(PHASES):] + PHASES[: r % len(PHASES)]:
                        with raw.cursor() as cur:
                            if index == "index" and not _has_index(raw):
                                cur.execute(CREATE_INDEX)
                            elif index == "no index" and _has_index(raw):
                                cur.execute(DROP_INDEX)
                        await _time(db, store, 3, rng, cold)  # settles plans and the warm store's cache
                        timed[(index, cold)].append(await _time(db, store, args.recalls, rng, cold))
                row: dict = {"runs": size, "load": os.getloadavg()[0]}
                for (index, cold), rounds in timed.items():
                    for key in rounds[0]:
                        row[f"{index}, {'cold' if cold else 'warm'}: {key}"] = float(np.median([x[key] for x in rounds]))
                before = row["no index, cold: recall_p50_ms"]
                row["recall p50, before (no index, cold) / now (index, warm)"] = before / row["index, warm: recall_p50_ms"]
                results.append(row)
                print(json.dumps(row, indent=1), flush=True)
        finally:
            with raw.cursor() as cur:
                if not _has_index(raw):
                    cur.execute(CREATE_INDEX)
            raw.close()
            await store.close()
            await db.close()
    env = environment(["pylibseekdb", "sqlalchemy", "aiomysql"])
    print_environment(env)
    if args.out:
        write_json(args.out, {"environment": env, "args": vars(args), "results": results})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="1000,10000,100000", help="scope sizes, ascending (runs are added)")
    ap.add_argument("--recalls", type=int, default=30, help="recalls timed per phase and round")
    ap.add_argument("--rounds", type=int, default=4, help="rounds, alternating which phase goes first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--url", default=None, help="a database URL; default: a throw-away seekdb server")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    asyncio.run(main(ap.parse_args()))
