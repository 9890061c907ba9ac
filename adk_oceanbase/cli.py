"""The ``adk-oceanbase`` command: parsing only; every action is a call into the Python API.

    adk-oceanbase demo [--url URL]
    adk-oceanbase db upgrade|current [--url URL]
    adk-oceanbase db downgrade REVISION [--url URL]
    adk-oceanbase import-adk --from ADK_URL [--url URL] [--app APP]
    adk-oceanbase gc [--url URL] [--app APP ...] [--session-ttl 30d] [--memory-ttl 180d] [--dry-run]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Sequence

from .config import Config
from .errors import AdkOceanBaseError, ValidationError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adk-oceanbase", description="ADK sessions and memory on OceanBase/seekdb/MySQL")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    url_help = "database URL (default: $ADK_OCEANBASE_URL, else embedded seekdb in $ADK_OCEANBASE_HOME or ~/.adk_oceanbase)"
    demo = sub.add_parser("demo", help="run a multi-turn ADK conversation on the embedded default and resume it")
    demo.add_argument("--url", help=url_help)

    db = sub.add_parser("db", help="schema migrations")
    dbsub = db.add_subparsers(dest="db_command", required=True)
    for name, help_ in (("upgrade", "migrate to the newest schema (no-op when current)"), ("current", "print the schema revision")):
        cmd = dbsub.add_parser(name, help=help_)
        cmd.add_argument("--url", help=url_help)
        if name == "upgrade":
            cmd.add_argument("--revision", default="head", help="target revision (default: head)")
    down = dbsub.add_parser("downgrade", help="revert the schema to REVISION ('base' drops our tables)")
    down.add_argument("revision")
    down.add_argument("--url", help=url_help)

    imp = sub.add_parser("import-adk", help="copy sessions, events and state from ADK's DatabaseSessionService (re-runnable)")
    imp.add_argument("--from", dest="source", required=True, metavar="ADK_URL", help="ADK's database URL, e.g. sqlite+aiosqlite:///sessions.db")
    imp.add_argument("--url", help=url_help)
    imp.add_argument("--app", help="import only this app")
    gc = sub.add_parser("gc", help="delete sessions and memories older than their TTL, in bounded batches")
    gc.add_argument("--url", help=url_help)
    gc.add_argument("--app", action="append", help="only this app (repeatable; default: every app)")
    gc.add_argument("--session-ttl", help="delete sessions not updated for this long, e.g. 30d, 12h")
    gc.add_argument("--memory-ttl", help="delete memories neither created nor read for this long, e.g. 180d")
    gc.add_argument("--dry-run", action="store_true", help="count what would be deleted; delete nothing")
    return p


async def _import_adk(args: argparse.Namespace) -> int:
    from .importer import import_adk
    from .sessions import OceanBaseSessionService

    def progress(report) -> None:
        done = report.sessions_new + report.sessions_completed + report.sessions_skipped
        if done % 100 == 0:
            print(f"{done} sessions, {report.events} events", file=sys.stderr)

    async with OceanBaseSessionService(args.url) as target:
        r = await import_adk(args.source, target, app_name=args.app, progress=progress)
    print(
        f"ADK schema v{r.source_schema}, {r.apps} app(s): sessions {r.sessions_new} new, {r.sessions_completed} completed, "
        f"{r.sessions_skipped} already imported; {r.events} events; state keys {r.app_state_keys} app, "
        f"{r.user_state_keys} user, {r.session_state_keys} session"
    )
    return 0


async def _gc(args: argparse.Namespace) -> int:
    from .engine import Database
    from .governance import Retention, RetentionPolicy, sweep

    if args.session_ttl is None and args.memory_ttl is None:
        raise ValidationError("gc needs --session-ttl and/or --memory-ttl")
    policy = RetentionPolicy(Retention(session_ttl=args.session_ttl, memory_ttl=args.memory_ttl))
    db = Database(Config.from_url(args.url) if args.url else Config.from_env())
    try:
        counts = await sweep(db, policy, apps=args.app, dry_run=args.dry_run)
    finally:
        await db.close()
    verb = "would delete" if args.dry_run else "deleted"
    parts = [f"{counts.sessions} session(s)", f"{counts.events} event(s)"]
    if not args.dry_run:
        parts += [f"{counts.state_rows} state row(s)", f"{counts.debug_entries} debug entr(ies)"]
    print(f"{db.config.redacted_url()}: {verb} " + ", ".join(parts + [f"{counts.memories} memory(ies)"]))
    return 0


async def _db(args: argparse.Namespace) -> int:
    from . import migrations
    from .engine import Database

    db = Database(Config.from_url(args.url) if args.url else Config.from_env())
    try:
        if args.db_command == "upgrade":
            rev = await migrations.upgrade(db, args.revision)
            print(f"{db.config.redacted_url()}: at revision {rev}")
        elif args.db_command == "downgrade":
            rev = await migrations.downgrade(db, args.revision)
            print(f"{db.config.redacted_url()}: at revision {rev or 'base'}")
        else:
            rev = await migrations.current_revision(db)
            head = migrations.head_revision()
            print(f"{db.config.redacted_url()}: at revision {rev or 'none'} (head is {head})")
    finally:
        await db.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "demo":
            from .demo import run_demo

            asyncio.run(run_demo(args.url))
            return 0
        if args.command == "import-adk":
            return asyncio.run(_import_adk(args))
        if args.command == "gc":
            return asyncio.run(_gc(args))
        return asyncio.run(_db(args))
    except AdkOceanBaseError as exc:
        print(f"adk-oceanbase: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
