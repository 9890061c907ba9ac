"""OceanBaseStore beyond the InMemoryStore contract: typed errors that write nothing, the sync API,
a namespace's user and its erasure (items, field links, field memories); on seekdb and MariaDB."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.store.base")

from sqlalchemy import text  # noqa: E402

from adk_oceanbase.errors import CheckpointTooLargeError, ConfigurationError, InvalidIdentifierError, InvalidValueError  # noqa: E402
from adk_oceanbase.governance import delete_user_data  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseStore  # noqa: E402
from adk_oceanbase.memory import HashEmbedder  # noqa: E402

_HASH = HashEmbedder()
INDEX = {"dims": 384, "embed": lambda texts: _HASH.embed(texts).tolist(), "fields": ["text"]}


async def rows(db, sql: str):
    async with db.engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(sql))).all()]


@pytest.mark.parametrize(
    "key, value, kw, error",
    [
        ("", {"v": 1}, {}, InvalidValueError),
        ("k" * 256, {"v": 1}, {}, InvalidValueError),
        ("k", ["not", "a", "dict"], {}, InvalidValueError),
        ("k", {"v": object()}, {}, InvalidValueError),
        ("k", {"v": "x" * 3000}, {}, CheckpointTooLargeError),
        ("k", {"v": 1}, {"ttl": -1}, InvalidValueError),
    ],
)
async def test_bad_puts_are_typed_errors_and_write_nothing(engine_db, key, value, kw, error) -> None:
    store = OceanBaseStore(database=engine_db, max_value_bytes=2000)
    with pytest.raises(error):
        await store.abatch([_put(("ns",), "fine", {"v": 0}), _put(("ns",), key, value, **kw)])
    assert await rows(engine_db, "SELECT COUNT(*) FROM lg_store_items") == [(0,)]


def _put(ns, key, value, **kw):
    from langgraph.store.base import PutOp

    return PutOp(ns, key, value, **kw)


async def test_index_dims_must_match_the_database(engine_db) -> None:
    with pytest.raises(ConfigurationError, match="384"):
        OceanBaseStore(database=engine_db, index={"dims": 1536, "embed": INDEX["embed"]})


async def test_sync_api_from_a_thread(engine_db) -> None:
    store = OceanBaseStore(database=engine_db)
    await store.aput(("s",), "a", {"v": 1})

    def sync_side():
        store.put(("s",), "b", {"v": 2})
        return store.get(("s",), "a").value, sorted(i.key for i in store.search(("s",))), store.list_namespaces()

    assert await asyncio.to_thread(sync_side) == ({"v": 1}, ["a", "b"], [("s",)])
    with pytest.raises(ConfigurationError, match="abatch"):
        store.get(("s",), "a")


async def test_a_users_namespaces_are_erased_with_their_field_memories(engine_db) -> None:
    store = OceanBaseStore(database=engine_db, app_name="lgs", index=INDEX, user_of=lambda ns: ns[1])
    try:
        await store.aput(("memories", "carol"), "m1", {"text": "carol likes green tea"})
        await store.aput(("memories", "dave"), "m1", {"text": "dave likes black coffee"})
        assert [h.key for h in await store.asearch(("memories", "carol"), query="green tea")] == ["m1"]
        assert await rows(engine_db, "SELECT user_id, COUNT(*) FROM agent_memories WHERE app_name = 'lgs' "
                                     "GROUP BY user_id ORDER BY user_id") == [("carol", 1), ("dave", 1)]
        counts = await delete_user_data(engine_db, "lgs", "carol")
        assert counts["lg_store_items"] == 1 and counts["lg_store_fields"] == 1 and counts["agent_memories"] == 1
        assert await store.aget(("memories", "carol"), "m1") is None
        assert await store.asearch(("memories", "carol"), query="green tea") == []
        assert (await store.aget(("memories", "dave"), "m1")).value == {"text": "dave likes black coffee"}
        with pytest.raises(InvalidIdentifierError):
            await store.aput(("memories", "eve "), "m1", {"text": "x"})
    finally:
        await store.aclose()


async def test_from_conn_string_opens_and_closes(engine_migrated_url) -> None:
    async with OceanBaseStore.from_conn_string(engine_migrated_url, app_name="lg-cs") as store:
        await store.aput(("cs",), "k", {"v": 1})
        assert (await store.aget(("cs",), "k")).value == {"v": 1}
        await store.adelete(("cs",), "k")
    assert not store.database.started


async def test_near_identical_items_are_both_found(engine_db) -> None:
    """Items are records, not facts: the memory service must not merge one item's field into another's.

    Near-duplicate consolidation superseded the older field memory, so the
    older item vanished from semantic search (and each write paid a vector
    query per field).
    """
    store = OceanBaseStore(database=engine_db, index=INDEX)
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    await store.aput(("docs",), "first", {"text": base})
    await store.aput(("docs",), "second", {"text": base + " nu"})
    hits = await store.asearch(("docs",), query=base, limit=10)
    assert sorted(h.key for h in hits) == ["first", "second"]
    await store.aclose()


async def test_semantic_pages_are_the_same_with_and_without_a_value_filter(engine_db) -> None:
    """Without a filter the page is picked in the search's statement (each item once, by its best field);
    with one, in Python after the filter: a filter every item passes gives the same pages."""
    store = OceanBaseStore(database=engine_db, index={**INDEX, "fields": ["title", "body"]})
    words = "apple banana cherry date elder fig grape".split()
    for i in range(12):  # bodies repeat: items share field memories
        value = {"title": f"{words[i % 7]} {words[(i + 1) % 7]}", "body": f"{words[i * 3 % 7]} pie", "all": 1}
        await store.aput(("docs", f"s{i % 3}"), f"k{i}", value)
    await store.aput(("other",), "x", {"title": "apple banana", "body": "apple pie", "all": 1})
    for offset in (0, 2, 5):
        plain = await store.asearch(("docs",), query="apple pie", limit=4, offset=offset)
        filtered = await store.asearch(("docs",), query="apple pie", limit=4, offset=offset, filter={"all": 1})
        assert [(h.namespace, h.key) for h in plain] == [(h.namespace, h.key) for h in filtered]
        assert [h.score for h in plain] == pytest.approx([h.score for h in filtered])
        assert len({h.key for h in plain}) == len(plain) == 4 and all(h.namespace[0] == "docs" for h in plain)
        assert [h.score for h in plain] == sorted((h.score for h in plain), reverse=True)
    await store.aclose()
