"""The one retry helper: what may be re-run, how often and with what pause, said at each call site.

Below everything that does I/O (it imports nothing of the package), so the
engine's own start-up and the setup lock use it as well as :mod:`.gateway`,
which re-exports it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, TypeVar

__all__ = ["retrying"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


async def retrying(
    work: Callable[[], Awaitable[T]],
    *,
    when: Callable[[BaseException], bool],
    attempts: int = 2,
    pause_s: Callable[[int], float] | None = None,
    what: str = "a database call",
) -> T:
    """Runs ``work()``; while it fails with an error ``when`` accepts, runs it again, ``attempts`` runs in all.

    Only for work whose re-run is harmless: a read, an idempotent write, or
    a transaction the server rolled back (a deadlock victim).  ``pause_s(n)``
    is the pause after the ``n``-th failed run (none by default).  The last
    run's error, or any error ``when`` refuses, is raised unchanged.
    """
    attempt = 1
    while True:
        try:
            return await work()
        except Exception as exc:
            if attempt >= attempts or not when(exc):
                raise
            logger.info("%s failed (%s); running it again (%d of %d)", what, type(exc).__name__, attempt + 1, attempts)
        if pause_s is not None:
            await asyncio.sleep(pause_s(attempt))
        attempt += 1
