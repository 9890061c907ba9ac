"""What each ``adk-oceanbase`` command does: one function per command, its flags declared beside it.

Importing this package fills :data:`.registry.COMMANDS`, in the order the
modules are imported here (the order of ``adk-oceanbase --help``).  No SQL
anywhere in it: every read and write is a method of the session or memory
service, :mod:`adk_oceanbase.migrations` or :mod:`adk_oceanbase.governance`.
"""

from . import adk, sessions, turns, memory, governance, maintenance, db, selftest  # noqa: F401  (registration order)
from .registry import COMMANDS, GROUPS, Command

__all__ = ["COMMANDS", "GROUPS", "Command"]
