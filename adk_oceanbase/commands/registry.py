"""The command table: each ``adk-oceanbase`` command is one function, registered with its flags beside it.

``@command("sessions show", "help", flag("--app", ...), ...)`` above an
``async def`` is the whole declaration; :func:`adk_oceanbase.cli.build_parser`
turns the table into argparse parsers (so flags, messages and exit codes stay
argparse's), and ``docs/cli.md`` is generated from the same parsers
(:mod:`.reference`).  The registration order is the order of ``--help``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

__all__ = [
    "AUDIT_FLAGS", "COMMANDS", "GROUPS", "MAINTENANCE_TIMEOUT", "SETUP_TIMEOUT", "Command", "Flag", "command", "flag", "group",
]

Handler = Callable[[argparse.Namespace], Awaitable[int]]


@dataclass(frozen=True)
class Flag:
    """One ``add_argument`` call: the option strings (or the positional's name) and its keywords."""

    names: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(*self.names, **self.options)


@dataclass(frozen=True)
class Command:
    """A leaf command: its words (``("memory", "search")``), help line, flags and handler."""

    path: tuple[str, ...]
    help: str
    flags: tuple[Flag, ...]
    run: Handler


COMMANDS: list[Command] = []
"""Every command, in registration order (the modules of this package fill it on import)."""

GROUPS: dict[str, str] = {}
"""Command groups (``sessions``, ``memory``, ``db``, ``users``) and their help lines."""


def flag(*names: str, **options: Any) -> Flag:
    """An argument of a command, with ``argparse.add_argument``'s keywords."""
    return Flag(names, options)


AUDIT_FLAGS = (
    flag("--audit", action="store_true", help="record the operation in audit_log (also: ADK_OCEANBASE_AUDIT=1)"),
    flag("--actor", help="who acts, for audit_log.actor (default: cli:<os user>)"),
)
"""The flags of every command that writes ``audit_log`` rows (erasure, opt-out, taint, deletes)."""

SETUP_TIMEOUT = flag(
    "--timeout", dest="setup_timeout_s", type=float, metavar="SECONDS",
    help="the longest the migration may take, DDL and data backfills included (Config.setup_timeout_s; default 600)",
)
"""``--timeout`` of the schema commands: ``Config.setup_timeout_s`` for this run."""

MAINTENANCE_TIMEOUT = flag(
    "--timeout", dest="maintenance_timeout_s", type=float, metavar="SECONDS",
    help="server-side statement timeout of this maintenance run (Config.maintenance_timeout_s; default 3600)",
)
"""``--timeout`` of the long maintenance commands: ``Config.maintenance_timeout_s`` for this run."""


def group(name: str, help_: str) -> None:
    """Declares a command group, before its first command."""
    GROUPS.setdefault(name, help_)


def command(name: str, help_: str, *flags: Flag) -> Callable[[Handler], Handler]:
    """Registers the decorated handler as the command ``name`` (words separated by spaces).

    Every command also takes ``--url`` (added by the parser builder); the
    handler gets the parsed namespace and returns the exit code.
    """

    def register(run: Handler) -> Handler:
        path = tuple(name.split())
        if len(path) > 1 and path[0] not in GROUPS:
            raise ValueError(f"command {name!r}: declare group {path[0]!r} first")
        COMMANDS.append(Command(path, help_, flags, run))
        return run

    return register
