"""What the governance attack tests share: every table read directly with SQL, a redactor that holds writers."""

from __future__ import annotations

import asyncio
from typing import Sequence

from sqlalchemy import text

from adk_oceanbase.engine import Database
from adk_oceanbase.governance.guard import user_key
from adk_oceanbase.redaction import Redactor


async def rows_of(db: Database, app: str | None, user: str) -> dict[str, int]:
    """The user's rows in every base table with a ``user_id`` column (exact, binary match); ``app=None``: in any app."""
    async with db.engine.connect() as conn:
        tables = (await conn.execute(text(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = DATABASE() AND t.table_type = 'BASE TABLE' AND c.column_name = 'user_id'"
        ))).scalars().all()
        out = {}
        for table in sorted(tables):
            in_app = "" if app is None else "app_name = :a AND "
            n = (await conn.execute(
                text(f"SELECT COUNT(*) FROM {table} WHERE {in_app}CAST(user_id AS BINARY) = :u"),
                {"a": app, "u": user.encode()},
            )).scalar()
            out[table] = int(n)
    return out


async def generation_of(db: Database, app: str, user: str) -> int:
    """The user's write-guard generation (0 without a guard row)."""
    async with db.engine.connect() as conn:
        return int((await conn.execute(
            text("SELECT COALESCE(MAX(generation), 0) FROM memory_user_gen WHERE app_name = :a AND user_key = :k"),
            {"a": app, "k": user_key(user)},
        )).scalar())


class GateRedactor(Redactor):
    """Leaves texts alone, but holds every call until :meth:`release`: a memory write parked after it started.

    ``add_memory`` and ``add_events_to_memory`` read the user's generation,
    then redact, then write; a writer held here has started and not yet
    opened its transaction.
    """

    def __init__(self) -> None:
        self.arrived = 0
        self._gate = asyncio.Event()
        self._arrival = asyncio.Event()

    async def redact_many(self, texts: Sequence[str]) -> list[str]:
        self.arrived += 1
        self._arrival.set()
        await self._gate.wait()
        return list(texts)

    async def wait_for(self, n: int) -> None:
        while self.arrived < n:
            self._arrival.clear()
            await self._arrival.wait()

    def release(self) -> None:
        self._gate.set()
