"""The data of ``--scale``: seeded memories, bulk-loaded as ready rows, then indexed and compacted as a settled database.

Used by ``_scale.py`` (the measurements), which sits above it.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from datetime import datetime, timedelta
from typing import Any, Sequence

import numpy as np
from sqlalchemy import text

from benchmarks._synthetic import PEOPLE

logger = logging.getLogger(__name__)

APP = "scale"
MODEL = "scale-synthetic-384"
DIM = 384
PER_USER = 100
_WORDS = (
    "garden coffee meeting flight doctor budget recipe guitar marathon invoice birthday museum laptop "
    "vacation apartment insurance concert deadline bicycle kitchen soccer novel podcast dentist"
).split()


def sentence(rng: random.Random, i: int) -> str:
    a, b, c = rng.sample(_WORDS, 3)
    return f"{rng.choice(PEOPLE)} talked about the {a} and the {b} near the {c} (note {i})."


class TextSource:
    """What the memories say: the synthetic sentences, or LoCoMo's turns (``--scale-text locomo``).

    The synthetic text is the full-text half's hard case: every query word is
    in ~12% of the memories, so a search sums ~25k postings at 100k rows.
    LoCoMo's ~5.9k turns, cycled to fill ``n`` rows (author = speaker, the
    turn's own time moved on 3 years per cycle), keep the share of memories
    each word occurs in that real conversations have, with LoCoMo's questions
    as the queries.  Vectors stay synthetic either way: the ANN half does not
    depend on the text.
    """

    def __init__(self, kind: str, seed: int, locomo: str | None = None) -> None:
        self.kind = kind
        self._rng = random.Random(seed)
        self._turns: list[tuple[str, str, datetime]] = []
        self._questions: list[str] = []
        if kind == "locomo":
            from benchmarks._locomo import load_locomo, turn_content

            if not locomo:
                raise SystemExit("--scale-text locomo needs --locomo PATH")
            convs, _ = load_locomo(locomo)
            self._turns = [(turn_content(t), t.speaker, t.time.replace(tzinfo=None)) for c in convs for t in c.turns]
            self._questions = sorted({q.question for c in convs for q in c.queries if q.category != 5})
        elif kind != "synthetic":
            raise SystemExit(f"--scale-text: synthetic or locomo, not {kind!r}")

    def row(self, i: int) -> tuple[str, str, datetime]:
        """Content, author and creation time of row ``i`` (called in row order)."""
        if self._turns:
            content, author, at = self._turns[i % len(self._turns)]
            return content, author, at + timedelta(days=3 * 365 * (i // len(self._turns)))
        return sentence(self._rng, i), "user", datetime(2024, 1, 1) + timedelta(minutes=i)

    def queries(self, nq: int, seed: int) -> list[str]:
        rng = random.Random(seed)
        if self._questions:
            return rng.sample(self._questions, nq)
        return [f"what did we say about the {a} and the {b}? ({j})"
                for j, (a, b) in enumerate(rng.sample(_WORDS, 2) for _ in range(nq))]


class LookupEmbedder:
    """Returns precomputed vectors for known texts: search latency without the model."""

    model_name = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def user_of(i: int, layout: str, n: int) -> str:
    return f"u{i % max(n // PER_USER, 1):05d}" if layout == "users" else "u00000"


def user_rows(i: int, layout: str, n: int) -> np.ndarray:
    """Row indexes belonging to the user of row ``i`` (the exact search's universe)."""
    if layout == "single":
        return np.arange(n)
    users = max(n // PER_USER, 1)
    return np.arange(i % users, n, users)


async def bulk_insert(db: Any, vecs: np.ndarray, layout: str, source: TextSource, batch: int = 500) -> float:
    """Multi-row INSERTs straight into agent_memories as ``ready`` rows (no embedding queue)."""
    from adk_oceanbase.memory.extraction import search_text
    from adk_oceanbase.memory.lexical import doc_terms

    n = len(vecs)
    cols = ("memory_id, app_name, user_id, content, search_text, content_hash, author, importance_score, access_count, "
            "created_at, updated_at, embedding, embedding_model, embedding_dim, embed_status, embed_attempts, extractor, "
            "term_count")
    row = "(%s,%s,%s,%s,%s,%s,%s,0.5,0,%s,%s,%s,%s,384,'ready',0,'bench',%s)"
    start = time.perf_counter()
    for lo in range(0, n, batch):
        args: list[Any] = []
        posts: list[Any] = []
        hi = min(n, lo + batch)
        for i in range(lo, hi):
            content, author, created = source.row(i)
            stext = search_text(author, created, content)
            terms = doc_terms(stext)
            args += [f"m{i:08d}", APP, user_of(i, layout, n), content, stext,
                     hashlib.sha256(f"{i} {content}".encode()).hexdigest(), author, created, created,
                     vec_text(vecs[i]), MODEL, sum(terms.values())]
            for term, tf in terms.items():
                posts += [APP, user_of(i, layout, n), term, f"m{i:08d}", tf, sum(terms.values())]
        async with db.engine.begin() as conn:
            await conn.exec_driver_sql(f"INSERT INTO agent_memories ({cols}) VALUES " + ",".join([row] * (hi - lo)),
                                       tuple(args))
            await conn.exec_driver_sql("INSERT INTO memory_terms (app_name, user_id, term, memory_id, tf, doc_len) VALUES "
                                       + ",".join(["(%s,%s,%s,%s,%s,%s)"] * (len(posts) // 6)), tuple(posts))
        if (lo // batch) % 40 == 0:
            logger.info("%s: inserted %d/%d", layout, hi, n)
    return time.perf_counter() - start


def loaded_rows(port: int, dbname: str) -> int:
    """Rows already loaded by an earlier run against the same ``--url`` (reused: loading 100k takes minutes)."""
    import pymysql

    try:
        conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database=dbname)
    except pymysql.MySQLError:
        return -1
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM agent_memories WHERE app_name = %s AND embed_status = 'ready'", (APP,))
            return int(cur.fetchone()[0])
    except pymysql.MySQLError:
        return -1
    finally:
        conn.close()


async def rebuild_index(conn: Any, res: dict[str, Any]) -> None:
    """Rebuilds our HNSW index in place; ``delta_rate_threshold`` 0 forces it."""
    start = time.perf_counter()
    await conn.execute(text("CALL DBMS_VECTOR.REBUILD_INDEX('ix_memories_embedding', 'agent_memories', 'embedding', 0)"))
    res["rebuild_seconds"] = time.perf_counter() - start


async def compact(conn: Any, res: dict[str, Any], timeout_s: float = 900.0) -> None:
    """A major compaction, waited for: the measured rows are read from SSTables, as in a database that has run
    a while, not from the memtable the bulk load left them in (range scans there were ~3x slower: the
    postings-only BM25 of 100k rows took 21 ms before, 6 ms after)."""
    start = time.perf_counter()
    before = (await conn.execute(text("SELECT LAST_FINISH_TIME FROM oceanbase.DBA_OB_MAJOR_COMPACTION"))).scalar()
    await conn.execute(text("ALTER SYSTEM MAJOR FREEZE"))
    while time.perf_counter() - start < timeout_s:
        time.sleep(2)
        status, finished = (await conn.execute(text(
            "SELECT STATUS, LAST_FINISH_TIME FROM oceanbase.DBA_OB_MAJOR_COMPACTION"))).one()
        if status == "IDLE" and finished != before:
            break
    res["compaction_seconds"] = time.perf_counter() - start
