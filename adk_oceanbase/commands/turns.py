"""``adk-oceanbase turns ...``: list a session's turns, show a turn's diff and snapshot, replay it into a sandbox session."""

from __future__ import annotations

import argparse

from .output import line
from .registry import command, flag, group
from .services import open_services

group("turns", "a session's turns: index, per-turn state diff, snapshot, sandbox replay")

_APP = flag("--app", required=True, help="app name")
_USER = flag("--user", required=True, help="user id")
_SESSION = flag("session", metavar="SESSION", help="session id")
_TURN = flag("turn", metavar="TURN", type=int, help="turn number (1 is the first; 0 is the session as created)")


@command("turns list", "one JSON line per turn: invocation, event range, authors; list_turns()", _APP, _USER, _SESSION)
async def list_turns(args: argparse.Namespace) -> int:
    from ..context.turns import list_turns as turns

    async with open_services(args) as (svc, _):
        for t in await turns(svc, app_name=args.app, user_id=args.user, session_id=args.session):
            line(t.as_dict())
    return 0


@command("turns diff", "the state keys a turn added, changed or removed, by scope; turn_diff()", _APP, _USER, _SESSION, _TURN)
async def diff(args: argparse.Namespace) -> int:
    from ..context.turns import turn_diff

    async with open_services(args) as (svc, _):
        result = await turn_diff(svc, app_name=args.app, user_id=args.user, session_id=args.session, turn=args.turn)
    line(result.as_dict())
    return 0


@command("turns snapshot", "the merged state right after a turn; turn_snapshot()", _APP, _USER, _SESSION, _TURN)
async def snapshot(args: argparse.Namespace) -> int:
    from ..context.turns import turn_snapshot

    async with open_services(args) as (svc, _):
        snap = await turn_snapshot(svc, app_name=args.app, user_id=args.user, session_id=args.session, turn=args.turn)
    line({"turn": args.turn, "seq": snap.seq, "event_id": snap.event_id, "ts": snap.ts, "state": snap.state})
    return 0


@command(
    "turns replay", "copy a session up to a turn into a new sandbox session; replay_to_sandbox()",
    _APP, _USER, _SESSION, _TURN,
    flag("--into", metavar="SESSION", help="the sandbox session id (default: SESSION-turnTURN)"),
    flag("--into-app", metavar="APP", help="write into this app, shared app:/user: keys included (default: the same app, session keys only)"),
)
async def replay(args: argparse.Namespace) -> int:
    from ..context.turns import replay_to_sandbox

    async with open_services(args) as (svc, _):
        sandbox = await replay_to_sandbox(
            svc, app_name=args.app, user_id=args.user, session_id=args.session, turn=args.turn,
            sandbox_session_id=args.into, sandbox_app=args.into_app,
        )
    line({"app_name": sandbox.app_name, "user_id": sandbox.user_id, "session_id": sandbox.id, "events": len(sandbox.events)})
    return 0
