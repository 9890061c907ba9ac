"""Agno databases side by side (issue 28): ours vs Agno's ``MySQLDb`` on the same seekdb server, and ``SqliteDb``.

Timed per system, the calls an Agno ``Agent`` makes on every turn, through
Agno's synchronous ``BaseDb`` API (what ``Agent.run`` calls; ours is
``OceanBaseAgnoDb``, which runs the async implementation on its own loop):

* ``upsert_session`` of a session that has 10 or 200 runs (the runs are
  stored before timing with ``upsert_run``; in Agno 3.1 ``upsert_session``
  writes the session row only) and ``get_session`` of it (the full runs);
* ``upsert_run`` (one new run appended to a session);
* (``ours`` is ``OceanBaseAgnoDb``; ``ours_async`` the same database as
  ``AsyncOceanBaseAgnoDb`` awaited on the caller's own loop, as ``Agent.arun``
  uses it: the difference is the sync facade's hop to its loop thread);
* loading ``--memories`` memories of one user with ``upsert_memories`` by
  500 (the call the caller waits for; batches interleaved across systems),
  then, for ours, the time until every vector and posting is stored (``flush``);
* memory search at that size: ``get_user_memories(user_id=,
  search_content=, limit=10)`` (the call timed here before) and AgentOS's
  memory page (the same with ``sort_by="updated_at"``, a page of 20 and the
  total, ``deserialize=False``): a case-insensitive substring on every
  system (Agno's contract); and ours' relevance search,
  ``search_user_memories`` (the hybrid retrieval: BM25 over the user's
  postings + vector + recency ...), which Agno's databases do not have.
  The query words are drawn from the memories, so all find something.

Ours and ``MySQLDb`` each get a database of their own on one seekdb server
started here (or ``--url``, a MySQL-protocol server: ``root@host:port``);
``SqliteDb`` a temporary file.  Ours embeds with ``HashEmbedder`` unless
``--embedder minilm`` (a query is then embedded on every search).  All
systems are loaded with the same seeded data first; then each operation is
timed sample by sample on every system in turn, the order rotating, so a
load change on a shared machine hits all of them alike.

Usage::

    python benchmarks/agno_db.py [--sessions 20] [--repeats 60] [--memories 10000] [--embedder hash|minilm]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import ensure_database, environment, print_environment, seekdb_or_url, summarize, write_json  # noqa: E402

WORDS = ("tea coffee lisbon porto denver sister brother cello piano hospital school bicycle train garden cat dog "
         "marathon novel jazz chess pasta sushi museum beach mountain river violin soccer tennis yoga painting").split()


def make_run(rng: random.Random, sid: str, i: int) -> Any:
    from agno.models.message import Message
    from agno.run.agent import RunOutput
    from agno.run.base import RunStatus

    said = " ".join(rng.choice(WORDS) for _ in range(40))
    return RunOutput(run_id=f"{sid}-r{i}", session_id=sid, agent_id="bench", user_id="u1", content=said,
                     status=RunStatus.completed, created_at=int(time.time()),
                     messages=[Message(role="user", content=said), Message(role="assistant", content=said[::-1])])


def make_session(sid: str, runs: list[Any]) -> Any:
    from agno.session import AgentSession

    return AgentSession(session_id=sid, agent_id="bench", user_id="u1", session_data={"session_state": {"n": 0}},
                        runs=runs, created_at=int(time.time()))


def setup_sessions(db: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Stores the sessions (10 and 200 runs each); returns what the timing needs."""
    rng = random.Random(7)  # the same data for every system
    state: dict[str, Any] = {"db": db, "sessions": {}}
    for size in (10, 200):
        state["sessions"][size] = []
        for k in range(args.sessions):
            sid = f"{size}-{k}"
            runs = [make_run(rng, sid, i) for i in range(size)]
            db.upsert_session(make_session(sid, []))
            for i, r in enumerate(runs):
                db.upsert_run(r, session_id=sid, user_id="u1", run_index=i)
            state["sessions"][size].append(make_session(sid, runs))
    state["next_run"] = 1000
    return state


def memory_batches(args: argparse.Namespace) -> list[list[Any]]:
    """The searched user's memories in ``upsert_memories`` batches of 500 (the same for every system)."""
    from agno.db.schemas.memory import UserMemory

    rng = random.Random(8)
    texts = [" ".join(rng.choice(WORDS) for _ in range(12)) + f" (note {i})" for i in range(args.memories)]
    topics = [rng.choice(WORDS) for _ in range(args.memories)]
    return [[UserMemory(memory_id=f"m{i}", memory=texts[i], user_id="mu", topics=[topics[i]])
             for i in range(k, min(k + 500, args.memories))] for k in range(0, args.memories, 500)]


def load_memories(states: dict[str, dict[str, Any]], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``upsert_memories`` batch by batch on every system in turn (the order rotating), timed per call.

    What a caller waits for is the call: ours returns once the rows are
    committed (found by ``search_content`` at once) and indexes and embeds
    them in the background.  Then, for ours, the time until the vectorizer
    has stored every posting and vector (``flush``): when both halves of
    ``search_user_memories`` see all of them.
    """
    batches = [memory_batches(args) for _ in states]  # fresh objects per system: Agno sets ids on them
    names = list(states)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for n in range(len(batches[0])):
        for name in names[n % len(names):] + names[:n % len(names)]:
            batch = batches[names.index(name)][n]
            t0 = time.perf_counter()
            states[name]["db"].upsert_memories(batch)
            samples[name].append(time.perf_counter() - t0)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        out[name] = {"load_memories_s": sum(samples[name]), "upsert_memories_500": summarize(samples[name])}
    for name in names:
        db = states[name]["db"]
        if hasattr(db, "memory_service"):
            t0 = time.perf_counter()
            db.call(db.memory_service.flush())
            out[name]["embedded_after_load_s"] = time.perf_counter() - t0
    print("upsert_memories_500", {n: round(out[n]["upsert_memories_500"]["p50_ms"], 1) for n in names},
          {n: round(out[n].get("embedded_after_load_s", 0), 1) for n in names}, flush=True)
    return out


def operations(size_rng: random.Random) -> dict[str, Callable[[dict[str, Any], Any], Callable[[], Any]]]:
    """Per operation, given a system's state and the sample's shared choice, the call to time."""
    from agno.db.base import SessionType

    def upsert(size: int) -> Callable[[dict[str, Any], Any], Callable[[], Any]]:
        def make(st: dict[str, Any], pick: Any) -> Callable[[], Any]:
            s = st["sessions"][size][pick[0] % len(st["sessions"][size])]
            s.session_data = {"session_state": {"n": pick[1]}}
            return lambda: st["db"].upsert_session(s)
        return make

    def get(size: int) -> Callable[[dict[str, Any], Any], Callable[[], Any]]:
        def make(st: dict[str, Any], pick: Any) -> Callable[[], Any]:
            sid = st["sessions"][size][pick[0] % len(st["sessions"][size])].session_id

            def call() -> None:
                got = st["db"].get_session(sid, SessionType.AGENT)
                assert got is not None and len(got.runs) == size
            return call
        return make

    def append_run(st: dict[str, Any], pick: Any) -> Callable[[], Any]:
        i = st["next_run"] = st["next_run"] + 1
        run = make_run(random.Random(i), "10-0", i)
        return lambda: st["db"].upsert_run(run, session_id="10-0", user_id="u1", run_index=i)

    def search(st: dict[str, Any], pick: Any) -> Callable[[], Any]:
        query = " ".join(random.Random(pick[0]).sample(WORDS, 2))
        return lambda: st["db"].get_user_memories(user_id="mu", search_content=query, limit=10)

    def search_page(st: dict[str, Any], pick: Any) -> Callable[[], Any]:
        """AgentOS's memory page: the search box, newest first, a page of 20 and the total for the pager."""
        query = random.Random(pick[0]).choice(WORDS)
        return lambda: st["db"].get_user_memories(user_id="mu", search_content=query, limit=20, page=1,
                                                  sort_by="updated_at", sort_order="desc", deserialize=False)

    def relevance(st: dict[str, Any], pick: Any) -> Callable[[], Any] | None:
        if not hasattr(st["db"], "search_user_memories"):
            return None  # Agno's databases have no relevance search (its MemoryManager asks a model)
        query = " ".join(random.Random(pick[0]).sample(WORDS, 2))
        return lambda: st["db"].search_user_memories(query, user_id="mu", limit=10)

    return {"upsert_session_10": upsert(10), "get_session_10": get(10), "upsert_session_200": upsert(200),
            "get_session_200": get(200), "upsert_run": append_run, "memory_search": search,
            "memory_search_page": search_page, "search_user_memories": relevance}


def time_interleaved(states: dict[str, dict[str, Any]], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each operation, sample by sample, on every system in turn (the order rotating), so load drifts hit all alike."""
    rng = random.Random(11)
    out: dict[str, dict[str, Any]] = {name: {} for name in states}
    for op, make in operations(rng).items():
        samples: dict[str, list[float]] = {name: [] for name in states}
        names = list(states)
        for n in range(args.repeats + 3):
            pick = (rng.randrange(10**6), rng.random())
            order = names[n % len(names):] + names[:n % len(names)]
            for name in order:
                call = make(states[name], pick)
                if call is None:
                    continue
                t0 = time.perf_counter()
                call()
                if n >= 3:  # warm-up
                    samples[name].append(time.perf_counter() - t0)
        for name in states:
            if samples[name]:
                out[name][op] = summarize(samples[name])
        print(op, {name: round(out[name][op]["p50_ms"], 2) for name in states if op in out[name]}, flush=True)
    return out


class OnThisLoop:
    """``AsyncOceanBaseAgnoDb`` driven from this thread's own event loop: ours without the sync facade's thread hop."""

    def __init__(self, db: Any):
        import asyncio

        self.aio, self.loop = db, asyncio.new_event_loop()
        self.memory_service = db.memory_service

    def call(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.aio, name)
        return lambda *a, **k: self.loop.run_until_complete(method(*a, **k))

    def close(self) -> None:
        self.loop.run_until_complete(self.aio.aclose())
        self.loop.close()


def open_system(name: str, host: str, port: int, tmp: str, args: argparse.Namespace) -> Any:
    if name == "ours_async":
        from adk_oceanbase.agno import AsyncOceanBaseAgnoDb
        from adk_oceanbase.memory import HashEmbedder, MemorySettings, default_embedder

        ensure_database(host, port, "root", None, "agno_bench_ours_async", fresh=True)
        embedder = HashEmbedder() if args.embedder == "hash" else default_embedder()
        return OnThisLoop(AsyncOceanBaseAgnoDb(f"oceanbase://root@{host}:{port}/agno_bench_ours_async",
                                               embedder=embedder, memory_settings=MemorySettings(bump_access=False, batch_size=256)))
    if name == "ours":
        from adk_oceanbase.agno import OceanBaseAgnoDb
        from adk_oceanbase.memory import HashEmbedder, MemorySettings, default_embedder

        ensure_database(host, port, "root", None, "agno_bench_ours", fresh=True)
        embedder = HashEmbedder() if args.embedder == "hash" else default_embedder()
        return OceanBaseAgnoDb(f"oceanbase://root@{host}:{port}/agno_bench_ours", embedder=embedder,
                               memory_settings=MemorySettings(bump_access=False, batch_size=256))
    if name == "mysqldb":
        from agno.db.mysql import MySQLDb

        ensure_database(host, port, "root", None, "agno_bench_mysql", fresh=True)
        return MySQLDb(db_url=f"mysql+pymysql://root@{host}:{port}/agno_bench_mysql", db_schema="agno_bench_mysql")
    from agno.db.sqlite import SqliteDb

    return SqliteDb(db_file=os.path.join(tmp, "agno.db"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="sessions per size (10 and 200 runs)")
    parser.add_argument("--repeats", type=int, default=60, help="timed calls per operation")
    parser.add_argument("--memories", type=int, default=10_000, help="memories of the searched user")
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--url", default=None, help="root@host:port of a running MySQL-protocol server (default: start seekdb)")
    parser.add_argument("--only", default=None, help="comma-separated systems: ours,ours_async,mysqldb,sqlite")
    parser.add_argument("--out", default=str(HERE / "results" / f"agno_db-{time.strftime('%Y-%m-%d')}.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    env = environment(["agno", "sqlalchemy", "pymysql", "aiomysql", "pylibseekdb"], extra=vars(args))
    print_environment(env)
    wanted = set((args.only or "ours,ours_async,mysqldb,sqlite").split(","))
    results: dict[str, Any] = {}
    with seekdb_or_url(args.url) as server:
        host, port = ("127.0.0.1", server.port) if server else (args.url.split("@")[1].split(":")[0], int(args.url.rsplit(":", 1)[1]))
        tmp = tempfile.mkdtemp(prefix="agno-bench-")
        states: dict[str, dict[str, Any]] = {}
        opened: list[Any] = []
        for name in ("ours", "ours_async", "mysqldb", "sqlite"):
            if name not in wanted:
                continue
            try:
                db = open_system(name, host, port, tmp, args)
                opened.append(db)
                t0 = time.perf_counter()
                states[name] = setup_sessions(db, args)
                results[name] = {"setup_sessions_s": time.perf_counter() - t0}
            except Exception as exc:  # noqa: BLE001 - record why a system could not run, keep the others
                results[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000], "traceback": traceback.format_exc()[-4000:]}
                print(f"{name}: FAILED {results[name]['error']}", flush=True)
        try:
            for name, loaded in load_memories(states, args).items():
                results[name].update(loaded)
            for name, timings in time_interleaved(states, args).items():
                results[name].update(timings)
        finally:
            for db in opened:
                try:
                    db.close()
                except Exception:  # noqa: BLE001
                    pass
    ops = ("upsert_session_10", "get_session_10", "upsert_session_200", "get_session_200", "upsert_run", "memory_search",
           "memory_search_page", "search_user_memories", "upsert_memories_500")
    print("\n| operation | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for op in ops:
        cells = []
        for r in results.values():
            s = r.get(op)
            cells.append("n/a" if not s else f"{s['p50_ms']:.2f} / {s['p95_ms']:.2f}")
        print(f"| {op} (p50 / p95 ms) | " + " | ".join(cells) + " |")
    for key in ("load_memories_s", "embedded_after_load_s"):
        print(f"| {key} | " + " | ".join(f"{r[key]:.1f}" if key in r else "n/a" for r in results.values()) + " |")
    write_json(args.out, {"environment": env, "results": results})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
