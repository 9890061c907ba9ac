"""``adk-oceanbase memory ...``: search, delete, re-embed memories and rebuild the vector index.

``memory search --explain`` prints each signal's weighted share of the score,
one column per field of :class:`~adk_oceanbase.memory.ScoreWeights`, so the
shares add up to the score and a new signal gets its column by being weighted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from typing import Any

from .output import line, out, progress, spinner
from .registry import AUDIT_FLAGS, MAINTENANCE_TIMEOUT, command, flag, group
from .services import model_ready, open_services

group("memory", "search, delete, re-embed memories; rebuild the vector index")

_APP = flag("--app", required=True, help="app name")
_USER = flag("--user", required=True, help="user id")


def signal_names(weights: Any) -> tuple[str, ...]:
    """The weighted signals, in ``ScoreWeights`` field order: ``score = Σ weight * signal`` over exactly these."""
    return tuple(f.name for f in dataclasses.fields(weights))


@command(
    "memory search", "hybrid search: one JSON line per memory, best first; search()",
    flag("query", metavar="QUERY"),
    _APP, _USER,
    flag("--top-k", type=int, help="memories returned (default: MemorySettings.top_k)"),
    flag("--explain", action="store_true", help="a table of each signal's weighted share of the score"),
    flag("--bump-access", action="store_true", help="count this search in the frequency signal"),
)
async def search(args: argparse.Namespace) -> int:
    async with open_services(args, memory=True) as (_, mem):
        await model_ready(mem)
        hits = await mem.search(args.app, args.user, args.query, top_k=args.top_k, bump_access=args.bump_access)
        if args.explain:
            explain(hits, mem.settings.weights, args.query)
            return 0
        for h in hits:
            line({"memory_id": h.memory_id, "score": round(h.score, 4), "author": h.entry.author,
                  "timestamp": h.entry.timestamp, "text": h.entry.content.parts[0].text,
                  "signals": {k: round(v, 4) for k, v in vars(h.signals).items() if k != "score"}})
    return 0


def explain(hits: list[Any], weights: Any, query: str) -> None:
    """The ``--explain`` table: per hit, its score and ``weight x value`` for every weighted signal."""
    from rich.table import Table

    names = signal_names(weights)
    table = Table(title=f"memory search: {query!r}", caption="each signal: weight x value = share of the score")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    for n in names:
        table.add_column(f"{n}\nx{getattr(weights, n):g}", justify="right")
    table.add_column("memory", overflow="fold", min_width=24)
    for i, h in enumerate(hits, 1):
        shares = [f"{getattr(weights, n) * getattr(h.signals, n):.3f}" for n in names]
        table.add_row(str(i), f"{h.score:.3f}", *shares, f"{h.entry.author}: {h.entry.content.parts[0].text}")
    out().print(table)


@command(
    "memory delete", "erase memories (a tombstone keeps them from coming back); delete_memory()",
    _APP, _USER,
    flag("memory_ids", metavar="MEMORY_ID", nargs="+", help="memory ids"),
    *AUDIT_FLAGS,
)
async def delete(args: argparse.Namespace) -> int:
    missing = 0
    async with open_services(args, memory=True) as (_, mem):
        for mid in args.memory_ids:
            if await mem.delete_memory(app_name=args.app, user_id=args.user, memory_id=mid):
                print(f"deleted memory {mid}", file=sys.stderr)
            else:
                print(f"adk-oceanbase: memory {mid} not found", file=sys.stderr)
                missing += 1
    return 1 if missing else 0


@command("memory reembed", "re-embed rows another model embedded, with a progress bar; reembed() + flush()", MAINTENANCE_TIMEOUT)
async def reembed(args: argparse.Namespace) -> int:
    async with open_services(args, memory=True, background=True) as (_, mem):
        await model_ready(mem)
        count = await mem.reembed()
        stats = mem.vectorizer.stats
        start = stats["embedded"]
        with progress("re-embedding") as bar:
            task = bar.add_task("reembed", total=count)
            flushing = asyncio.ensure_future(mem.flush())
            while not flushing.done():
                await asyncio.wait([flushing], timeout=0.2)
                bar.update(task, completed=min(stats["embedded"] - start, count))
            await flushing
        print(f"re-embedded {count} memories with {mem.embedder.model_name}")
    return 0


@command("memory rebuild-index", "rebuild the HNSW vector index after bulk loads; rebuild_vector_index()", MAINTENANCE_TIMEOUT)
async def rebuild_index(args: argparse.Namespace) -> int:
    async with open_services(args, memory=True) as (_, mem):
        with spinner("rebuilding the vector index (minutes at 100k rows) ..."):
            rebuilt = await mem.rebuild_vector_index()
        print("vector index rebuilt" if rebuilt else "no vector index on this engine (MySQL): nothing to rebuild")
    return 0
