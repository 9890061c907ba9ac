"""Upkeep commands: compact a session now, count what is stored, sweep what outlived its TTL."""

from __future__ import annotations

import argparse

from ..errors import ValidationError
from .output import line, out, spinner
from .registry import command, flag
from .services import database, open_services


@command(
    "compact", "compact one session now; compact_session()",
    flag("session", metavar="SESSION", help="session id"),
    flag("--app", required=True, help="app name"),
    flag("--user", required=True, help="user id"),
    flag("--keep-last", type=int, help="KeepLastN policy: raw events left verbatim (default: the token policy)"),
    flag("--min-batch", type=int, default=20, help="with --keep-last: fewest events worth a summary"),
)
async def compact(args: argparse.Namespace) -> int:
    from ..compaction import KeepLastN

    policy = KeepLastN(keep_last=args.keep_last, min_batch=args.min_batch) if args.keep_last is not None else None
    async with open_services(args) as (svc, _):
        with spinner(f"compacting session {args.session} ..."):
            result = await svc.compact_session(app_name=args.app, user_id=args.user, session_id=args.session, policy=policy)
    line({k: v for k, v in vars(result).items() if k != "event"})
    return 0


@command(
    "stats", "sessions, users, events, tokens and memories per app; stats()",
    flag("--app", help="only this app"),
    flag("--json", action="store_true", help="one JSON line per app instead of a table"),
)
async def stats(args: argparse.Namespace) -> int:
    from rich.table import Table

    async with open_services(args, memory=True) as (svc, mem):
        sessions = await svc.stats(app_name=args.app)
        memories = await mem.stats(app_name=args.app)
    rows = {r["app_name"]: {**r, "memories": {}} for r in sessions}
    for app, counts in memories.items():
        rows.setdefault(app, {"app_name": app, "sessions": 0, "users": 0, "events": 0, "tokens": 0})["memories"] = counts
    if args.json:
        for app in sorted(rows):
            line(rows[app])
        return 0
    statuses = ("ready", "pending", "failed", "deleted")
    table = Table(title=svc.config.redacted_url(), caption="memories by embedding status: ready, pending, failed, deleted")
    for col in ("app", "sessions", "users", "events", "tokens", *statuses):
        table.add_column(col, justify="left" if col == "app" else "right")
    for app in sorted(rows):
        r = rows[app]
        table.add_row(app, *(f"{r[k]:,}" for k in ("sessions", "users", "events", "tokens")),
                      *(f"{r['memories'].get(s, 0):,}" for s in statuses))
    out().print(table)
    return 0


@command(
    "gc", "delete sessions, memories and audit rows older than their TTL, in bounded batches; governance.sweep()",
    flag("--app", action="append", help="only this app (repeatable; default: every app)"),
    flag("--session-ttl", help="delete sessions the server has not written for this long, e.g. 30d, 12h"),
    flag("--memory-ttl", help="delete memories neither stored nor served by a search for this long, e.g. 180d"),
    flag("--thread-ttl", help="delete LangGraph threads with no checkpoint written for this long, e.g. 90d"),
    flag("--audit-ttl", help="delete audit_log rows older than this, e.g. 400d (default: keep them)"),
    flag("--dry-run", action="store_true", help="count what would be deleted; delete nothing"),
    flag("--audit", action="store_true", help="record each deleting batch in audit_log (retention_sweep)"),
    flag("--json", action="store_true", help="one JSON line with the counts instead of a sentence"),
)
async def gc(args: argparse.Namespace) -> int:
    from ..governance import Retention, RetentionPolicy, sweep

    if args.session_ttl is None and args.memory_ttl is None and args.audit_ttl is None and args.thread_ttl is None:
        raise ValidationError("gc needs --session-ttl and/or --memory-ttl, --thread-ttl, or --audit-ttl")
    policy = RetentionPolicy(
        Retention(session_ttl=args.session_ttl, memory_ttl=args.memory_ttl, thread_ttl=args.thread_ttl),
        audit_ttl=args.audit_ttl,
    )
    db = database(args)
    try:
        with spinner("sweeping expired sessions, memories and audit rows ..."):
            counts = await sweep(db, policy, apps=args.app, dry_run=args.dry_run, audit=args.audit)
    finally:
        await db.close()
    url = db.config.redacted_url()
    if args.json:
        line({"url": url, **counts.as_dict()})
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
    if args.thread_ttl is not None:
        parts.append(f"{counts.lg_threads} LangGraph thread(s) ({counts.lg_checkpoints} checkpoint(s))")
    if counts.lg_store_items:
        parts.append(f"{counts.lg_store_items} expired Store item(s)")
    kept = f"; kept {counts.tombstones_kept} tombstone(s) whose source events are stored" if counts.tombstones_kept else ""
    print(f"{url}: {verb} " + ", ".join(parts) + kept)
    return 0
