"""The Store contract: the behaviours of LangGraph's InMemoryStore, run on it and on OceanBaseStore (seekdb, MariaDB).

Each test runs three times (``[inmemory]``, ``[seekdb]``, ``[mariadb]``); where
ours differs on purpose, the test says what the Postgres store does and marks
the in-memory store's run as a strict xfail (or ours, with the reason).
"""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import InvalidNamespaceError, MatchCondition  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseStore  # noqa: E402
from adk_oceanbase.memory import HashEmbedder  # noqa: E402

KINDS = ("inmemory", "seekdb", "mariadb")
_HASH = HashEmbedder()


def embed(texts: list[str]) -> list[list[float]]:
    return _HASH.embed(texts).tolist()


INDEX = {"dims": 384, "embed": embed, "fields": ["text"]}


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    return request.param


@pytest.fixture
def backend(request, kind):
    """The started, emptied ``Database`` of the engine under test (``None`` for the in-memory store)."""
    return None if kind == "inmemory" else request.getfixturevalue("database" if kind == "seekdb" else "mariadb_database")


def make(backend, **kw):
    if backend is None:
        kw.pop("ttl", None)
        return InMemoryStore(**kw)
    return OceanBaseStore(database=backend, **kw)


@pytest.fixture
async def opened(backend):
    """``opened(**kw)``: a store closed after the test (an open one's vectorizer would outlive it)."""
    stores = []

    def open_store(**kw):
        stores.append(make(backend, **kw))
        return stores[-1]

    yield open_store
    for s in stores:
        if isinstance(s, OceanBaseStore):
            await s.aclose()


@pytest.fixture
def store(opened):
    return opened()


def diverges(request, kind: str, on: str, why: str) -> None:
    if kind == on:
        request.node.add_marker(pytest.mark.xfail(reason=why, strict=True))


async def test_put_get_overwrite_delete(store) -> None:
    assert await store.aget(("docs",), "a") is None
    await store.aput(("docs",), "a", {"text": "one", "n": 1})
    got = await store.aget(("docs",), "a")
    assert (got.namespace, got.key, got.value) == (("docs",), "a", {"text": "one", "n": 1})
    await store.aput(("docs",), "a", {"text": "two"})
    assert (await store.aget(("docs",), "a")).value == {"text": "two"}
    await store.adelete(("docs",), "a")
    assert await store.aget(("docs",), "a") is None


async def test_search_is_by_namespace_prefix(store) -> None:
    await store.aput(("users", "u1", "notes"), "k1", {"v": 1})
    await store.aput(("users", "u1"), "k2", {"v": 2})
    await store.aput(("users", "u2"), "k3", {"v": 3})
    await store.aput(("users_x",), "k4", {"v": 4})
    await store.aput(("usersa",), "k5", {"v": 5})
    assert {i.key for i in await store.asearch(("users",))} == {"k1", "k2", "k3"}
    assert {i.key for i in await store.asearch(("users", "u1"))} == {"k1", "k2"}
    assert {i.key for i in await store.asearch(("users", "u1", "notes", "deeper"))} == set()
    assert {i.key for i in await store.asearch(())} == {"k1", "k2", "k3", "k4", "k5"}


async def test_search_filters_values(store) -> None:
    await store.aput(("f",), "a", {"kind": "fruit", "n": 3, "meta": {"colour": "red", "size": 2}, "tags": ["x", "y"]})
    await store.aput(("f",), "b", {"kind": "fruit", "n": 7, "meta": {"colour": "green"}, "tags": ["x"]})
    await store.aput(("f",), "c", {"kind": "veg", "n": 5, "flag": True})
    keys = lambda items: {i.key for i in items}  # noqa: E731
    assert keys(await store.asearch(("f",), filter={"kind": "fruit"})) == {"a", "b"}
    assert keys(await store.asearch(("f",), filter={"kind": "fruit", "n": 7})) == {"b"}
    assert keys(await store.asearch(("f",), filter={"meta": {"colour": "red"}})) == {"a"}
    assert keys(await store.asearch(("f",), filter={"tags": ["x"]})) == {"b"}
    assert keys(await store.asearch(("f",), filter={"n": {"$gt": 4}})) == {"b", "c"}
    assert keys(await store.asearch(("f",), filter={"n": {"$lte": 5}, "kind": {"$ne": "veg"}})) == {"a"}
    assert keys(await store.asearch(("f",), filter={"flag": True})) == {"c"}
    assert keys(await store.asearch(("f",), filter={"missing": 1})) == set()


async def test_search_pages_with_limit_and_offset(store) -> None:
    for i in range(7):
        await store.aput(("p",), f"k{i}", {"i": i, "kind": "x"})
    for flt in (None, {"kind": "x"}, {"i": {"$gte": 0}}):
        pages = [await store.asearch(("p",), filter=flt, limit=3, offset=o) for o in (0, 3, 6)]
        assert [len(p) for p in pages] == [3, 3, 1]
        assert {i.key for p in pages for i in p} == {f"k{i}" for i in range(7)}


async def test_list_namespaces(store) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c"), ("a_",)]:
        await store.aput(ns, "k", {"v": 1})
    assert await store.alist_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert await store.alist_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert await store.alist_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert await store.alist_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "e")]
    assert await store.alist_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]
    got = await store.abatch([store_list_op(("a",), ("c",))])
    assert got == [[("a", "b", "c")]]


def store_list_op(prefix, suffix):
    from langgraph.store.base import ListNamespacesOp

    return ListNamespacesOp(match_conditions=(MatchCondition("prefix", prefix), MatchCondition("suffix", suffix)))


async def test_a_batch_reads_before_it_writes(store) -> None:
    from langgraph.store.base import GetOp, PutOp

    results = await store.abatch([
        PutOp(("b",), "k", {"v": 1}), GetOp(("b",), "k"), PutOp(("b",), "k", {"v": 2}),
    ])
    assert results == [None, None, None]
    assert (await store.aget(("b",), "k")).value == {"v": 2}


async def test_bad_namespaces_are_refused(store) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {"v": 1})


async def test_a_batch_of_ops_checks_labels_too(request, kind, store) -> None:
    diverges(request, kind, "inmemory", "InMemoryStore keeps namespaces as tuples and never checks ops passed to "
             "abatch; ours joins labels with '.', so it checks them (validate_op_namespace, as LangGraph advises)")
    from langgraph.store.base import GetOp

    with pytest.raises(InvalidNamespaceError):
        await store.abatch([GetOp(("a.b", "c"), "k")])


async def test_an_update_keeps_created_at(request, kind, store) -> None:
    diverges(request, kind, "inmemory", "InMemoryStore stamps created_at anew on every put; "
             "ours keeps the first, as LangGraph's PostgresStore does")
    await store.aput(("c",), "k", {"v": 1})
    first = await store.aget(("c",), "k")
    await store.aput(("c",), "k", {"v": 2})
    again = await store.aget(("c",), "k")
    assert again.created_at == first.created_at and again.value == {"v": 2}


async def test_ttl_expires_and_refreshes_on_read(request, kind, backend, opened) -> None:
    diverges(request, kind, "inmemory", "InMemoryStore has no TTL (supports_ttl is False)")
    store = opened(ttl={"default_ttl": 60, "refresh_on_read": True})
    if kind == "inmemory":
        await store.aput(("t",), "k", {"v": 1}, ttl=60)  # raises NotImplementedError
    await store.aput(("t",), "k", {"v": 1})
    await store.aput(("t",), "gone", {"v": 2}, ttl=5)
    await store.aput(("t",), "forever", {"v": 3}, ttl=None)
    # time passes: expiries moved into the past / near future on the database clock
    async with store.database.engine.begin() as conn:
        await conn.execute(text("UPDATE lg_store_items SET expires_at = DATE_SUB(UTC_TIMESTAMP(6), INTERVAL 1 SECOND) "
                                "WHERE item_key = 'gone'"))
        await conn.execute(text("UPDATE lg_store_items SET expires_at = DATE_ADD(UTC_TIMESTAMP(6), INTERVAL 1 MINUTE) "
                                "WHERE item_key = 'k'"))
    assert await store.aget(("t",), "gone") is None
    assert {i.key for i in await store.asearch(("t",))} == {"k", "forever"}
    async with store.database.engine.connect() as conn:
        left = (await conn.execute(text("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(6), expires_at) FROM lg_store_items "
                                         "WHERE item_key = 'k'"))).scalar()
        never = (await conn.execute(text("SELECT expires_at FROM lg_store_items WHERE item_key = 'forever'"))).scalar()
    assert left > 50 * 60  # the reads restarted its 60 minutes
    assert never is None
    assert await store.asweep_ttl() == 1
    assert await store.alist_namespaces() == [("t",)]


async def test_semantic_search_ranks_the_closest_item_first(opened) -> None:
    store = opened(index=INDEX)
    await store.aput(("docs", "u1"), "py", {"text": "Python tutorial for beginners"})
    await store.aput(("docs", "u1"), "ts", {"text": "TypeScript guide for web developers"})
    await store.aput(("docs", "u1"), "cook", {"text": "Cooking pasta at home", "kind": "food"})
    await store.aput(("other",), "far", {"text": "Python tutorial for beginners"})
    hits = await store.asearch(("docs",), query="Python tutorial for beginners", limit=2)
    assert [h.key for h in hits][0] == "py" and len(hits) == 2
    assert hits[0].score is not None and hits[0].score >= hits[1].score
    assert [h.key for h in await store.asearch(("docs",), query="pasta", filter={"kind": "food"})] == ["cook"]
    await store.adelete(("docs", "u1"), "py")
    assert "py" not in [h.key for h in await store.asearch(("docs",), query="Python tutorial for beginners")]
    await store.aput(("docs", "u1"), "nope", {"text": "Python tutorial for beginners"}, index=False)
    hits = await store.asearch(("docs",), query="Python tutorial for beginners")
    assert [h.score for h in hits if h.key == "nope"] == [None]  # not indexed: only fills the page, unscored
    assert all(h.score is not None for h in hits if h.key != "nope")
