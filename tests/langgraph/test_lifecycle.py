"""Opening and closing, written once (``bridge.HomeLifecycle``) for the saver and the store; on seekdb and MariaDB."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from adk_oceanbase.langgraph import OceanBaseSaver, OceanBaseStore  # noqa: E402
from adk_oceanbase.langgraph.bridge import HomeLifecycle  # noqa: E402

KINDS = [OceanBaseSaver, OceanBaseStore]


async def use(obj) -> None:
    """One real round trip, so there is an engine to release."""
    if isinstance(obj, OceanBaseSaver):
        assert await obj.aget_tuple({"configurable": {"thread_id": "nobody"}}) is None
    else:
        assert await obj.aget(("nobody",), "k") is None


def test_one_lifecycle_for_both() -> None:
    for name in ("from_url", "from_conn_string", "aclose", "close", "__aenter__", "__aexit__", "__enter__", "__exit__"):
        assert name in HomeLifecycle.__dict__, name
        for cls in KINDS:  # inherited, not written again
            owner = next(c for c in cls.__mro__ if name in c.__dict__)
            assert owner is HomeLifecycle, (cls.__name__, name, owner.__name__)


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.__name__)
async def test_from_url_and_from_conn_string_close_what_they_opened(engine_migrated_url, cls) -> None:
    obj = cls.from_url(engine_migrated_url)
    assert type(obj) is cls
    async with obj:
        await use(obj)
        assert obj.database.started
    assert not obj.database.started
    async with cls.from_conn_string(engine_migrated_url) as opened:
        assert type(opened) is cls
        await use(opened)
    assert not opened.database.started


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.__name__)
async def test_sync_with_from_a_thread_closes_its_private_loop(engine_migrated_url, cls) -> None:
    def sync_side():
        with cls.from_url(engine_migrated_url) as obj:
            if isinstance(obj, OceanBaseSaver):
                assert obj.get_tuple({"configurable": {"thread_id": "nobody"}}) is None
            else:
                assert obj.get(("nobody",), "k") is None
            loop = obj._home.loop
        return obj, loop

    obj, loop = await asyncio.to_thread(sync_side)
    assert loop.is_closed() and not obj.database.started
