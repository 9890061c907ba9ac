"""Connections KILLed under the vectorizer: typed errors or a recovered round, never a raw driver exception (issue #25).

The vectorizer works in the background, so what it meets is seen in two
places: the error it logs for a failed round, and the rows' final status.  A
connection killed while the model runs is set aside at checkout (the round
stores its vectors); one killed just before the round's vector UPDATE fails
that round with a typed :class:`ConnectionLostError`, and the next round
embeds the rows.
"""

from __future__ import annotations

import logging
from typing import Any

import pymysql
import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from adk_oceanbase.errors import AdkOceanBaseError, ConnectionLostError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

APP, USER = "kill", "u"
SETTINGS = dict(retry_base_s=0.01, batch_wait_s=0.0, retry_interval_s=0.0, bump_access=False)


def entries(n: int) -> list[MemoryEntry]:
    return [MemoryEntry(content=types.Content(parts=[types.Part.from_text(text=f"fact {i} about topic {i * 7}")]))
            for i in range(n)]


def kill_all(db: Any) -> int:
    """KILLs every connection of ``db``'s database from an admin connection of its own; returns how many."""
    url = db.engine.url
    admin = pymysql.connect(host=url.host, port=url.port, user=url.username, password=url.password or "", autocommit=True)
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            mine = cur.fetchone()[0]
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> %s", (url.database, mine))
            ids = [r[0] for r in cur.fetchall()]
            for pid in ids:
                try:
                    cur.execute(f"KILL {int(pid)}")
                except pymysql.err.MySQLError:
                    pass  # it went away by itself
        return len(ids)
    finally:
        admin.close()


class KillingEmbedder(HashEmbedder):
    """Kills every connection of the database during its first call (in the vectorizer's worker thread)."""

    def __init__(self, db: Any):
        super().__init__()
        self.db = db
        self.killed = 0

    def embed(self, texts):
        if not self.killed:
            self.killed = kill_all(self.db)
        return super().embed(texts)


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


async def statuses(db: Any) -> dict[str, int]:
    async with db.engine.connect() as conn:
        return dict((await conn.execute(text("SELECT embed_status, COUNT(*) FROM agent_memories GROUP BY embed_status"))).all())


def logged_errors(caplog: pytest.LogCaptureFixture) -> list[BaseException]:
    return [r.exc_info[1] for r in caplog.records if r.exc_info and r.exc_info[1] is not None]


async def test_connections_killed_while_the_model_embeds_are_set_aside(db: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="adk_oceanbase")
    emb = KillingEmbedder(db)
    svc = OceanBaseMemoryService(database=db, embedder=emb, settings=MemorySettings(**SETTINGS))
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries(4))
        await svc.flush()
        assert emb.killed > 0, "the test must have killed the pool's connections"
        assert await statuses(db) == {"ready": 4}
        assert all(isinstance(e, AdkOceanBaseError) for e in logged_errors(caplog)), logged_errors(caplog)
    finally:
        await svc.close()


async def test_a_connection_killed_before_the_vector_update_fails_the_round_typed(
    db: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adk_oceanbase")
    svc = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(**SETTINGS))
    killed: list[int] = []

    def kill_before_store(conn, cursor, statement, parameters, context, executemany) -> None:
        if not killed and statement.lstrip().startswith("UPDATE") and "embed_status = 'ready'" in statement:
            killed.append(kill_all(db))  # this very connection included: its UPDATE meets a closed socket

    event.listen(db.engine.sync_engine, "before_cursor_execute", kill_before_store)
    try:
        await svc.add_memory(app_name=APP, user_id=USER, memories=entries(3))
        await svc.flush()
        assert killed and killed[0] > 0, "the test must have killed the storing connection"
        errors = logged_errors(caplog)
        assert errors, "the killed round must have failed"
        raw = [e for e in errors if not isinstance(e, AdkOceanBaseError) or isinstance(e, DBAPIError)]
        assert raw == []
        assert any(isinstance(e, ConnectionLostError) for e in errors), errors
        assert await statuses(db) == {"ready": 3}  # the next round stored them
        # and the public calls that write outside a round still work on the pool the KILL emptied
        kill_all(db)
        assert await svc.vectorizer.retry_failed() == 0
        kill_all(db)
        assert await svc.reembed() == 0
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", kill_before_store)
        await svc.close()
