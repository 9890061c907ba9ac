"""What commands open: the database at ``--url`` and the services on it, closed afterwards; auditing settings.

No SQL here: every read and write is a method of the session or memory
service, :mod:`adk_oceanbase.migrations` or :mod:`adk_oceanbase.governance`.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator

from .output import spinner

if TYPE_CHECKING:
    from ..audit import AuditSettings
    from ..config import Config
    from ..engine import Database

__all__ = ["actor", "audit_settings", "config", "database", "model_ready", "open_services"]

_TRUE = ("1", "true", "yes", "on")


def database(args: argparse.Namespace, *, create: bool = False) -> Database:
    """The command's database; only the commands meant to create one (``db upgrade``, ``import-adk``) pass ``create``.

    Elsewhere a missing database is a mistyped URL: ``DatabaseNotFoundError``
    (exit 1) instead of a new 220 MB seekdb directory (issue 24).
    """
    from ..engine import Database

    return Database(config(args), create=create)


def config(args: argparse.Namespace) -> Config:
    """``--url`` (else ``ADK_OCEANBASE_URL``) with the command's ``--timeout`` (registry.SETUP_TIMEOUT / MAINTENANCE_TIMEOUT)."""
    from ..config import Config

    overrides = {k: getattr(args, k) for k in ("setup_timeout_s", "maintenance_timeout_s") if getattr(args, k, None) is not None}
    return Config.from_url(args.url, **overrides) if args.url else Config.from_env(**overrides)


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
    from ..audit import AuditSettings

    on = getattr(args, "audit", False) or os.environ.get("ADK_OCEANBASE_AUDIT", "").strip().lower() in _TRUE
    return AuditSettings(actor=actor(args)) if on else None


@asynccontextmanager
async def open_services(
    args: argparse.Namespace, *, memory: bool = False, background: bool = False, create: bool = False,
    redaction: Any = None,
) -> AsyncIterator[Any]:
    """One :class:`Database` shared by the session (and memory) service; everything closed afterwards."""
    from ..sessions import OceanBaseSessionService

    db = database(args, create=create)
    audit = audit_settings(args)  # --audit / ADK_OCEANBASE_AUDIT, on the commands that take it
    sessions = OceanBaseSessionService(database=db, audit=audit, redaction=redaction)
    mem = None
    if memory:
        from ..memory import MemorySettings, OceanBaseMemoryService

        # Reading and maintenance load no model and embed no backlog (MemorySettings.background_start).
        mem = OceanBaseMemoryService(database=db, settings=MemorySettings(background_start=background), audit=audit)
    try:
        yield sessions, mem
    finally:
        try:
            if mem is not None:
                await mem.close()
            await sessions.close()
        finally:
            await db.close()


async def model_ready(memory: Any) -> None:
    """Loads the embedding model with a spinner, then says how long it took (stderr)."""
    emb = memory.embedder
    if getattr(emb, "loaded", True):
        return
    emb.start_loading()
    with spinner(f"loading embedding model {emb.model_name} ..."):
        while not await asyncio.to_thread(emb.wait_loaded, 0.2):
            pass
    print(f"embedding model {emb.model_name}: {emb.status}", file=sys.stderr)
