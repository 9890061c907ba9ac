"""Erasure, opt-out and taint marks (issue 33): the governance API, one command per method.

Each prints one JSON line; with ``--audit`` (or ``ADK_OCEANBASE_AUDIT=1``)
the services write ``audit_log`` rows whose ``actor`` is ``--actor``
(default ``cli:<os user>``).
"""

from __future__ import annotations

import argparse

from ..audit import audit_actor
from .output import confirm, line
from .registry import AUDIT_FLAGS, command, flag, group
from .services import actor, open_services

group("users", "erase a user's data")

_APP = flag("--app", required=True, help="app name")
_USER = flag("user", metavar="USER", help="user id")


@command(
    "users delete", "erase every row of one user of one app (audit history kept); delete_user_data()",
    _USER, _APP,
    flag("--yes", "-y", action="store_true", help="do not ask for confirmation"),
    *AUDIT_FLAGS,
)
async def delete_user(args: argparse.Namespace) -> int:
    what = f"erase every row of user {args.user!r} in app {args.app!r}"
    if not args.yes and not confirm(what, prompt=f"This will {what}. Continue? [y/N] ", cancelled="erasure"):
        return 2
    with audit_actor(actor(args)):
        async with open_services(args) as (sessions, _):
            counts = await sessions.delete_user_data(app_name=args.app, user_id=args.user)
    rows = sum(counts.values())
    line({"app_name": args.app, "user_id": args.user, "rows": rows, "deleted": counts})
    return 0 if rows else 1


@command(
    "memory opt-out", "stop remembering a user (sessions keep working); set_memory_opt_out()",
    flag("--purge", action="store_true", help="also delete every memory the user has"),
    _USER, _APP, *AUDIT_FLAGS,
)
async def opt_out(args: argparse.Namespace) -> int:
    return await _set_opt_out(args, opted_out=True)


@command("memory opt-in", "remember a user again; set_memory_opt_out(opted_out=False)", _USER, _APP, *AUDIT_FLAGS)
async def opt_in(args: argparse.Namespace) -> int:
    return await _set_opt_out(args, opted_out=False)


async def _set_opt_out(args: argparse.Namespace, *, opted_out: bool) -> int:
    with audit_actor(actor(args)):
        async with open_services(args, memory=True) as (_, memory):
            purged = await memory.set_memory_opt_out(args.app, args.user, opted_out, purge=opted_out and args.purge)
    line({"app_name": args.app, "user_id": args.user, "opted_out": opted_out, "purged": purged})
    return 0


@command(
    "memory taint", "mark memories as possibly poisoned: never returned; mark_tainted()",
    flag("memory_ids", metavar="MEMORY_ID", nargs="+", help="memory ids"),
    flag("--user", required=True, help="user id"),
    flag("--clear", action="store_true", help="clear the mark instead"),
    _APP, *AUDIT_FLAGS,
)
async def taint(args: argparse.Namespace) -> int:
    with audit_actor(actor(args)):
        async with open_services(args, memory=True) as (_, memory):
            n = await memory.mark_tainted(args.app, args.user, args.memory_ids, tainted=not args.clear)
    line({"app_name": args.app, "user_id": args.user, "tainted": not args.clear, "matched": n})
    return 0 if n else 1
