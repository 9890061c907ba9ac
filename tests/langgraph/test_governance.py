"""LangGraph tables under governance: gc deletes idle threads (thread_ttl) and expired Store items, the views
answer analysts, and the CLI says what it swept; on seekdb and MariaDB."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.governance import Retention, RetentionPolicy, sweep  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver, OceanBaseStore  # noqa: E402

from .stored import VALUES  # noqa: E402


async def run(db, sql: str):
    async with db.engine.begin() as conn:
        return (await conn.execute(text(sql))).all() if sql.lstrip().upper().startswith("SELECT") else \
            (await conn.execute(text(sql))).rowcount


async def two_threads(db, app="lgapp"):
    saver = OceanBaseSaver(database=db, app_name=app)
    for thread in ("old", "new"):
        cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "user_id": "bob"}}
        cp = generate_checkpoint(channel_values={"a": [thread]}, channel_versions={"a": "1"})  # a list: a blob row
        stored = await saver.aput(cfg, cp, generate_metadata(source="input", step=-1), {"a": "1"})
        await saver.aput_writes({"configurable": {**cfg["configurable"], **stored["configurable"]}}, [("a", 1)], "t1")
        await saver.aput(cfg | {"configurable": {**cfg["configurable"], **stored["configurable"]}},
                         generate_checkpoint(), generate_metadata(source="loop", step=0), {})
    # 100 days pass for "old" (the server clock wrote created_at)
    await run(db, "UPDATE lg_checkpoints SET created_at = DATE_SUB(created_at, INTERVAL 100 DAY) WHERE thread_id = 'old'")
    return saver


async def test_gc_deletes_idle_threads_whole(engine_db) -> None:
    saver = await two_threads(engine_db)
    policy = RetentionPolicy(Retention(thread_ttl="30d"))
    dry = await sweep(engine_db, policy, dry_run=True)
    assert (dry.lg_threads, dry.lg_checkpoints) == (1, 2)
    counts = await sweep(engine_db, policy, audit=True)
    assert (counts.lg_threads, counts.lg_checkpoints) == (1, 2)
    assert await saver.aget_tuple(generate_config("old")) is None
    assert (await saver.aget_tuple(generate_config("new"))).checkpoint is not None
    left = await run(engine_db, f"SELECT thread_id, COUNT(*) FROM {VALUES} GROUP BY thread_id")
    assert [tuple(r) for r in left] == [("new", 1)]
    assert await run(engine_db, "SELECT COUNT(*) FROM lg_checkpoint_writes WHERE thread_id = 'old'") == [(0,)]
    assert await run(engine_db, "SELECT row_count FROM audit_log WHERE operation = 'retention_sweep'") == [(3,)]  # 2 checkpoints (one holding the value), 1 write
    assert (await sweep(engine_db, policy)).lg_threads == 0


async def test_gc_deletes_expired_store_items(engine_db) -> None:
    store = OceanBaseStore(database=engine_db, app_name="lgstore")
    await store.aput(("prefs", "bob"), "short", {"v": 1}, ttl=5)
    await store.aput(("prefs", "bob"), "keep", {"v": 2})
    await run(engine_db, "UPDATE lg_store_items SET expires_at = DATE_SUB(UTC_TIMESTAMP(6), INTERVAL 1 MINUTE) "
                         "WHERE item_key = 'short'")
    assert (await sweep(engine_db, RetentionPolicy(), dry_run=True)).lg_store_items == 1
    assert (await sweep(engine_db, RetentionPolicy())).lg_store_items == 1
    assert await run(engine_db, "SELECT item_key FROM lg_store_items") == [("keep",)]


async def test_views_show_threads_checkpoints_and_items(engine_db) -> None:
    await two_threads(engine_db)
    store = OceanBaseStore(database=engine_db, app_name="lgapp", user_of=lambda ns: ns[1])
    await store.aput(("prefs", "bob"), "style", {"style": "terse"})
    threads = await run(engine_db, "SELECT thread_id, user_id, checkpoints FROM v_lg_threads ORDER BY thread_id")
    assert [tuple(r) for r in threads] == [("new", "bob", 2), ("old", "bob", 2)]
    steps = await run(engine_db, "SELECT source, step FROM v_lg_checkpoints WHERE thread_id = 'new' ORDER BY step")
    assert [(r[0], int(r[1])) for r in steps] == [("input", -1), ("loop", 0)]
    items = await run(engine_db, "SELECT user_id, namespace, item_key, value_bytes FROM v_lg_store_items")
    assert [tuple(r) for r in items] == [("bob", "prefs.bob", "style", len('{"style":"terse"}'))]


def test_gc_cli_sweeps_threads(engine_migrated_url, capsys) -> None:
    from adk_oceanbase.cli import main

    assert main(["gc", "--url", engine_migrated_url, "--thread-ttl", "30d", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "LangGraph thread(s)" in out and "would delete" in out
