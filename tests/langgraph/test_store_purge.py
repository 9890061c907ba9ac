"""A Store item's field memories go when its last link goes (delete, overwrite, TTL sweep), in the same
transaction, and a concurrent put of the same text still ends indexed; on seekdb and MariaDB."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.store.base")

from sqlalchemy import text  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseStore  # noqa: E402
from adk_oceanbase.memory import HashEmbedder  # noqa: E402

_HASH = HashEmbedder()
INDEX = {"dims": 384, "embed": lambda texts: _HASH.embed(texts).tolist(), "fields": ["text"]}
APP = "lg-purge"


async def scalar(db, sql: str, **params) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar())


async def memories(db) -> int:
    return await scalar(db, "SELECT COUNT(*) FROM agent_memories WHERE app_name = :a", a=APP)


async def postings(db) -> int:
    return await scalar(db, "SELECT COUNT(*) FROM memory_terms WHERE app_name = :a", a=APP)


async def dangling_links(db) -> int:
    """Links whose memory row is gone: an item a search can no longer reach."""
    return await scalar(db, "SELECT COUNT(*) FROM lg_store_fields f WHERE f.app_name = :a AND NOT EXISTS ("
                            "SELECT 1 FROM agent_memories m WHERE m.app_name = f.app_name AND m.user_id = f.memory_user "
                            "AND m.memory_id = f.memory_id)", a=APP)


async def keys_found(store, query: str) -> list[str]:
    return sorted(h.key for h in await store.asearch(("docs",), query=query, limit=10) if h.score is not None)


@pytest.mark.parametrize("user_of", [None, lambda ns: "carol"], ids=["shared-pool", "user-pool"])
async def test_the_last_link_going_deletes_the_memory_and_its_postings(engine_db, user_of) -> None:
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX, user_of=user_of) as store:
        await store.aput(("docs",), "a", {"text": "shared tea notes"})
        await store.aput(("docs", "other"), "b", {"text": "shared tea notes"})  # same text: one memory
        assert await memories(engine_db) == 1 and await postings(engine_db) > 0
        await store.adelete(("docs",), "a")
        assert await memories(engine_db) == 1  # b still links to it
        assert await keys_found(store, "shared tea notes") == ["b"]
        await store.adelete(("docs", "other"), "b")
        assert (await memories(engine_db), await postings(engine_db)) == (0, 0)
        # not a tombstone: the text comes back indexable
        await store.aput(("docs",), "c", {"text": "shared tea notes"})
        assert await keys_found(store, "shared tea notes") == ["c"]
        assert await memories(engine_db) == 1 and await postings(engine_db) > 0


async def test_an_overwrite_purges_the_old_text_and_keeps_the_same_text(engine_db) -> None:
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as store:
        await store.aput(("docs",), "a", {"text": "first version words"})
        await store.aput(("docs",), "a", {"text": "first version words", "n": 2})  # same text again
        assert await memories(engine_db) == 1 and await dangling_links(engine_db) == 0
        assert await keys_found(store, "first version words") == ["a"]
        await store.aput(("docs",), "a", {"text": "second version words"})
        assert await memories(engine_db) == 1
        assert await keys_found(store, "second version words") == ["a"]
        # one batch deleting an item and putting another with its text keeps the memory
        await store.abatch(_ops(("docs",), [("a", None), ("b", {"text": "second version words"})]))
        assert await memories(engine_db) == 1 and await dangling_links(engine_db) == 0
        assert await keys_found(store, "second version words") == ["b"]


async def expire(db, *keys: str) -> None:
    async with db.engine.begin() as conn:
        for key in keys:
            await conn.execute(text("UPDATE lg_store_items SET expires_at = DATE_SUB(UTC_TIMESTAMP(6), INTERVAL 1 MINUTE) "
                                    "WHERE app_name = :a AND item_key = :k"), {"a": APP, "k": key})


@pytest.mark.parametrize("sweeper", ["store", "gc"])
async def test_the_ttl_sweep_purges_what_only_expired_items_linked(engine_db, sweeper) -> None:
    from adk_oceanbase.governance import RetentionPolicy, sweep

    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as store:
        await store.aput(("docs",), "gone", {"text": "fleeting words"}, ttl=5)
        await store.aput(("docs",), "shared-gone", {"text": "lasting words"}, ttl=5)
        await store.aput(("docs",), "stays", {"text": "lasting words"})
        await expire(engine_db, "gone", "shared-gone")
        if sweeper == "store":
            assert await store.asweep_ttl() == 2
        else:
            assert (await sweep(engine_db, RetentionPolicy(), apps=[APP])).lg_store_items == 2
        assert await memories(engine_db) == 1 and await dangling_links(engine_db) == 0
        assert await keys_found(store, "lasting words") == ["stays"]
        assert await scalar(engine_db, "SELECT COUNT(*) FROM memory_terms t WHERE t.app_name = :a AND NOT EXISTS ("
                                       "SELECT 1 FROM agent_memories m WHERE m.app_name = t.app_name AND m.user_id = "
                                       "t.user_id AND m.memory_id = t.memory_id)", a=APP) == 0


async def test_a_put_whose_memory_is_purged_before_its_transaction_adds_it_again(engine_db) -> None:
    """The losing order made certain: the put's ``add_memory`` finds the memory, then a delete purges it."""
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as store:
        await store.aput(("docs",), "a", {"text": "contested words"})
        memory = store.memory
        added, purged = asyncio.Event(), asyncio.Event()
        real_add = memory.add_memory
        calls = []

        async def add_then_wait(**kw):
            await real_add(**kw)
            calls.append(kw["memories"][0].id)
            if len(calls) == 1:
                added.set()
                await purged.wait()

        memory.add_memory = add_then_wait  # our object, the real database: the gap made to last
        try:
            put = asyncio.create_task(store.aput(("docs",), "b", {"text": "contested words"}))
            await added.wait()
            await store.adelete(("docs",), "a")
            assert await memories(engine_db) == 0  # purged: b's link is not written yet
            purged.set()
            await put
        finally:
            memory.add_memory = real_add
        assert len(calls) == 2  # added again after the lock found it gone
        assert await dangling_links(engine_db) == 0 and await memories(engine_db) == 1
        assert await keys_found(store, "contested words") == ["b"]


async def test_concurrent_deletes_and_puts_of_one_text_leave_no_dangling_link(engine_db) -> None:
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as one, \
            OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as two:
        for rnd in range(8):
            await one.aput(("docs",), "a", {"text": "raced words"})
            # a delete of the only item holding the text, against a put of a new item with it
            await asyncio.gather(one.adelete(("docs",), "a"), two.aput(("docs",), f"b{rnd}", {"text": "raced words"}))
            assert await dangling_links(engine_db) == 0, rnd
            assert await memories(engine_db) == 1, rnd
            await two.adelete(("docs",), f"b{rnd}")
            assert await memories(engine_db) == 0, rnd
        await one.aput(("docs",), "z", {"text": "raced words"})
        assert await keys_found(one, "raced words") == ["z"]


async def test_one_batch_overwriting_items_that_share_a_memory_purges_it_once_no_one_outside_links(engine_db) -> None:
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as store:
        await store.abatch(_ops(("docs",), [("a", {"text": "common words"}), ("b", {"text": "common words"}),
                                            ("c", {"text": "kept words"})]))
        await store.aput(("elsewhere",), "d", {"text": "kept words"})
        assert await memories(engine_db) == 2
        # a and b (the only links to "common words") and c (not the only link to "kept words") all change
        await store.abatch(_ops(("docs",), [("a", {"text": "fresh words"}), ("b", None), ("c", {"text": "fresh words"})]))
        # "fresh words" and "kept words": "common words" went, "kept words" stayed for d
        assert await memories(engine_db) == 2 and await dangling_links(engine_db) == 0
        assert sorted(h.key for h in await store.asearch(("elsewhere",), query="kept words")) == ["d"]
        assert await keys_found(store, "fresh words") == ["a", "c"]


async def test_a_batch_of_600_puts_fits_one_packet(engine_db) -> None:
    """The batch's purge is two statements whatever its size (one per item, each naming every kept id, was
    quadratic: 600 overwrites were ~35 MB of SQL, past the 16 MB packet limit)."""
    async with OceanBaseStore(database=engine_db, app_name=APP, index=INDEX) as store:
        await store.abatch(_ops(("docs",), [(f"k{i}", {"text": f"first text {i}"}) for i in range(600)]))
        await store.abatch(_ops(("docs",), [(f"k{i}", {"text": f"second text {i}"}) for i in range(600)]))
        assert await memories(engine_db) == 600 and await dangling_links(engine_db) == 0
        assert "k7" in await keys_found(store, "second text 7")


def _ops(ns, pairs):
    from langgraph.store.base import PutOp

    return [PutOp(ns, key, value) for key, value in pairs]
