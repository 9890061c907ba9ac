"""The packet of a LangGraph put on seekdb, four ways, on a bare aiomysql connection (issue 26, helper lgone).

What the server takes to answer each variant of a ``--text words`` put's
packet, on the real ``lg_checkpoints`` / ``lg_checkpoint_blobs`` tables (plus
revision 0023's ``delta_*`` columns), one process, the variants interleaved
step by step with the order rotating, a new checkpoint id per step:

- a: ``INSERT IGNORE blob; UPSERT checkpoint; COMMIT`` (autocommit 0): the put before revision 0023;
- b: ``UPSERT checkpoint`` with the blob's bytes in the row, on a connection kept in autocommit 1;
- c: ``SET autocommit=1; UPSERT; SET autocommit=0`` (autocommit 0): switching per call;
- d: ``UPSERT; COMMIT`` (autocommit 0).

Usage::

    python benchmarks/lg_put_packets.py --url oceanbase://root@127.0.0.1:PORT/ --reps 600
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

import aiomysql
import pymysql
from pymysql.constants import CLIENT

_SCHEMA = Path(__file__).resolve().parents[1] / "sql" / "oceanbase" / "schema.sql"


def _table(schema: str, name: str) -> str:
    found = re.search(rf"CREATE TABLE {name} \(.*?\) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;", schema, re.S)
    return re.sub(r"--[^\n]*", "", found.group(0))


def _variants(blob: str, ckpt: str) -> dict[str, tuple[bool, object]]:
    md = '{"source": "loop", "step": 12, "parents": {}, "run_id": "r1", "thread_id": "t"}'

    def blob_sql(th: str, i: int) -> str:
        return ("INSERT IGNORE INTO lg_checkpoint_blobs (app_name, thread_id, checkpoint_ns, channel, version, user_id, "
                f"value_type, payload) VALUES ('langgraph', '{th}', '', 'messages', '{i:032d}.0.1', 'u', "
                f"'zstd+append+msgpack', X'{blob}')")

    def cp_sql(th: str, i: int, wide: bool) -> str:
        cols = ", delta_channel, delta_version, delta_type, delta_payload" if wide else ""
        vals = f", 'messages', '{i:032d}.0.1', 'zstd+append+msgpack', X'{blob}'" if wide else ""
        upd = (", delta_channel = VALUES(delta_channel), delta_version = VALUES(delta_version), "
               "delta_type = VALUES(delta_type), delta_payload = VALUES(delta_payload)") if wide else ""
        return ("INSERT INTO lg_checkpoints (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                f"user_id, run_id, value_type, checkpoint, metadata{cols}) VALUES ('langgraph', '{th}', '', "
                f"'1f0{i:033d}', '1f0{i - 1:033d}', 'u', 'r1', 'msgpack', X'{ckpt}', '{md}'{vals}) ON DUPLICATE KEY "
                f"UPDATE value_type = VALUES(value_type), checkpoint = VALUES(checkpoint), metadata = VALUES(metadata){upd}")

    return {
        "a: INSERT blob; UPSERT; COMMIT": (False, lambda th, i: f"{blob_sql(th, i)};\n{cp_sql(th, i, False)};\nCOMMIT"),
        "b: UPSERT wide, autocommit 1": (True, lambda th, i: cp_sql(th, i, True)),
        "c: SET ac=1; UPSERT wide; SET ac=0": (False, lambda th, i: f"SET autocommit=1;\n{cp_sql(th, i, True)};\nSET autocommit=0"),
        "d: UPSERT wide; COMMIT": (False, lambda th, i: f"{cp_sql(th, i, True)};\nCOMMIT"),
    }


async def run(host: str, port: int, reps: int, db: str) -> None:
    conn = pymysql.connect(host=host, port=port, user="root", autocommit=True)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        schema = _SCHEMA.read_text()
        for name in ("lg_checkpoints", "lg_checkpoint_blobs"):
            cur.execute(_table(schema, name))
    conn.close()
    rnd = random.Random(26)  # ~the sizes of a words put: a 700-byte delta, a 350-byte checkpoint
    variants = _variants(rnd.randbytes(700).hex(), rnd.randbytes(350).hex())
    conns = {k: await aiomysql.connect(host=host, port=port, user="root", db=db, autocommit=ac,
                                       client_flag=CLIENT.MULTI_STATEMENTS) for k, (ac, _) in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    keys = list(variants)
    print(f"load average (1 min) at start {os.getloadavg()[0]:.2f}")
    for i in range(1, reps + 1):
        for k in keys[i % len(keys):] + keys[: i % len(keys)]:
            cur = await conns[k].cursor()
            text = variants[k][1](f"t{keys.index(k)}", i)
            t0 = time.perf_counter()
            await cur.execute(text)
            while await cur.nextset():
                pass
            times[k].append(time.perf_counter() - t0)
            await cur.close()
    base = times[keys[0]]
    for k in keys:
        paired = statistics.median(x / y for x, y in zip(times[k], base))
        print(f"{k:38s} p50 {statistics.median(times[k]) * 1e3:.3f} ms   paired / a {paired:.3f}")
    print(f"load average (1 min) at end {os.getloadavg()[0]:.2f}")
    for c in conns.values():
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True, help="a seekdb/OceanBase server: oceanbase://root@host:port/")
    ap.add_argument("--reps", type=int, default=600)
    ap.add_argument("--db", default="lg_put_packets", help="database created (dropped first) for the run")
    args = ap.parse_args()
    parts = urlsplit(args.url)
    asyncio.run(run(parts.hostname or "127.0.0.1", parts.port or 2881, args.reps, args.db))


if __name__ == "__main__":
    main()
