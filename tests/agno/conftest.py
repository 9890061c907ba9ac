"""Fixtures for the Agno database tests: Agno's own ``SqliteDb`` (the reference) beside ours, on each engine."""

from __future__ import annotations

from typing import Any, AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("agno")

from agno.db.sqlite import SqliteDb  # noqa: E402

from adk_oceanbase.agno import AsyncOceanBaseAgnoDb  # noqa: E402
from adk_oceanbase.memory import HashEmbedder, MemorySettings  # noqa: E402

FAST = MemorySettings(retry_base_s=0.01, batch_wait_s=0.0)


@pytest_asyncio.fixture
async def ours(engine_db) -> AsyncIterator[AsyncOceanBaseAgnoDb]:
    """Our async Agno database on the test's engine (``[seekdb]`` / ``[mariadb]``), HashEmbedder for speed."""
    db = AsyncOceanBaseAgnoDb(database=engine_db, embedder=HashEmbedder(), memory_settings=FAST)
    yield db
    await db.aclose()


@pytest.fixture
def reference(tmp_path) -> SqliteDb:
    """Agno's own SQL database on a fresh SQLite file: what the contract compares against."""
    return SqliteDb(db_file=str(tmp_path / "agno.db"))


class Pair:
    """Runs one call on Agno's ``SqliteDb`` and on ours; returns both results."""

    def __init__(self, ref: SqliteDb, db: AsyncOceanBaseAgnoDb):
        self.ref, self.db = ref, db

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        expected = getattr(self.ref, method)(*args, **kwargs)  # SQLite, in this thread (its connections are per thread)
        got = await getattr(self.db, method)(*args, **kwargs)
        return expected, got


@pytest.fixture
def both(reference, ours) -> Pair:
    return Pair(reference, ours)
