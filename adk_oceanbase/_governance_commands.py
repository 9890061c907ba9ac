"""What the governance subcommands do: erase a user, opt a user out of memory or back in, mark memories tainted.

Each prints one JSON line and calls one API method; with ``--audit`` (or
``ADK_OCEANBASE_AUDIT=1``) the services write ``audit_log`` rows whose
``actor`` is ``--actor`` (default ``cli:<os user>``).  No SQL here.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Any

from .audit import AuditSettings, audit_actor

__all__ = ["ACTIONS", "audit_settings", "run"]

ACTIONS = frozenset({("users", "delete"), ("memory", "opt-out"), ("memory", "opt-in"), ("memory", "taint")})
"""The ``(command, action)`` pairs handled here."""

_TRUE = ("1", "true", "yes", "on")


def _line(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str))


def actor(args: argparse.Namespace) -> str:
    """``--actor``, else ``cli:<os user>`` (``cli`` alone when the OS cannot say)."""
    if getattr(args, "actor", None):
        return args.actor
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no login name in some containers
        return "cli"


def audit_settings(args: argparse.Namespace) -> AuditSettings | None:
    """Auditing for this command: ``--audit`` or ``ADK_OCEANBASE_AUDIT`` turns it on, with the command's actor."""
    on = getattr(args, "audit", False) or os.environ.get("ADK_OCEANBASE_AUDIT", "").strip().lower() in _TRUE
    return AuditSettings(actor=actor(args)) if on else None


def _confirm(args: argparse.Namespace) -> bool:
    """Asks on a terminal; elsewhere only ``--yes`` erases."""
    what = f"erase every row of user {args.user!r} in app {args.app!r}"
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print(f"adk-oceanbase: this would {what}; pass --yes to do it without a terminal", file=sys.stderr)
        return False
    if input(f"This will {what}. Continue? [y/N] ").strip().lower() in ("y", "yes"):
        return True
    print("adk-oceanbase: erasure cancelled", file=sys.stderr)
    return False


async def run(args: argparse.Namespace, open_services: Any) -> int:
    """Runs one governance command; ``open_services`` is the CLI's service opener (``_commands._open``)."""
    if (args.command, args.action) == ("users", "delete") and not _confirm(args):
        return 2
    with audit_actor(actor(args)):
        async with open_services(args, memory=args.command == "memory") as (sessions, memory):
            if args.command == "users":
                counts = await sessions.delete_user_data(app_name=args.app, user_id=args.user)
                rows = sum(counts.values())
                _line({"app_name": args.app, "user_id": args.user, "rows": rows, "deleted": counts})
                return 0 if rows else 1
            if args.action == "taint":
                n = await memory.mark_tainted(args.app, args.user, args.memory_ids, tainted=not args.clear)
                _line({"app_name": args.app, "user_id": args.user, "tainted": not args.clear, "matched": n})
                return 0 if n else 1
            opted_out = args.action == "opt-out"
            purged = await memory.set_memory_opt_out(
                args.app, args.user, opted_out, purge=opted_out and args.purge
            )
            _line({"app_name": args.app, "user_id": args.user, "opted_out": opted_out, "purged": purged})
            return 0
