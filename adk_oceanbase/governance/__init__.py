"""Data governance: retention TTLs, erasure of a user, memory opt-out and poisoning guards, the debug archive.

The memory opt-out and taint marks are methods of ``OceanBaseMemoryService``;
``delete_user_data`` and the debug archive's queries are methods of
``OceanBaseSessionService`` as well as the functions here.
"""

from .debug_archive import DebugArchiveSettings, DebugEntry
from .erasure import delete_user_data
from .retention import Retention, RetentionPolicy, RetentionWorker, SweepCounts, parse_duration, sweep

__all__ = [
    "DebugArchiveSettings",
    "DebugEntry",
    "Retention",
    "RetentionPolicy",
    "RetentionWorker",
    "SweepCounts",
    "delete_user_data",
    "parse_duration",
    "sweep",
]
