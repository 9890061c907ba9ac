"""The ``adk-oceanbase`` command: parsing only; every action is a call into the Python API.

One subcommand per API method, one flag per keyword (the README's "Command
line" section lists them all; a test checks that list against this parser).
Machine output (JSON lines) goes to stdout; progress bars, spinners and status
lines go to stderr, drawn only on a terminal.  Exit codes: 0 done, 1 not found
or not current (a session, a memory, the database at ``--url``; ``db check``,
``users delete`` of a user with no rows, ``memory taint`` matching no memory),
2 an error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Sequence

from . import __version__
from .errors import AdkOceanBaseError, DatabaseNotFoundError, MemoryNotFoundError, SessionMissingError

__all__ = ["main"]

_NOT_FOUND = (SessionMissingError, MemoryNotFoundError, DatabaseNotFoundError)
"""Errors that mean "not found": exit 1, as ``sessions show`` of a missing session (the README's exit codes)."""

_URL_HELP = (
    "database URL (default: $ADK_OCEANBASE_URL, else embedded seekdb in $ADK_OCEANBASE_HOME or ~/.adk_oceanbase); "
    "tuning options as ?pool_size=4, see the README"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adk-oceanbase", description="ADK sessions and memory on OceanBase/seekdb/MySQL")
    p.add_argument("--version", action="version", version=f"adk-oceanbase {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    url = argparse.ArgumentParser(add_help=False)
    url.add_argument("--url", help=_URL_HELP)

    def cmd(parent, name: str, help_: str) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help_, description=help_, parents=[url])

    cmd(sub, "demo", "run a multi-turn ADK conversation on the embedded default and resume it")

    sessions = sub.add_parser("sessions", help="list, show, delete and export sessions").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    ls = cmd(sessions, "list", "one JSON line per session (no events), newest first; list_sessions_page()")
    ls.add_argument("--app", required=True, help="app name")
    ls.add_argument("--user", help="only this user's sessions")
    ls.add_argument("--limit", type=int, default=50, help="sessions per page (default 50)")
    ls.add_argument("--cursor", help="continue after a page (printed on stderr when there are more)")
    ls.add_argument("--all", action="store_true", help="every page, not just one")
    ls.add_argument("--oldest-first", action="store_true", help="oldest first")
    show = cmd(sessions, "show", "one session with its events as JSON; get_session()")
    delete = cmd(sessions, "delete", "delete sessions with their events and state; delete_session()")
    for c in (show, delete):
        c.add_argument("--app", required=True, help="app name")
        c.add_argument("--user", required=True, help="user id")
    show.add_argument("session", metavar="SESSION", help="session id")
    show.add_argument("--include-compacted", action="store_true", help="also the events a compaction archived")
    delete.add_argument("sessions", metavar="SESSION", nargs="+", help="session ids")
    export = cmd(sessions, "export", "every session with all its stored events, one JSON line each (ADK's JSON form)")
    export.add_argument("--app", required=True, help="app name")
    export.add_argument("--user", help="only this user's sessions")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")

    memory = sub.add_parser("memory", help="search, delete, re-embed memories; rebuild the vector index")
    msub = memory.add_subparsers(dest="action", required=True, metavar="ACTION")
    search = cmd(msub, "search", "hybrid search: one JSON line per memory, best first; search()")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--app", required=True, help="app name")
    search.add_argument("--user", required=True, help="user id")
    search.add_argument("--top-k", type=int, help="memories returned (default: MemorySettings.top_k)")
    search.add_argument("--explain", action="store_true", help="a table of each signal's weighted share of the score")
    search.add_argument("--bump-access", action="store_true", help="count this search in the frequency signal")
    mdel = cmd(msub, "delete", "erase memories (a tombstone keeps them from coming back); delete_memory()")
    mdel.add_argument("--app", required=True, help="app name")
    mdel.add_argument("--user", required=True, help="user id")
    mdel.add_argument("memory_ids", metavar="MEMORY_ID", nargs="+", help="memory ids")
    _governance_commands(sub, msub, cmd, audited=(delete, mdel))
    cmd(msub, "reembed", "re-embed rows another model embedded, with a progress bar; reembed() + flush()")
    cmd(msub, "rebuild-index", "rebuild the HNSW vector index after bulk loads; rebuild_vector_index()")

    compact = cmd(sub, "compact", "compact one session now; compact_session()")
    compact.add_argument("session", metavar="SESSION", help="session id")
    compact.add_argument("--app", required=True, help="app name")
    compact.add_argument("--user", required=True, help="user id")
    compact.add_argument("--keep-last", type=int, help="KeepLastN policy: raw events left verbatim (default: the token policy)")
    compact.add_argument("--min-batch", type=int, default=20, help="with --keep-last: fewest events worth a summary")

    stats = cmd(sub, "stats", "sessions, users, events, tokens and memories per app; stats()")
    stats.add_argument("--app", help="only this app")
    stats.add_argument("--json", action="store_true", help="one JSON line per app instead of a table")

    db = sub.add_parser("db", help="schema migrations (Alembic, bundled)")
    dbsub = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = cmd(dbsub, "upgrade", "migrate to the newest schema (no-op when current)")
    up.add_argument("--revision", default="head", help="target revision (default: head)")
    down = cmd(dbsub, "downgrade", "revert the schema to REVISION ('base' drops our tables and their data)")
    down.add_argument("revision", metavar="REVISION")
    down.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    cmd(dbsub, "current", "print the schema revision")
    cmd(dbsub, "check", "exit 0 when the schema is at head, else 1 with the command to run")
    stamp = cmd(dbsub, "stamp", "record REVISION as current without migrating (a schema made by hand)")
    stamp.add_argument("revision", metavar="REVISION")
    # --url is accepted like everywhere (scripts pass it to every command); these read the package, not the database.
    cmd(dbsub, "history", "the revisions this package ships, newest first")
    cmd(dbsub, "heads", "the newest revision this package ships")

    imp = cmd(sub, "import-adk", "copy sessions, events and state from ADK's DatabaseSessionService (re-runnable); import_adk()")
    imp.add_argument("--from", dest="source", required=True, metavar="ADK_URL",
                     help="ADK's database URL, e.g. sqlite+aiosqlite:///sessions.db")
    imp.add_argument("--app", help="import only this app")
    imp.add_argument("--redact", action="store_true",
                     help="redact state and events with the built-in rules as they are imported (RedactionPolicy())")

    init = cmd(sub, "adk-init", "write AGENTS_DIR/services.py so `adk web` / `adk api_server` know seekdb:// and oceanbase://")
    init.add_argument("agents_dir", metavar="AGENTS_DIR", help="the agents directory you pass to adk web / adk api_server")

    gc = cmd(sub, "gc", "delete sessions, memories and audit rows older than their TTL, in bounded batches; governance.sweep()")
    gc.add_argument("--app", action="append", help="only this app (repeatable; default: every app)")
    gc.add_argument("--session-ttl", help="delete sessions the server has not written for this long, e.g. 30d, 12h")
    gc.add_argument("--memory-ttl", help="delete memories neither stored nor served by a search for this long, e.g. 180d")
    gc.add_argument("--audit-ttl", help="delete audit_log rows older than this, e.g. 400d (default: keep them)")
    gc.add_argument("--dry-run", action="store_true", help="count what would be deleted; delete nothing")
    gc.add_argument("--audit", action="store_true", help="record each deleting batch in audit_log (retention_sweep)")
    gc.add_argument("--json", action="store_true", help="one JSON line with the counts instead of a sentence")
    return p


def _audit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--audit", action="store_true",
                        help="record the operation in audit_log (also: ADK_OCEANBASE_AUDIT=1)")
    parser.add_argument("--actor", help="who acts, for audit_log.actor (default: cli:<os user>)")


def _governance_commands(sub, msub, cmd, *, audited: Sequence[argparse.ArgumentParser]) -> None:
    """Erasure, opt-out and taint marks (issue 33): the governance API, one command per method."""
    users = sub.add_parser("users", help="erase a user's data").add_subparsers(dest="action", required=True, metavar="ACTION")
    erase = cmd(users, "delete", "erase every row of one user of one app (audit history kept); delete_user_data()")
    erase.add_argument("user", metavar="USER", help="user id")
    erase.add_argument("--app", required=True, help="app name")
    erase.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    opt_out = cmd(msub, "opt-out", "stop remembering a user (sessions keep working); set_memory_opt_out()")
    opt_out.add_argument("--purge", action="store_true", help="also delete every memory the user has")
    opt_in = cmd(msub, "opt-in", "remember a user again; set_memory_opt_out(opted_out=False)")
    taint = cmd(msub, "taint", "mark memories as possibly poisoned: never returned; mark_tainted()")
    taint.add_argument("memory_ids", metavar="MEMORY_ID", nargs="+", help="memory ids")
    taint.add_argument("--user", required=True, help="user id")
    taint.add_argument("--clear", action="store_true", help="clear the mark instead")
    for c in (opt_out, opt_in):
        c.add_argument("user", metavar="USER", help="user id")
    for c in (opt_out, opt_in, taint):
        c.add_argument("--app", required=True, help="app name")
    for c in (*audited, erase, opt_out, opt_in, taint):
        _audit_flags(c)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from . import _commands

    try:
        return asyncio.run(_commands.run(args))
    except _NOT_FOUND as exc:
        print(f"adk-oceanbase: {exc}", file=sys.stderr)
        return 1
    except AdkOceanBaseError as exc:
        print(f"adk-oceanbase: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("adk-oceanbase: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
