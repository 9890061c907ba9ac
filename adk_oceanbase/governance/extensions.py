"""Other packages' shares of erasure and retention, registered from above.

Governance sits below the packages that keep per-user data of their own
(procedural memory's runs and aggregates): it cannot import them without an
import circle, so each registers what erasing a user or expiring data means
for its tables, and the package root (``adk_oceanbase/__init__.py``) wires
them in, as it wires compaction into the session service.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["AppsQuery", "RetentionSweep", "UserEraser", "register_retention_sweep", "register_user_eraser",
           "retention_apps", "retention_sweeps", "user_erasers"]

UserEraser = Callable[[AsyncConnection, str, str], Awaitable[int]]
"""``(conn, app, user) -> rows removed``: runs inside the erasure's transaction, before the user's rows go."""

RetentionSweep = Callable[..., Awaitable[int]]
"""``(db, app, cutoff, *, batch, dry_run, audit) -> rows removed`` (or that would be, on a dry run)."""

AppsQuery = Callable[[], Select]
"""Builds a one-column ``SELECT`` of the app names a share has rows for."""

_erasers: dict[str, UserEraser] = {}
_sweeps: dict[str, RetentionSweep] = {}
_apps: dict[str, AppsQuery] = {}


def register_user_eraser(count_key: str, eraser: UserEraser) -> None:
    """``delete_user_data`` runs ``eraser`` and reports what it returns under ``count_key``."""
    _erasers[count_key] = eraser


def register_retention_sweep(field: str, sweep: RetentionSweep, apps: AppsQuery | None = None) -> None:
    """``gc`` runs ``sweep`` with each app's memory cutoff and adds its count to ``SweepCounts.<field>``.

    ``apps`` names the apps the share has rows for: a sweep without ``apps=``
    visits them too, so rows of an app with no sessions or memories left
    (procedural runs outliving their sessions) still expire.
    """
    _sweeps[field] = sweep
    if apps is not None:
        _apps[field] = apps


def user_erasers() -> dict[str, UserEraser]:
    return dict(_erasers)


def retention_sweeps() -> dict[str, RetentionSweep]:
    return dict(_sweeps)



def retention_apps() -> list[Select]:
    return [build() for build in _apps.values()]
