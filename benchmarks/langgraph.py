"""LangGraph checkpointer and Store benchmark: OceanBaseSaver vs langgraph-checkpoint-mysql, -oceanbase and -sqlite.

Every saver runs in one process and one run, against the SAME seekdb server
(the SQLite saver on a local file), each in a fresh database, phase by phase
with samples interleaved (the order alternating), on the same seeded
checkpoints.  Measured (issue 26):

* ``put`` and ``get_tuple`` p50/p95: a thread whose checkpoints carry a
  growing message list and two small channels, one changed per step;
* ``alist`` of 1,000 checkpoints of one thread;
* a 200-step ``StateGraph`` run appending one message per step (total time);
* storage per checkpoint after that run (bytes of checkpoint + blob + write
  payloads in the saver's tables, divided by its checkpoints);
* ``OceanBaseStore.asearch`` p50/p95 with a query, at ``--store-items`` items
  (the memory service's hybrid search; a hashing embedder so the number is
  the database's, not a model's).

A peer that cannot run on seekdb is reported with the error it raised (as
``benchmarks/sessions.py`` reports ADK's service), never silently dropped.

Usage::

    python benchmarks/langgraph.py                     # starts its own seekdb server
    python benchmarks/langgraph.py --quick             # small sizes (~1 min)
    python benchmarks/langgraph.py --url oceanbase://root@127.0.0.1:2881/ --store-items 100000

The file is called ``langgraph.py`` as the issue asks; it takes its own folder
off the front of ``sys.path`` so ``import langgraph`` finds the library, not itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
# langgraph is a namespace package, which any module called langgraph.py on sys.path beats:
# import it with this folder off the path, then put the folder back for _common.
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(_HERE)]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase
import langgraph.checkpoint.base  # noqa: E402,F401
import langgraph.graph  # noqa: E402,F401

sys.path.append(_HERE)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import operator  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Annotated, Any, Callable, TypedDict  # noqa: E402

from _common import ensure_database, environment, print_environment, seekdb_or_url, server_address, summarize, write_json  # noqa: E402
from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

PACKAGES = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-mysql", "langgraph-checkpoint-oceanbase",
            "langgraph-checkpoint-sqlite", "adk-oceanbase"]


# =========================================================================== savers
async def open_ours(host: str, port: int, db: str) -> tuple[Any, Callable]:
    from adk_oceanbase.langgraph import OceanBaseSaver

    ensure_database(host, port, "root", None, db, fresh=True)
    saver = OceanBaseSaver(f"oceanbase://root@{host}:{port}/{db}")
    await saver.setup()
    return saver, saver.aclose


async def open_peer(module: str, host: str, port: int, db: str) -> tuple[Any, Callable]:
    import importlib

    ensure_database(host, port, "root", None, db, fresh=True)
    cls = importlib.import_module(module).AIOMySQLSaver
    cm = cls.from_conn_string(f"mysql://root@{host}:{port}/{db}")
    saver = await cm.__aenter__()
    await saver.setup()
    return saver, lambda: cm.__aexit__(None, None, None)


async def open_sqlite(path: str) -> tuple[Any, Callable]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    cm = AsyncSqliteSaver.from_conn_string(path)
    saver = await cm.__aenter__()
    await saver.setup()
    return saver, lambda: cm.__aexit__(None, None, None)


# =========================================================================== workloads
TEXT = {"mode": "filler"}
"""``--text``: ``filler`` (the default, as every earlier run: dicts of "x" repeated, which compress ~15x),
``words`` (dicts of words drawn from a 5,000-word vocabulary of random letters: ~2.1x with zstd, less
than prose) or ``messages`` (those words in LangChain ``HumanMessage`` / ``AIMessage`` objects, the
way an ``add_messages`` state is stored: 66 kB at 200 messages, ~3.3x)."""
_VOCAB = ["".join(random.Random(w).choices("abcdefghijklmnopqrstuvwxyz", k=random.Random(-w).randint(2, 10)))
          for w in range(5000)]


HISTORY = {"mode": "append"}
"""``--history``: ``append`` (the default: checkpoint ``n``'s list is checkpoint ``n - 1``'s plus one message, as
an ``add_messages`` / ``operator.add`` state grows) or ``redraw`` (every message drawn again each step from a seed
of ``n``: what runs before 2026-11-28 measured; no graph's state changes that way)."""


def messages(n: int) -> list[dict[str, str]]:
    rngs = [random.Random(n)] * n if HISTORY["mode"] == "redraw" else [random.Random(i) for i in range(n)]
    if TEXT["mode"] == "words":
        return [{"role": "user" if i % 2 else "assistant",
                 "content": f"message {i} " + " ".join(rng.choices(_VOCAB, k=rng.randint(8, 35)))}
                for i, rng in enumerate(rngs)]
    if TEXT["mode"] == "messages":
        from langchain_core.messages import AIMessage, HumanMessage

        return [(HumanMessage if i % 2 else AIMessage)(  # type: ignore[misc]
            content=f"message {i} " + " ".join(rng.choices(_VOCAB, k=rng.randint(8, 35))),
            id=f"msg-{n}-{i}" if HISTORY["mode"] == "redraw" else f"msg-{i}")
            for i, rng in enumerate(rngs)]
    return [{"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "x" * rng.randint(40, 200)}
            for i, rng in enumerate(rngs)]


def step_checkpoint(saver: Any, prev: dict | None, i: int) -> tuple[dict, dict]:
    """Checkpoint ``i`` of a thread: the message list grows every step, one of two small channels changes."""
    cp = empty_checkpoint()
    versions = dict(prev["channel_versions"]) if prev else {}
    changed = {"messages": saver.get_next_version(versions.get("messages"), None)}
    small = "a" if i % 2 else "b"
    changed[small] = saver.get_next_version(versions.get(small), None)
    versions.update(changed)
    cp["channel_versions"] = versions
    cp["channel_values"] = {"messages": messages(i + 1), "a": i, "b": f"b{i}"}
    return cp, changed


async def hot_step(saver: Any, config: dict, prev: dict | None, i: int, lat: dict[str, list[float]]) -> tuple[dict, dict]:
    """Step ``i`` of the hot thread: a timed put, then a timed get_tuple of the thread's latest (checked).

    Appends the seconds to ``lat["put"]`` and ``lat["get_tuple"]``; returns the put's config and the checkpoint.
    """
    cp, changed = step_checkpoint(saver, prev, i)
    t0 = time.perf_counter()
    config = await saver.aput(config, cp, {"source": "loop", "step": i, "parents": {}}, changed)
    t1 = time.perf_counter()
    got = await saver.aget_tuple({"configurable": {"thread_id": "hot", "checkpoint_ns": ""}})
    t2 = time.perf_counter()
    assert got is not None and len(got.checkpoint["channel_values"]["messages"]) == i + 1
    lat["put"].append(t1 - t0)
    lat["get_tuple"].append(t2 - t1)
    return config, cp


async def put_thread(saver: Any, thread: str, n: int, timings: list[float] | None = None) -> dict:
    config: dict = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    prev = None
    for i in range(n):
        cp, changed = step_checkpoint(saver, prev, i)
        t0 = time.perf_counter()
        config = await saver.aput(config, cp, {"source": "loop", "step": i, "parents": {}}, changed)
        if timings is not None:
            timings.append(time.perf_counter() - t0)
        prev = cp
    return config


class State(TypedDict):
    messages: Annotated[list[dict], operator.add]
    n: int


def graph(steps: int):
    def talk(state: State) -> dict:
        return {"messages": [{"role": "assistant", "content": f"step {state['n']} " + "y" * 120}], "n": state["n"] + 1}

    builder = StateGraph(State)
    builder.add_node("talk", talk)
    builder.add_edge(START, "talk")
    builder.add_conditional_edges("talk", lambda s: END if s["n"] >= steps else "talk")
    return builder


# =========================================================================== storage
async def storage_bytes(name: str, saver: Any, thread: str) -> tuple[int, int] | None:
    """(payload bytes, checkpoints) of ``thread`` in the saver's own tables."""
    if name == "ours":
        from sqlalchemy import text

        async with saver.database.engine.connect() as conn:
            row = (await conn.execute(text(
                "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata) + COALESCE(LENGTH(delta_payload), 0)), 0)"
                " FROM lg_checkpoints WHERE thread_id = :t)"
                " + (SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM lg_checkpoint_blobs WHERE thread_id = :t)"
                " + (SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM lg_checkpoint_writes WHERE thread_id = :t),"
                " (SELECT COUNT(*) FROM lg_checkpoints WHERE thread_id = :t)"), {"t": thread})).one()
        return int(row[0]), int(row[1])
    if name == "sqlite":
        async with saver.conn.execute(
            "SELECT (SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints WHERE thread_id = ?) + "
            "(SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes WHERE thread_id = ?), "
            "(SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?)", (thread, thread, thread)) as cur:
            row = await cur.fetchone()
        return int(row[0]), int(row[1])
    async with saver._cursor() as cur:  # the peers' own I/O door (aiomysql DictCursor)
        await cur.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints WHERE thread_id = %s)"
            " + (SELECT COALESCE(SUM(LENGTH(`blob`)), 0) FROM checkpoint_blobs WHERE thread_id = %s)"
            " + (SELECT COALESCE(SUM(LENGTH(`blob`)), 0) FROM checkpoint_writes WHERE thread_id = %s) AS b,"
            " (SELECT COUNT(*) FROM checkpoints WHERE thread_id = %s) AS n", (thread,) * 4)
        row = await cur.fetchone()
    return int(row["b"]), int(row["n"])


# =========================================================================== phases
async def run_savers(host: str, port: int, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    systems: dict[str, tuple[Any, Callable]] = {}
    openers = {
        "ours": lambda: open_ours(host, port, "lgb_ours"),
        "mysql": lambda: open_peer("langgraph.checkpoint.mysql.aio", host, port, "lgb_mysql"),
        "oceanbase": lambda: open_peer("langgraph.checkpoint.oceanbase.aio", host, port, "lgb_oceanbase"),
        "sqlite": lambda: open_sqlite(str(Path(tempfile.mkdtemp(prefix="lgb-")) / "cp.sqlite")),
    }
    for name, opener in openers.items():
        try:
            systems[name] = await opener()
            # a first put/get: a peer that sets up but cannot write on this engine fails here
            cfg = await put_thread(systems[name][0], "probe", 2)
            assert (await systems[name][0].aget_tuple(cfg)) is not None
        except Exception as exc:  # recorded, not hidden: the reason a peer cannot run here
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
            print(f"!! {name} cannot run: {out[name]['error']}")
            traceback.print_exc(limit=2)
            systems.pop(name, None)
    names = list(systems)
    lat: dict[str, dict[str, list[float]]] = {n: {"put": [], "get_tuple": []} for n in names}
    prev: dict[str, Any] = {n: None for n in names}
    configs: dict[str, dict] = {n: {"configurable": {"thread_id": "hot", "checkpoint_ns": ""}} for n in names}
    for i in range(args.puts):  # put, then get_tuple of the thread's latest, interleaved across systems
        for name in names if i % 2 == 0 else names[::-1]:
            configs[name], prev[name] = await hot_step(systems[name][0], configs[name], prev[name], i, lat[name])
    for name in names:
        out[name] = {"put": summarize(lat[name]["put"]), "get_tuple": summarize(lat[name]["get_tuple"])}
    # alist of N checkpoints (small ones: the cost is the listing)
    for name in names:
        saver = systems[name][0]
        config: dict = {"configurable": {"thread_id": "list", "checkpoint_ns": ""}}
        for i in range(args.list_size):
            cp = empty_checkpoint()
            config = await saver.aput(config, cp, {"source": "loop", "step": i, "parents": {}}, {})
    samples: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(args.list_reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            got = [t async for t in systems[name][0].alist({"configurable": {"thread_id": "list"}})]
            samples[name].append(time.perf_counter() - t0)
            assert len(got) == args.list_size, (name, len(got))
    for name in names:
        out[name][f"alist_{args.list_size}"] = summarize(samples[name])
    # StateGraph runs of N steps with a growing message list (--graph-reps per saver, order
    # alternating, median: one run each swung 0.6x-1.3x between runs on a loaded machine),
    # then storage per checkpoint of the first run's thread
    runs: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(args.graph_reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            app = graph(args.graph_steps).compile(checkpointer=systems[name][0])
            cfg = {"configurable": {"thread_id": f"graph{rep or ''}"}, "recursion_limit": args.graph_steps * 2 + 10}
            t0 = time.perf_counter()
            result = await app.ainvoke({"messages": [], "n": 0}, cfg)
            runs[name].append(time.perf_counter() - t0)
            assert len(result["messages"]) == args.graph_steps
    for name in names:
        saver = systems[name][0]
        out[name][f"graph_{args.graph_steps}_steps_s"] = statistics.median(runs[name])
        out[name][f"graph_{args.graph_steps}_steps_runs_s"] = runs[name]
        size = await storage_bytes(name, saver, "graph")
        if size:
            out[name]["bytes_per_checkpoint"] = size[0] / max(size[1], 1)
            out[name]["checkpoints"] = size[1]
    for name, (_, close) in systems.items():
        await close()
    return out


async def run_store(host: str, port: int, items: int, queries: int, *, seed: int = 26, db: str = "lgb_store",
                    reuse: bool = False, rebuild: bool = False) -> dict[str, Any]:
    """Loads ``items`` items (or reuses ``db`` as a previous run left it), then times ``queries`` searches.

    ``seed`` draws both the items' text and the queries: tune on one seed or size, report on another.
    ``reuse`` skips the load when ``db`` already holds ``items`` items (an earlier run's, kept): the search can be re-measured after a code change without the minutes of load.
    """
    from adk_oceanbase.langgraph import OceanBaseStore
    from adk_oceanbase.memory import HashEmbedder

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rng.choices(words, k=12)) for _ in range(items)]
    loaded = reuse and _store_rows(host, port, db) == items
    if not loaded:
        ensure_database(host, port, "root", None, db, fresh=True)
    hasher = HashEmbedder()
    store = OceanBaseStore(f"oceanbase://root@{host}:{port}/{db}",
                           index={"dims": 384, "embed": lambda texts: hasher.embed(texts).tolist(), "fields": ["text"]})
    res: dict[str, Any] = {"items": items, "seed": seed, "db": db, "reused": loaded, "load_avg_before": os.getloadavg()}
    if not loaded:
        from langgraph.store.base import PutOp

        t0 = time.perf_counter()
        batch = 1000
        for start in range(0, items, batch):
            ops = [PutOp(("docs",), f"d{i}", {"text": texts[i]}) for i in range(start, min(items, start + batch))]
            await store.abatch(ops)
        res["load_s"] = time.perf_counter() - t0
        res["load_avg_after_load"] = os.getloadavg()
    qrng = random.Random(seed * 1000 + 1)

    async def searches(n: int = queries) -> dict[str, Any]:
        lat = []
        for i in range(n):
            q = " ".join(qrng.choices(words, k=4))
            t1 = time.perf_counter()
            hits = await store.asearch(("docs",), query=q, limit=10)
            lat.append(time.perf_counter() - t1)
            assert hits
        return summarize(lat)

    if not loaded:
        res["search_after_load"] = await searches()
    elif rebuild:  # the same run's "before": as the database was left (30 queries, for time)
        res["search_before_rebuild"] = await searches(min(queries, 30))
    if not loaded or rebuild:
        # What the memory service documents after a bulk load: rebuild the HNSW index and gather the
        # optimizer statistics (without them the ANN search is planned as an exact scan).  It waits
        # for the vectorizer's own upkeep rebuild first (4179 before it did, seen at 30k).
        t0 = time.perf_counter()
        try:
            res["rebuilt"] = await store.memory.rebuild_vector_index()
        except Exception as exc:  # recorded, never hidden
            res["rebuild_error"] = f"{type(exc).__name__}: {exc}"[:300]
        res["rebuild_s"] = time.perf_counter() - t0
    await searches()  # untimed pass: the plan cache and the index's pages, as a running service has them
    res["search"] = await searches()
    res["load_avg_after_search"] = os.getloadavg()
    await store.aclose()
    return res


def _store_rows(host: str, port: int, db: str) -> int:
    """Items in ``db``'s store (0 when it does not exist)."""
    import pymysql

    try:
        conn = pymysql.connect(host=host, port=port, user="root", database=db)
    except pymysql.MySQLError:
        return 0
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM lg_store_items")
            return int(cur.fetchone()[0])
    except pymysql.MySQLError:
        return 0
    finally:
        conn.close()


def print_table(res: dict[str, Any], args: argparse.Namespace) -> None:
    savers = {k: v for k, v in res["savers"].items()}
    ok = [n for n, v in savers.items() if "error" not in v]
    if not savers:
        ok = []
    rows = [("put p50 ms", "put", "p50_ms"), ("put p95 ms", "put", "p95_ms"),
            ("get_tuple p50 ms", "get_tuple", "p50_ms"), ("get_tuple p95 ms", "get_tuple", "p95_ms"),
            (f"alist {args.list_size} p50 ms", f"alist_{args.list_size}", "p50_ms")]
    if ok:
        _saver_table(savers, ok, rows, args)
    for n, v in savers.items():
        if "error" in v:
            print(f"- {n}: cannot run: {v['error']}")
    if res.get("store"):
        s = res["store"]
        print(f"\nStore search at {s['items']:,} items (seed {s['seed']}): p50 {s['search']['p50_ms']:.1f} ms, "
              f"p95 {s['search']['p95_ms']:.1f} ms, load average {s['load_avg_after_search']}")
        if not s["reused"]:
            a = s["search_after_load"]
            print(f"  straight after the load p50 {a['p50_ms']:.1f} ms, p95 {a['p95_ms']:.1f} ms (load {s['load_s']:.0f} s, "
                  f"{s['load_s'] / s['items'] * 1000:.1f} ms/item)")
        if "search_before_rebuild" in s:
            b = s["search_before_rebuild"]
            print(f"  before rebuild_vector_index p50 {b['p50_ms']:.1f} ms, p95 {b['p95_ms']:.1f} ms")
        if "rebuild_s" in s:
            print(f"  rebuild_vector_index {s['rebuild_s']:.0f} s {s.get('rebuild_error', '')}")


def _saver_table(savers: dict[str, Any], ok: list[str], rows: list[tuple[str, str, str]], args: argparse.Namespace) -> None:
    print("\n| metric | " + " | ".join(ok) + " |")
    print("|---|" + "---|" * len(ok))
    for label, key, stat in rows:
        print(f"| {label} | " + " | ".join(f"{savers[n][key][stat]:.2f}" for n in ok) + " |")
    print(f"| graph {args.graph_steps} steps s | " + " | ".join(f"{savers[n][f'graph_{args.graph_steps}_steps_s']:.2f}" for n in ok) + " |")
    print("| bytes / checkpoint | " + " | ".join(f"{savers[n].get('bytes_per_checkpoint', float('nan')):,.0f}" for n in ok) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="an OceanBase/seekdb server (oceanbase://root@host:port/); default: start seekdb")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--puts", type=int, default=300)
    ap.add_argument("--list-size", type=int, default=1000)
    ap.add_argument("--list-reps", type=int, default=10)
    ap.add_argument("--graph-steps", type=int, default=200)
    ap.add_argument("--graph-reps", type=int, default=5, help="graph runs per saver (median reported)")
    ap.add_argument("--store-items", type=int, default=100_000)
    ap.add_argument("--store-queries", type=int, default=200)
    ap.add_argument("--store-seed", type=int, default=26, help="seed of the store's items and queries")
    ap.add_argument("--store-db", default="lgb_store", help="database of the store (kept after the run)")
    ap.add_argument("--store-reuse", action="store_true",
                    help="skip the load when --store-db already holds --store-items items (same seed)")
    ap.add_argument("--store-rebuild", action="store_true", help="with --store-reuse: rebuild_vector_index() first")
    ap.add_argument("--only", choices=["savers", "store"], help="run one half")
    ap.add_argument("--text", choices=["filler", "words", "messages"], default="filler",
                    help="message text of the saver workloads (how well it compresses; see TEXT)")
    ap.add_argument("--history", choices=["append", "redraw"], default="append",
                    help="how the message list grows from one checkpoint to the next (see HISTORY)")
    ap.add_argument("--json", default="benchmarks/results/langgraph.json")
    args = ap.parse_args()
    if args.quick:
        args.puts, args.list_size, args.list_reps, args.graph_steps, args.graph_reps = 60, 200, 3, 50, 3
        args.store_items, args.store_queries = min(args.store_items, 2000), 50
    TEXT["mode"] = args.text
    HISTORY["mode"] = args.history
    env = environment(PACKAGES)
    print_environment(env)
    with seekdb_or_url(args.url) as server:
        host, port = server_address(server, args.url)
        res: dict[str, Any] = {"env": env, "args": vars(args)}
        res["savers"] = asyncio.run(run_savers(host, port, args)) if args.only != "store" else {}
        wants_store = args.store_items and args.only != "savers"
        res["store"] = asyncio.run(run_store(
            host, port, args.store_items, args.store_queries, seed=args.store_seed, db=args.store_db,
            reuse=args.store_reuse, rebuild=args.store_rebuild)) if wants_store else None
    print_table(res, args)
    write_json(args.json, res)


if __name__ == "__main__":
    main()
