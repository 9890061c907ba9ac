"""The commands that meet ADK itself: the demo, ``adk web`` set-up and the import from ADK's own database."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .output import progress
from .registry import command, flag
from .services import open_services


@command("demo", "run a multi-turn ADK conversation on the embedded default and resume it")
async def demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    await run_demo(args.url)
    return 0


@command(
    "import-adk", "copy sessions, events and state from ADK's DatabaseSessionService (re-runnable); import_adk()",
    flag("--from", dest="source", required=True, metavar="ADK_URL",
         help="ADK's database URL, e.g. sqlite+aiosqlite:///sessions.db"),
    flag("--app", help="import only this app"),
    flag("--redact", action="store_true",
         help="redact state and events with the built-in rules as they are imported (RedactionPolicy())"),
)
async def import_adk(args: argparse.Namespace) -> int:
    from ..importer import import_adk as run_import
    from ..redaction import RedactionPolicy

    # importing into a new database is a way to start one
    async with open_services(args, create=True, redaction=RedactionPolicy() if args.redact else None) as (target, _):
        with progress("importing sessions") as bar:
            task = bar.add_task("import", total=None)

            def advance(report: Any) -> None:
                done = report.sessions_new + report.sessions_completed + report.sessions_skipped
                bar.update(task, completed=done)

            r = await run_import(args.source, target, app_name=args.app, progress=advance)
    print(
        f"ADK schema v{r.source_schema}, {r.apps} app(s): sessions {r.sessions_new} new, {r.sessions_completed} completed, "
        f"{r.sessions_skipped} already imported; {r.events} events; state keys {r.app_state_keys} app, "
        f"{r.user_state_keys} user, {r.session_state_keys} session"
    )
    return 0


@command(
    "adk-init", "write AGENTS_DIR/services.py so `adk web` / `adk api_server` know seekdb:// and oceanbase://",
    flag("agents_dir", metavar="AGENTS_DIR", help="the agents directory you pass to adk web / adk api_server"),
)
async def adk_init(args: argparse.Namespace) -> int:
    from ..adk_services import write_services_py
    from ..config import Config

    print(write_services_py(args.agents_dir), file=sys.stderr)
    url = Config.from_url(args.url).redacted_url() if args.url else "seekdb:///path/to/dir"
    print(f"adk api_server --session_service_uri {url} --memory_service_uri {url} {args.agents_dir}")
    return 0
