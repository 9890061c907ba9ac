"""Index upkeep: the vectorizer starts bounded HNSW rebuild checks as vectors pile up (seekdb).

seekdb (OceanBase) only, on the ``database`` fixture: MySQL/MariaDB have no vector index
(``rebuild_vector_index`` answers ``False`` there, asserted in test_memory_service.py).
"""

from __future__ import annotations

import asyncio
import random
from datetime import datetime

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from sqlalchemy import text

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService
from adk_oceanbase.memory import queries as q
from adk_oceanbase.memory import search_sql as sq

APP = "app"
WORDS = "apple banana cherry hiking paris london kyoto dog cat piano guitar coffee tea sister nurse flight".split()
QUERIES = ["apple pie in paris", "sister is a nurse", "flight to kyoto", "coffee or tea", "dog and cat"]


def _entries(prefix: str, n: int, seed: int) -> list[MemoryEntry]:
    rng = random.Random(seed)
    return [
        MemoryEntry(id=f"{prefix}{i}", author="user", content=types.Content(parts=[types.Part.from_text(
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + f" {prefix}{i}")]))
        for i in range(n)
    ]


def _settings(**kw) -> MemorySettings:
    return MemorySettings(bump_access=False, consolidate=False, candidate_pool=40, **kw)


async def _ids(svc: OceanBaseMemoryService, user: str) -> list[list[str]]:
    return [[h.memory_id for h in await svc.search(APP, user, qu, top_k=10)] for qu in QUERIES]


async def test_stored_vectors_trigger_a_rebuild_and_search_stays_exact(database):
    # delta rate 0: the server rebuilds on every check, so the test sees real rebuilds
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(
        vector_search="ann", ef_search=200, index_upkeep_rows=30, index_upkeep_delta_rate=0.0))
    exact = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                   settings=_settings(vector_search="exact", index_upkeep_rows=None))
    try:
        await svc.add_memory(app_name=APP, user_id="u", memories=_entries("a", 80, 1))
        await svc.flush()
        await svc.vectorizer.upkeep.wait()
        stats = svc.vectorizer.upkeep.describe()
        assert stats["calls"] >= 1 and not stats["failed"], stats
        assert await _ids(svc, "u") == await _ids(exact, "u")
        assert not exact.vectorizer.upkeep.describe().get("calls")  # off: never called
    finally:
        await svc.close()
        await exact.close()


async def test_search_and_writes_during_a_rebuild(database):
    """Searches answer while a rebuild runs; rows written meanwhile are found by the index afterwards."""
    settings = _settings(vector_search="ann", ef_search=200, index_upkeep_rows=None, index_upkeep_delta_rate=0.0)
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=settings)
    exact = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(vector_search="exact"))
    try:
        await svc.add_memory(app_name=APP, user_id="u", memories=_entries("a", 120, 2))
        await svc.flush()
        upkeep = svc.vectorizer.upkeep
        rebuild = asyncio.create_task(upkeep.run())
        during = []
        while not rebuild.done() or not during:
            during.append(await _ids(svc, "u"))
            if len(during) == 1:
                await svc.add_memory(app_name=APP, user_id="u", memories=_entries("b", 40, 3))
                await svc.flush()
        assert await rebuild is True
        assert all(len(r) == 10 for ids in during for r in ids)
        after = await _ids(svc, "u")
        assert after == await _ids(exact, "u")
        assert any(m.startswith("b") for r in after for m in r)  # rows written during the rebuild
        assert upkeep.describe()["calls"] == 1 and not upkeep.describe()["failed"]
    finally:
        await svc.close()
        await exact.close()


async def test_one_check_at_a_time_and_off_switch(database):
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(index_upkeep_rows=10))
    off = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(index_upkeep_rows=None))
    try:
        await svc._engine()
        upkeep = svc.vectorizer.upkeep
        upkeep.stored(10)
        assert upkeep.running
        upkeep.stored(10)  # due again while the first still runs: skipped, not doubled
        assert upkeep.describe()["skipped_busy"] == 1
        await upkeep.wait()
        assert upkeep.describe()["calls"] == 1
        upkeep.stored(1)  # the skipped rows still count: the next store starts the check
        assert upkeep.running
        await upkeep.wait()
        assert upkeep.describe()["calls"] == 2
        upkeep.stored(9)
        assert not upkeep.running  # below index_upkeep_rows
        await off._engine()
        off.vectorizer.upkeep.stored(10**6)
        assert not off.vectorizer.upkeep.running
    finally:
        await svc.close()
        await off.close()


async def _stats_state(database) -> tuple:
    async with database.engine.connect() as conn:
        row = (await conn.execute(q.TABLE_STATS_STATE)).first()
    return (None, None) if row is None else tuple(row)


async def _ann_estimate(database, user: str) -> int:
    """The optimizer's row estimate for the ANN candidate scan, in the service's own statement."""
    s = _settings(vector_search="ann")
    stmt, params = sq.hybrid_search(
        app_name=APP, user_id=user, query_vector="x", query_text="", embedding_model=HashEmbedder().model_name,
        now=datetime(2030, 1, 1), top_k=10, weights=s.weights, settings=s, approximate=True)
    async with database.engine.connect() as conn:
        await conn.execute(*sq.bind_query_vector("[" + ",".join(["0.1"] * HashEmbedder().dim) + "]", 200))
        lines = [r[0] for r in (await conn.execute(text("EXPLAIN " + stmt.text), params)).all()]
    line = next(line for line in lines if "VECTOR INDEX" in line)
    return int(line.split("|")[4])


async def test_upkeep_gathers_missing_statistics_once(database):
    """Without statistics the optimizer believes a user owns ~1 row (and at 100k plans the ANN list as an
    exact pre-filter scan, ``queries.GATHER_TABLE_STATS``); the upkeep check gathers them."""
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(index_upkeep_rows=None))
    try:
        await svc.add_memory(app_name=APP, user_id="big", memories=_entries("a", 300, 4))
        await svc.flush()
        async with database.engine.connect() as conn:
            await conn.execute(text("CALL DBMS_STATS.DELETE_TABLE_STATS(DATABASE(), 'agent_memories')"))
        assert (await _stats_state(database))[0] is None
        assert await _ann_estimate(database, "big") < 100  # a guess (39 here, 1 at 100k rows)

        upkeep = svc.vectorizer.upkeep
        assert await upkeep.run() is True
        assert upkeep.describe()["stats_gathered"] == 1 and not upkeep.describe()["stats_failed"]
        analysed, stale = await _stats_state(database)
        assert analysed is not None and stale == "NO"
        assert await _ann_estimate(database, "big") >= 250  # the user's 300 rows

        assert await upkeep.run() is True  # fresh statistics are left alone
        assert upkeep.describe()["stats_gathered"] == 1
        async with database.engine.connect() as conn:  # rebuild_vector_index() after a bulk load always gathers
            assert await upkeep.refresh_statistics(conn, force=True) is True
        assert upkeep.describe()["stats_gathered"] == 2
    finally:
        await svc.close()


async def test_a_failed_statistics_gather_is_counted_not_raised(database, monkeypatch):
    """No DBMS_STATS privilege (simulated by a failing call): the rebuild check still succeeds."""
    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(index_upkeep_rows=None))
    try:
        await svc._engine()
        monkeypatch.setattr(q, "GATHER_TABLE_STATS", text("CALL DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), 'no_such_table')"))
        upkeep = svc.vectorizer.upkeep
        async with database.engine.connect() as conn:
            assert await upkeep.refresh_statistics(conn, force=True) is False
            assert (await conn.execute(text("SELECT 1"))).scalar() == 1  # the connection is still usable
        assert upkeep.describe()["stats_failed"] == 1 and not upkeep.describe()["stats_gathered"]
        assert await svc.rebuild_vector_index() is True  # the rebuild does not depend on the statistics
    finally:
        await svc.close()


async def test_a_check_runs_under_its_own_timeout_and_hands_back_the_pools(database):
    """The rebuild statement runs under ``index_upkeep_timeout_s``; the connection returns with ``query_timeout_s``."""
    from sqlalchemy import event

    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(),
                                 settings=_settings(index_upkeep_rows=None, index_upkeep_timeout_s=123.5))
    sent: list[str] = []

    def record(_c, _cur, stmt, *_a) -> None:
        sent.append(" ".join(stmt.split()))

    try:
        await svc.add_memory(app_name=APP, user_id="t", memories=_entries("a", 5, 6))
        await svc.flush()
        event.listen(database.engine.sync_engine, "before_cursor_execute", record)
        try:
            assert await svc.vectorizer.upkeep.run() is True
        finally:
            event.remove(database.engine.sync_engine, "before_cursor_execute", record)
        timeouts = [s for s in sent if "ob_query_timeout" in s]
        pool_us = int(database.config.query_timeout_s * 1_000_000)
        assert timeouts == ["SET ob_query_timeout = 123500000", f"SET ob_query_timeout = {pool_us}"]
        assert sent.index(timeouts[0]) < min(i for i, s in enumerate(sent) if "REBUILD_INDEX" in s) < sent.index(timeouts[1])
    finally:
        await svc.close()


async def test_no_upkeep_where_the_engine_has_no_vector_index(mariadb_database):
    """MySQL/MariaDB score vectors without an index: storing vectors starts no rebuild check."""
    svc = OceanBaseMemoryService(database=mariadb_database, embedder=HashEmbedder(),
                                 settings=_settings(index_upkeep_rows=2))
    try:
        await svc.add_memory(app_name=APP, user_id="m", memories=_entries("a", 12, 7))
        await svc.flush()
        assert svc.vectorizer.stats["embedded"] >= 12
        described = svc.vectorizer.upkeep.describe()
        assert not described["running"] and not described["calls"] and described["rows_since_last"] == 0
    finally:
        await svc.close()


async def test_close_during_a_check_drops_its_connection_and_logs_no_failure(database, monkeypatch, caplog):
    """``close`` while the rebuild statement runs: no "failed" warning, no count, and the pool stays usable.

    The rebuild is replaced by a statement the server takes seconds over (``SLEEP``) so that
    the cancel lands while the connection waits for its answer, as a real rebuild's would.
    """
    import logging

    svc = OceanBaseMemoryService(database=database, embedder=HashEmbedder(), settings=_settings(index_upkeep_rows=1))
    try:
        await svc._engine()
        monkeypatch.setattr(q, "rebuild_vector_index", lambda _rate: text("SELECT SLEEP(3)"))
        upkeep = svc.vectorizer.upkeep
        upkeep.stored(1)  # as the vectorizer does after storing a vector
        assert upkeep.running
        for _ in range(200):  # until the server runs it
            async with database.engine.connect() as conn:
                rows = (await conn.execute(text("SHOW FULL PROCESSLIST"))).all()
            if any("SLEEP(3)" in str(r) and "PROCESSLIST" not in str(r) for r in rows):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the stand-in rebuild never started")
        with caplog.at_level(logging.WARNING, logger="adk_oceanbase.memory.index_upkeep"):
            await asyncio.wait_for(upkeep.close(), 2.0)  # not after the statement's 3 s
        assert not [r for r in caplog.records if "failed" in r.getMessage()], caplog.text
        assert not upkeep.describe()["failed"] and not upkeep.describe()["running"]
        pool_us = int(database.config.query_timeout_s * 1_000_000)
        for _ in range(3):  # whatever the pool hands out now has the configured timeout
            async with database.engine.connect() as conn:
                assert (await conn.execute(text("SELECT @@ob_query_timeout"))).scalar() == pool_us
    finally:
        await svc.close()
