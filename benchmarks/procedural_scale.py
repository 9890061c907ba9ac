"""Recall of procedural memory at scale: a scope with 1k .. 100k stored runs, before and after revision 0022.

    git archive 7eca14c adk_oceanbase alembic | tar -x -C /tmp/old && mv /tmp/old/adk_oceanbase /tmp/old/adk_oceanbase_old
    cp alembic/versions/0022_*.py alembic/versions/0023_*.py /tmp/old/alembic/versions/  # revisions the old tree lacks
    python benchmarks/procedural_scale.py [--runs 1000,10000,100000] [--recalls 30] [--rounds 3] [--old /tmp/old]

``recall_procedures`` votes with the request vectors of the scope's newest
``neighbour_window`` (1,000) runs, then reads the voted scenario's newest
outcomes and counts.  Revision 0022 gave those reads indexes that answer
them alone (``ix_procedure_runs_recent``, a wider ``ix_procedure_runs_scenario``),
and the store now keeps the vectors it has read (``procedural.vote_cache``), so a
recall reads the runs' keys, not 2 kB of base64 each.  This script fills one
app scope with N runs over 200 scenarios (4 tool paths, unit request vectors
near their scenario's centre, labelled with the embedder's model as extraction
writes them) and times ``recall_procedures`` end to end, and the vote's key
read alone, in phases on the same server and data, alternating in rounds with
the order rotating: this tree's store on 0022's indexes (warm: its cache holds
the window, as in a running app) and, with ``--old``, an older tree's store
(the renamed package ``adk_oceanbase_old``, given this tree's 0022 revision file
so that it accepts the schema) on the indexes before 0022.  Read the ratios: the machine is shared.  The
embedder maps ``"scenario N ..."`` near scenario N's centre in microseconds, so
the time is the store's, not a model's.

A throw-away seekdb server is started unless ``--url`` names a database.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import json
import os
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

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
INDEXES_0022 = [
    "CREATE INDEX ix_procedure_runs_recent ON procedure_runs "
    "(app_name, scope_user, created_at, stored_at, counted, scenario_id, request_hash)",
    "CREATE INDEX ix_procedure_runs_scenario ON procedure_runs "
    "(app_name, scope_user, scenario_id, created_at, stored_at, counted, outcome, path_hash, iterations)",
]
INDEXES_BEFORE = ["CREATE INDEX ix_procedure_runs_scenario ON procedure_runs (app_name, scope_user, scenario_id, created_at)"]


def _use_indexes(conn, new: bool) -> None:
    """Puts the runs' recall indexes of revision 0022 (``new``) or of before it in place (nothing when they are)."""
    with conn.cursor() as cur:
        cur.execute("SHOW INDEX FROM procedure_runs")
        have = {r[2] for r in cur.fetchall()}
        if new == ("ix_procedure_runs_recent" in have):
            return
        for name in ("ix_procedure_runs_recent", "ix_procedure_runs_scenario"):
            if name in have:
                cur.execute(f"DROP INDEX {name} ON procedure_runs")
        for sql in INDEXES_0022 if new else INDEXES_BEFORE:
            cur.execute(sql)


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


async def _time(db: Any, store: Any, recalls: int, rng: np.random.Generator) -> dict:
    """p50/p95 of ``recall_procedures`` on ``store``, and of this tree's vote key read alone."""
    stmt = q.run_keys(APP, "", 1000, CentreEmbedder.model_name)
    recall_ms, read_ms = [], []
    for _ in range(recalls):
        s = int(rng.integers(SCENARIOS))
        t = time.perf_counter()
        hit = await store.recall_procedures(APP, f"scenario {s} please")
        recall_ms.append((time.perf_counter() - t) * 1000)
        assert hit.scenario_id == f"s{s}", (hit.scenario_id, s)
        async with db.engine.connect() as conn:
            t = time.perf_counter()
            rows = (await conn.execute(stmt)).all()
            read_ms.append((time.perf_counter() - t) * 1000)
        assert rows, "the vote read found no runs"
    return {"recall_p50_ms": percentile(recall_ms, 50), "recall_p95_ms": percentile(recall_ms, 95),
            "key_read_p50_ms": percentile(read_ms, 50)}


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
        phases: dict[str, tuple[bool, Any]] = {  # name: (0022 indexes?, store)
            "now, warm": (True, store),
        }
        closers = [store.close, db.close]
        if args.old:
            sys.path.insert(0, args.old)
            old_pkg = importlib.import_module("adk_oceanbase_old")
            old_db = old_pkg.Database(old_pkg.Config.from_url(url))
            old_store = importlib.import_module("adk_oceanbase_old.procedural").ProcedureStore(
                database=old_db, embedder=CentreEmbedder(), auto_setup=False)
            phases["before"] = (False, old_store)
            closers += [old_store.close, old_db.close]
        raw = pymysql.connect(host=config.host, port=config.port, user=config.user, password=config.password or "",
                              database=config.database, autocommit=False)
        with raw.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
        rng = np.random.default_rng(args.seed)
        done = 0
        try:
            for size in sizes:
                t = time.perf_counter()
                _fill(raw, size, done, CentreEmbedder.model_name, rng, datetime(2026, 1, 1))
                print(f"{size:,} runs stored ({size - done:,} new in {time.perf_counter() - t:.1f} s)", flush=True)
                done = size
                names = list(phases)
                timed: dict[str, list[dict]] = {name: [] for name in names}
                for r in range(args.rounds):
                    for name in names[r % len(names):] + names[: r % len(names)]:
                        new, one = phases[name]
                        _use_indexes(raw, new)
                        await _time(db, one, 3, rng)  # settles plans and the warm store's cache
                        timed[name].append(await _time(db, one, args.recalls, rng))
                row: dict = {"runs": size, "load": os.getloadavg()[0]}
                for name, rounds in timed.items():
                    for key in rounds[0]:
                        row[f"{name}: {key}"] = float(np.median([x[key] for x in rounds]))
                if "before" in timed:
                    row["recall p50 ratio, before / now"] = row["before: recall_p50_ms"] / row["now, warm: recall_p50_ms"]
                results.append(row)
                print(json.dumps(row, indent=1), flush=True)
        finally:
            _use_indexes(raw, True)
            raw.close()
            for close in closers:
                await close()
    env = environment(["pylibseekdb", "sqlalchemy", "aiomysql"])
    print_environment(env)
    if args.out:
        write_json(args.out, {"environment": env, "args": vars(args), "results": results})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="1000,10000,100000", help="scope sizes, ascending (runs are added)")
    ap.add_argument("--recalls", type=int, default=30, help="recalls timed per phase and round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, alternating which phase goes first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--old", help="folder holding adk_oceanbase_old (an older tree's package, renamed): the 'before' phase")
    ap.add_argument("--url", default=None, help="a database URL; default: a throw-away seekdb server")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    asyncio.run(main(ap.parse_args()))
