"""``adk-oceanbase sessions ...``: list, show, delete and export sessions, one command per service method."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .output import line, progress
from .registry import AUDIT_FLAGS, command, flag, group
from .services import open_services

group("sessions", "list, show, delete and export sessions")

_APP = flag("--app", required=True, help="app name")
_USER = flag("--user", required=True, help="user id")


@command(
    "sessions list", "one JSON line per session (no events), newest first; list_sessions_page()",
    _APP,
    flag("--user", help="only this user's sessions"),
    flag("--limit", type=int, default=50, help="sessions per page (default 50)"),
    flag("--cursor", help="continue after a page (printed on stderr when there are more)"),
    flag("--all", action="store_true", help="every page, not just one"),
    flag("--oldest-first", action="store_true", help="oldest first"),
)
async def list_sessions(args: argparse.Namespace) -> int:
    async with open_services(args) as (svc, _):
        cursor = args.cursor
        while True:
            page = await svc.list_sessions_page(
                app_name=args.app, user_id=args.user, limit=args.limit, cursor=cursor, newest_first=not args.oldest_first
            )
            for s in page.sessions:
                line(s.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"events"}))
            cursor = page.next_cursor
            if cursor is None:
                return 0
            if not args.all:
                print(f"more sessions: --cursor {cursor}", file=sys.stderr)
                return 0


@command(
    "sessions show", "one session with its events as JSON; get_session()",
    _APP, _USER,
    flag("session", metavar="SESSION", help="session id"),
    flag("--include-compacted", action="store_true", help="also the events a compaction archived"),
)
async def show_session(args: argparse.Namespace) -> int:
    async with open_services(args) as (svc, _):
        s = await svc.get_session(
            app_name=args.app, user_id=args.user, session_id=args.session, include_compacted=args.include_compacted
        )
    if s is None:
        print(f"adk-oceanbase: session {args.session} not found", file=sys.stderr)
        return 1
    print(s.model_dump_json(by_alias=True, exclude_none=True))
    return 0


@command(
    "sessions delete", "delete sessions with their events and state; delete_session()",
    _APP, _USER,
    flag("sessions", metavar="SESSION", nargs="+", help="session ids"),
    *AUDIT_FLAGS,
)
async def delete_sessions(args: argparse.Namespace) -> int:
    """Deletes the sessions that exist, one line each; exit 1 when any was not found (the others are deleted).

    ``delete_session`` is ADK's (``None`` whether or not the session was
    there), so existence is read first; a session deleted by someone else
    in between is reported as deleted.
    """
    from google.adk.sessions.base_session_service import GetSessionConfig

    head_only = GetSessionConfig(num_recent_events=1)  # an existence check need not load every event
    missing = 0
    async with open_services(args) as (svc, _):
        for sid in args.sessions:
            if await svc.get_session(app_name=args.app, user_id=args.user, session_id=sid, config=head_only) is None:
                print(f"adk-oceanbase: session {sid} not found", file=sys.stderr)
                missing += 1
                continue
            await svc.delete_session(app_name=args.app, user_id=args.user, session_id=sid)
            print(f"deleted session {sid}", file=sys.stderr)
    return 1 if missing else 0


@command(
    "sessions export", "every session with all its stored events, one JSON line each (ADK's JSON form)",
    _APP,
    flag("--user", help="only this user's sessions"),
    flag("--output", "-o", help="write to this file instead of stdout"),
)
async def export_sessions(args: argparse.Namespace) -> int:
    async with open_services(args) as (svc, _):
        stats = await svc.stats(app_name=args.app)
        total = stats[0]["sessions"] if stats else 0
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
        try:
            await _export(svc, args, out, total)
        finally:
            if args.output:
                out.close()
    return 0


async def _export(svc: Any, args: argparse.Namespace, out: Any, total: int) -> None:
    with progress(f"exporting {args.app}") as bar:
        task = bar.add_task("export", total=total)
        cursor = None
        while True:
            page = await svc.list_sessions_page(app_name=args.app, user_id=args.user, limit=100, cursor=cursor)
            for head in page.sessions:
                s = await svc.get_session(app_name=args.app, user_id=head.user_id, session_id=head.id, include_compacted=True)
                if s is not None:  # deleted meanwhile
                    out.write(s.model_dump_json(by_alias=True, exclude_none=True) + "\n")
                bar.advance(task)
            cursor = page.next_cursor
            if cursor is None:
                return
