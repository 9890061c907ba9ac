"""``put_writes`` with several writes: one statement for the call, the first regular write per (task, idx) kept,
special writes (errors, interrupts) replaced, re-delivery idempotent; on seekdb and MariaDB."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.base import WRITES_IDX_MAP  # noqa: E402
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase import AuditSettings  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.rawtx import RawTransaction  # noqa: E402

ERROR, INTERRUPT = "__error__", "__interrupt__"  # LangGraph's special channels (its constants are private since 1.0)
assert ERROR in WRITES_IDX_MAP and INTERRUPT in WRITES_IDX_MAP


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, int]]:
    """What the saver's transactions send: ``("single", 1)`` or ``("batch", statements)``, in order.

    Wraps the real methods (the statements still run on the engine)."""
    calls: list[tuple[str, int]] = []
    single, batch = RawTransaction.single, RawTransaction.batch

    async def spy_single(self, sql, params):
        calls.append(("single", 1))
        return await single(self, sql, params)

    async def spy_batch(self, statements, **kw):
        calls.append(("batch", len(statements)))
        return await batch(self, statements, **kw)

    monkeypatch.setattr(RawTransaction, "single", spy_single)
    monkeypatch.setattr(RawTransaction, "batch", spy_batch)
    return calls


async def stored_writes(db, thread: str) -> list[tuple[str, int, str]]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(text("SELECT task_id, idx, channel FROM lg_checkpoint_writes WHERE thread_id = :t "
                                       "ORDER BY task_id, idx"), {"t": thread})
        return [tuple(r) for r in rows]


async def a_checkpoint(saver: OceanBaseSaver, thread: str) -> dict:
    stored = await saver.aput(generate_config(thread), generate_checkpoint(), generate_metadata(), {})
    return stored


async def test_several_writes_are_one_statement_and_read_back_in_order(engine_db, sent) -> None:
    saver = OceanBaseSaver(database=engine_db)
    stored = await a_checkpoint(saver, "t-multi")
    del sent[:]
    writes = [("a", 1), ("b", {"x": [1, 2]}), ("a", "three"), ("c", None)] + [(f"ch{i}", i) for i in range(6)]
    await saver.aput_writes(stored, writes, "task-1", task_path="~p")
    assert sent == [("single", 1)]  # ten rows, one statement, no COMMIT after it on a lease (RawTransaction.single)
    got = await saver.aget_tuple(stored)
    assert got.pending_writes == [("task-1", ch, v) for ch, v in writes]
    assert await stored_writes(engine_db, "t-multi") == [("task-1", i, ch) for i, (ch, _) in enumerate(writes)]


async def test_re_delivery_keeps_the_first_regular_writes(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    stored = await a_checkpoint(saver, "t-again")
    await saver.aput_writes(stored, [("a", "first"), ("b", "first")], "task-1")
    await saver.aput_writes(stored, [("a", "second"), ("b", "second"), ("c", "new")], "task-1")  # a retried task
    await saver.aput_writes(stored, [("a", "other task")], "task-2")
    got = await saver.aget_tuple(stored)
    assert sorted(got.pending_writes) == sorted([
        ("task-1", "a", "first"), ("task-1", "b", "first"), ("task-1", "c", "new"), ("task-2", "a", "other task"),
    ])


async def test_special_writes_replace_and_a_mixed_call_keeps_the_first(engine_db) -> None:
    """As LangGraph's savers: a call of special writes only (``WRITES_IDX_MAP``) replaces; any other keeps the first."""
    saver = OceanBaseSaver(database=engine_db)
    stored = await a_checkpoint(saver, "t-special")
    await saver.aput_writes(stored, [(ERROR, "boom 1")], "task-e")
    await saver.aput_writes(stored, [(ERROR, "boom 2"), (INTERRUPT, "stop")], "task-e")
    await saver.aput_writes(stored, [("a", "first"), (INTERRUPT, "mixed 1")], "task-m")
    await saver.aput_writes(stored, [("a", "second"), (INTERRUPT, "mixed 2")], "task-m")
    got = {(t, ch): v for t, ch, v in (await saver.aget_tuple(stored)).pending_writes}
    assert got == {("task-e", ERROR): "boom 2", ("task-e", INTERRUPT): "stop",
                   ("task-m", "a"): "first", ("task-m", INTERRUPT): "mixed 1"}
    rows = await stored_writes(engine_db, "t-special")
    assert ("task-e", WRITES_IDX_MAP[ERROR], ERROR) in rows and len(rows) == 4


async def test_two_special_writes_to_one_channel_in_a_call_leave_the_last(engine_db) -> None:
    """Same (task, idx) twice in one statement: the later row replaces the earlier, as two statements did."""
    saver = OceanBaseSaver(database=engine_db)
    stored = await a_checkpoint(saver, "t-twice")
    await saver.aput_writes(stored, [(ERROR, "one"), (ERROR, "two")], "task-e")
    await saver.aput_writes(stored, [("a", "x"), ("a", "y")], "task-r")  # regular ones have their own idx each
    got = sorted((await saver.aget_tuple(stored)).pending_writes)
    assert got == [("task-e", ERROR, "two"), ("task-r", "a", "x"), ("task-r", "a", "y")]


async def test_an_audited_call_is_one_transaction_with_its_audit_row(engine_db, sent) -> None:
    saver = OceanBaseSaver(database=engine_db, app_name="lgw", audit=AuditSettings())
    stored = await a_checkpoint(saver, "t-audit")
    del sent[:]
    await saver.aput_writes(stored, [("a", 1), ("b", 2), ("c", 3)], "task-1")
    assert sent == [("batch", 3)]  # the writes' statement, the audit row, COMMIT
    async with engine_db.engine.connect() as conn:
        audited = (await conn.execute(text("SELECT COUNT(*) FROM audit_log WHERE app_name = 'lgw' "
                                           "AND operation = 'lg_put_writes'"))).scalar()
    assert audited == 1 and len(await stored_writes(engine_db, "t-audit")) == 3


async def test_writes_past_one_statements_size_are_several_statements_in_one_transaction(engine_db, sent, monkeypatch) -> None:
    """A call's payloads beyond ``_WRITES_STATEMENT_BYTES`` go in more statements (for ``batch_statements=False``)."""
    from adk_oceanbase.langgraph import saver as saver_module

    monkeypatch.setattr(saver_module, "_WRITES_STATEMENT_BYTES", 300)
    saver = OceanBaseSaver(database=engine_db)
    stored = await a_checkpoint(saver, "t-parts")
    del sent[:]
    writes = [(f"ch{i}", "v" * 100 + str(i)) for i in range(5)]  # ~210 hex characters each: one per statement
    await saver.aput_writes(stored, writes, "task-1")
    assert sent == [("batch", 6)]  # five statements and COMMIT
    await saver.aput_writes(stored, [(ch, "again") for ch, _ in writes], "task-1")  # re-delivered: the first stays
    assert (await saver.aget_tuple(stored)).pending_writes == [("task-1", ch, v) for ch, v in writes]
