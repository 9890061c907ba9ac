"""What each ``adk-oceanbase`` subcommand does: open the services, call one API method, print the result.

No SQL here: every read and write is a method of the session or memory
service, :mod:`.migrations` or :func:`.demo.run_demo`.  Long work shows a
``rich`` progress bar or spinner on stderr when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterator

from google.adk.sessions.base_session_service import GetSessionConfig
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .config import Config
from .engine import Database
from .errors import SchemaMissingError, SchemaOutdatedError, ValidationError

__all__ = ["run"]

_HEAD_ONLY = GetSessionConfig(num_recent_events=1)  # an existence check need not load every event


def _out() -> Console:
    # Piped output is not cut to 80 columns (rich's default off a terminal).
    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)


def _err() -> Console:
    return Console(file=sys.stderr)


def _line(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


@contextmanager
def _spinner(message: str) -> Iterator[None]:
    err = _err()
    if not err.is_terminal:
        yield
        return
    with err.status(message):
        yield


def _progress(message: str) -> Progress:
    err = _err()
    return Progress(
        SpinnerColumn(), TextColumn(message), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    )


def _database(args: argparse.Namespace, *, create: bool = False) -> Database:
    """The command's database; only the commands meant to create one (``db upgrade``, ``import-adk``) pass ``create``.

    Elsewhere a missing database is a mistyped URL: ``DatabaseNotFoundError``
    (exit 1) instead of a new 220 MB seekdb directory (issue 24).
    """
    return Database(Config.from_url(args.url) if args.url else Config.from_env(), create=create)


@asynccontextmanager
async def _open(
    args: argparse.Namespace, *, memory: bool = False, background: bool = False, create: bool = False,
    redaction: Any = None,
) -> AsyncIterator[Any]:
    """One :class:`Database` shared by the session (and memory) service; everything closed afterwards."""
    from .sessions import OceanBaseSessionService

    from ._governance_commands import audit_settings

    db = _database(args, create=create)
    audit = audit_settings(args)  # --audit / ADK_OCEANBASE_AUDIT, on the commands that take it
    sessions = OceanBaseSessionService(database=db, audit=audit, redaction=redaction)
    mem = None
    if memory:
        from .memory import MemorySettings, OceanBaseMemoryService

        # Reading and maintenance load no model and embed no backlog (MemorySettings.background_start).
        mem = OceanBaseMemoryService(database=db, settings=MemorySettings(background_start=background), audit=audit)
    try:
        yield sessions, mem
    finally:
        try:
            if mem is not None:
                await mem.close()
            await sessions.close()
        finally:
            await db.close()


async def _model_ready(memory: Any) -> None:
    """Loads the embedding model with a spinner, then says how long it took (stderr)."""
    emb = memory.embedder
    if getattr(emb, "loaded", True):
        return
    emb.start_loading()
    with _spinner(f"loading embedding model {emb.model_name} ..."):
        while not await asyncio.to_thread(emb.wait_loaded, 0.2):
            pass
    print(f"embedding model {emb.model_name}: {emb.status}", file=sys.stderr)


# ---------------------------------------------------------------- sessions
async def _sessions(args: argparse.Namespace) -> int:
    async with _open(args) as (svc, _):
        if args.action == "list":
            cursor = args.cursor
            while True:
                page = await svc.list_sessions_page(
                    app_name=args.app, user_id=args.user, limit=args.limit, cursor=cursor, newest_first=not args.oldest_first
                )
                for s in page.sessions:
                    _line(s.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"events"}))
                cursor = page.next_cursor
                if cursor is None:
                    return 0
                if not args.all:
                    print(f"more sessions: --cursor {cursor}", file=sys.stderr)
                    return 0
        if args.action == "show":
            s = await svc.get_session(
                app_name=args.app, user_id=args.user, session_id=args.session, include_compacted=args.include_compacted
            )
            if s is None:
                print(f"adk-oceanbase: session {args.session} not found", file=sys.stderr)
                return 1
            print(s.model_dump_json(by_alias=True, exclude_none=True))
            return 0
        if args.action == "delete":
            return await _delete_sessions(svc, args)
        return await _export(svc, args)


async def _delete_sessions(svc: Any, args: argparse.Namespace) -> int:
    """Deletes the sessions that exist, one line each; exit 1 when any was not found (the others are deleted).

    ``delete_session`` is ADK's (``None`` whether or not the session was
    there), so existence is read first; a session deleted by someone else
    in between is reported as deleted.
    """
    missing = 0
    for sid in args.sessions:
        if await svc.get_session(app_name=args.app, user_id=args.user, session_id=sid, config=_HEAD_ONLY) is None:
            print(f"adk-oceanbase: session {sid} not found", file=sys.stderr)
            missing += 1
            continue
        await svc.delete_session(app_name=args.app, user_id=args.user, session_id=sid)
        print(f"deleted session {sid}", file=sys.stderr)
    return 1 if missing else 0


async def _export(svc: Any, args: argparse.Namespace) -> int:
    stats = await svc.stats(app_name=args.app)
    total = stats[0]["sessions"] if stats else 0
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        with _progress(f"exporting {args.app}") as bar:
            task = bar.add_task("export", total=total)
            cursor = None
            while True:
                page = await svc.list_sessions_page(app_name=args.app, user_id=args.user, limit=100, cursor=cursor)
                for head in page.sessions:
                    s = await svc.get_session(
                        app_name=args.app, user_id=head.user_id, session_id=head.id, include_compacted=True
                    )
                    if s is not None:  # deleted meanwhile
                        out.write(s.model_dump_json(by_alias=True, exclude_none=True) + "\n")
                    bar.advance(task)
                cursor = page.next_cursor
                if cursor is None:
                    return 0
    finally:
        if args.output:
            out.close()


# ---------------------------------------------------------------- memory
async def _memory(args: argparse.Namespace) -> int:
    async with _open(args, memory=True, background=args.action == "reembed") as (_, mem):
        if args.action == "search":
            await _model_ready(mem)
            hits = await mem.search(args.app, args.user, args.query, top_k=args.top_k, bump_access=args.bump_access)
            if args.explain:
                _explain(hits, mem.settings.weights, args.query)
                return 0
            for h in hits:
                _line({"memory_id": h.memory_id, "score": round(h.score, 4), "author": h.entry.author,
                       "timestamp": h.entry.timestamp, "text": h.entry.content.parts[0].text,
                       "signals": {k: round(v, 4) for k, v in vars(h.signals).items() if k != "score"}})
            return 0
        if args.action == "delete":
            missing = 0
            for mid in args.memory_ids:
                if await mem.delete_memory(app_name=args.app, user_id=args.user, memory_id=mid):
                    print(f"deleted memory {mid}", file=sys.stderr)
                else:
                    print(f"adk-oceanbase: memory {mid} not found", file=sys.stderr)
                    missing += 1
            return 1 if missing else 0
        if args.action == "rebuild-index":
            with _spinner("rebuilding the vector index (minutes at 100k rows) ..."):
                rebuilt = await mem.rebuild_vector_index()
            print("vector index rebuilt" if rebuilt else "no vector index on this engine (MySQL): nothing to rebuild")
            return 0
        return await _reembed(mem)


async def _reembed(mem: Any) -> int:
    await _model_ready(mem)
    count = await mem.reembed()
    stats = mem.vectorizer.stats
    start = stats["embedded"]
    with _progress("re-embedding") as bar:
        task = bar.add_task("reembed", total=count)
        flushing = asyncio.ensure_future(mem.flush())
        while not flushing.done():
            await asyncio.wait([flushing], timeout=0.2)
            bar.update(task, completed=min(stats["embedded"] - start, count))
        await flushing
    print(f"re-embedded {count} memories with {mem.embedder.model_name}")
    return 0


def _explain(hits: list[Any], weights: Any, query: str) -> None:
    names = ("semantic", "fulltext", "recency", "frequency", "importance", "context", "version")
    table = Table(title=f"memory search: {query!r}", caption="each signal: weight x value = share of the score")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    for n in names:
        table.add_column(f"{n}\nx{getattr(weights, n):g}", justify="right")
    table.add_column("memory", overflow="fold", min_width=24)
    for i, h in enumerate(hits, 1):
        shares = [f"{getattr(weights, n) * getattr(h.signals, n):.3f}" for n in names]
        table.add_row(str(i), f"{h.score:.3f}", *shares, f"{h.entry.author}: {h.entry.content.parts[0].text}")
    _out().print(table)


# ---------------------------------------------------------------- compact, stats
async def _compact(args: argparse.Namespace) -> int:
    from .compaction import KeepLastN

    policy = KeepLastN(keep_last=args.keep_last, min_batch=args.min_batch) if args.keep_last is not None else None
    async with _open(args) as (svc, _):
        with _spinner(f"compacting session {args.session} ..."):
            result = await svc.compact_session(app_name=args.app, user_id=args.user, session_id=args.session, policy=policy)
    _line({k: v for k, v in vars(result).items() if k != "event"})
    return 0


async def _stats(args: argparse.Namespace) -> int:
    async with _open(args, memory=True) as (svc, mem):
        sessions = await svc.stats(app_name=args.app)
        memories = await mem.stats(app_name=args.app)
    rows = {r["app_name"]: {**r, "memories": {}} for r in sessions}
    for app, counts in memories.items():
        rows.setdefault(app, {"app_name": app, "sessions": 0, "users": 0, "events": 0, "tokens": 0})["memories"] = counts
    if args.json:
        for app in sorted(rows):
            _line(rows[app])
        return 0
    statuses = ("ready", "pending", "failed", "deleted")
    table = Table(title=svc.config.redacted_url(), caption="memories by embedding status: ready, pending, failed, deleted")
    for col in ("app", "sessions", "users", "events", "tokens", *statuses):
        table.add_column(col, justify="left" if col == "app" else "right")
    for app in sorted(rows):
        r = rows[app]
        table.add_row(app, *(f"{r[k]:,}" for k in ("sessions", "users", "events", "tokens")),
                      *(f"{r['memories'].get(s, 0):,}" for s in statuses))
    _out().print(table)
    return 0


# ---------------------------------------------------------------- db
async def _db(args: argparse.Namespace) -> int:
    from . import migrations

    if args.action == "history":
        for rev, down, doc in migrations.history():
            print(f"{down or 'base'} -> {rev}{' (head)' if rev == migrations.head_revision() else ''}, {doc}")
        return 0
    if args.action == "heads":
        print(migrations.head_revision())
        return 0
    if args.action == "downgrade" and not args.yes and not _confirm(args):
        return 2
    db = _database(args, create=args.action == "upgrade")
    where = db.config.redacted_url()
    try:
        if args.action == "upgrade":
            with _spinner(f"migrating {where} to {args.revision} ..."):
                rev = await migrations.upgrade(db, args.revision)
            print(f"{where}: at revision {rev}")
        elif args.action == "downgrade":
            with _spinner(f"migrating {where} down to {args.revision} ..."):
                rev = await migrations.downgrade(db, args.revision)
            print(f"{where}: at revision {rev or 'base'}")
        elif args.action == "stamp":
            rev = await migrations.stamp(db, args.revision)
            print(f"{where}: stamped at revision {rev or 'base'}")
        elif args.action == "check":
            try:
                await db.start()
                await migrations.check_schema(db)
            except (SchemaMissingError, SchemaOutdatedError) as exc:
                print(f"adk-oceanbase: {exc}", file=sys.stderr)
                return 1
            print(f"{where}: up to date (revision {migrations.head_revision()})")
        else:
            rev = await migrations.current_revision(db)
            print(f"{where}: at revision {rev or 'none'} (head is {migrations.head_revision()})")
    finally:
        await db.close()
    return 0


def _confirm(args: argparse.Namespace) -> bool:
    """Asks on a terminal; elsewhere (scripts, CI) only ``--yes`` may downgrade."""
    what = "drop every adk-oceanbase table and its data" if args.revision == "base" else f"revert the schema to {args.revision}"
    if not sys.stdin.isatty():
        print(f"adk-oceanbase: this would {what}; pass --yes to do it without a terminal", file=sys.stderr)
        return False
    if input(f"This will {what} in {args.url or 'the default database'}. Continue? [y/N] ").strip().lower() in ("y", "yes"):
        return True
    print("adk-oceanbase: downgrade cancelled", file=sys.stderr)
    return False


# ---------------------------------------------------------------- import, gc
async def _import_adk(args: argparse.Namespace) -> int:
    from .importer import import_adk
    from .redaction import RedactionPolicy

    # importing into a new database is a way to start one
    async with _open(args, create=True, redaction=RedactionPolicy() if args.redact else None) as (target, _):
        with _progress("importing sessions") as bar:
            task = bar.add_task("import", total=None)

            def progress(report: Any) -> None:
                done = report.sessions_new + report.sessions_completed + report.sessions_skipped
                bar.update(task, completed=done)

            r = await import_adk(args.source, target, app_name=args.app, progress=progress)
    print(
        f"ADK schema v{r.source_schema}, {r.apps} app(s): sessions {r.sessions_new} new, {r.sessions_completed} completed, "
        f"{r.sessions_skipped} already imported; {r.events} events; state keys {r.app_state_keys} app, "
        f"{r.user_state_keys} user, {r.session_state_keys} session"
    )
    return 0


async def _gc(args: argparse.Namespace) -> int:
    from .governance import Retention, RetentionPolicy, sweep

    if args.session_ttl is None and args.memory_ttl is None and args.audit_ttl is None:
        raise ValidationError("gc needs --session-ttl and/or --memory-ttl, or --audit-ttl")
    policy = RetentionPolicy(Retention(session_ttl=args.session_ttl, memory_ttl=args.memory_ttl), audit_ttl=args.audit_ttl)
    db = _database(args)
    try:
        with _spinner("sweeping expired sessions, memories and audit rows ..."):
            counts = await sweep(db, policy, apps=args.app, dry_run=args.dry_run, audit=args.audit)
    finally:
        await db.close()
    url = db.config.redacted_url()
    if args.json:
        _line({"url": url, **counts.as_dict()})
        return 0
    if not counts.tables:
        print(f"{url}: nothing to do (no tables)")
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    parts = [f"{counts.sessions} session(s)", f"{counts.events} event(s)"]
    if not args.dry_run:
        parts += [f"{counts.state_rows} state row(s)", f"{counts.debug_entries} debug entr(ies)"]
    parts.append(f"{counts.memories} memory(ies)")
    if args.audit_ttl is not None:
        parts.append(f"{counts.audit_rows} audit row(s)")
    kept = f"; kept {counts.tombstones_kept} tombstone(s) whose source events are stored" if counts.tombstones_kept else ""
    print(f"{url}: {verb} " + ", ".join(parts) + kept)
    return 0


def _adk_init(args: argparse.Namespace) -> int:
    from .adk_services import write_services_py

    print(write_services_py(args.agents_dir), file=sys.stderr)
    url = Config.from_url(args.url).redacted_url() if args.url else "seekdb:///path/to/dir"
    print(f"adk api_server --session_service_uri {url} --memory_service_uri {url} {args.agents_dir}")
    return 0


# ---------------------------------------------------------------- dispatch
async def run(args: argparse.Namespace) -> int:
    """Runs the parsed command; returns the exit code."""
    if args.command == "adk-init":
        return _adk_init(args)
    if args.command == "demo":
        from .demo import run_demo

        await run_demo(args.url)
        return 0
    from . import _governance_commands as governance

    if (args.command, getattr(args, "action", None)) in governance.ACTIONS:
        return await governance.run(args, _open)
    handler = {
        "sessions": _sessions, "memory": _memory, "compact": _compact, "stats": _stats, "db": _db,
        "import-adk": _import_adk, "gc": _gc,
    }[args.command]
    return await handler(args)
