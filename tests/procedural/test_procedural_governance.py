"""Erasure, retention, opt-out, audit and the analyst views of procedural memory, on both engines."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from adk_oceanbase import AuditSettings
from adk_oceanbase.errors import MemoryWriteRaceError
from adk_oceanbase.governance import Retention, RetentionPolicy, delete_user_data, sweep
from adk_oceanbase.governance import guard
from adk_oceanbase.gateway import transaction
from adk_oceanbase.memory.embedding import HashEmbedder
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore

from .helpers import rows, run, session, store

REFUND = "please refund my order number 12"


async def totals(db):
    return await rows(db, "SELECT user_id, successes, failures, unknowns, tool_calls_sum FROM procedure_stats ORDER BY user_id, path_hash")


async def test_erasure_removes_a_users_contributions_from_the_app_aggregates(pdb):
    ps = store(pdb)
    for _ in range(3):
        await ps.extract_session(session(run("i", REFUND, ["a"], True), user="ann"))
    await ps.extract_session(session(run("i", REFUND, ["a"], False), user="bob"))
    await ps.extract_session(session(run("i", REFUND, ["only_bob"], True), user="bob"))
    before = await rows(pdb, "SELECT members FROM procedure_scenarios WHERE scenario_id <> ''")
    counts = await delete_user_data(pdb, "shop", "bob")
    assert counts["procedure_runs"] == 2
    assert [tuple(r) for r in await totals(pdb)] == [("", 3, 0, 0, 3)]  # bob's failure is out, his only path is gone
    assert await rows(pdb, "SELECT * FROM procedure_runs WHERE user_id = 'bob'") == []
    assert [r[0] for r in await rows(pdb, "SELECT members FROM procedure_scenarios WHERE scenario_id <> ''")] == [before[0][0] - 2]
    await delete_user_data(pdb, "shop", "ann")
    assert await totals(pdb) == [] and await rows(pdb, "SELECT * FROM procedure_scenarios WHERE scenario_id <> ''") == []


async def test_erasure_of_a_user_scoped_learner_leaves_nothing_of_them(pdb):
    ps = store(pdb, scope="user")
    await ps.extract_session(session(run("i", REFUND, ["a"], True), user="ann"))
    await ps.extract_session(session(run("i", REFUND, ["a"], True), user="bob"))
    await delete_user_data(pdb, "shop", "ann")
    for table in ("procedure_runs", "procedure_stats", "procedure_scenarios"):
        assert {r[0] for r in await rows(pdb, f"SELECT user_id FROM {table}")} == {"bob"}, table


async def test_an_extraction_that_started_before_the_erasure_stores_nothing(pdb):
    ps = store(pdb)
    s = session(run("i", REFUND, ["a"], True), user="ann")
    gate, release = __import__("asyncio").Event(), __import__("asyncio").Event()
    original = guard.lock

    async def slow_lock(conn, app, user, now):  # the erasure commits between the read and the write
        gate.set()
        await release.wait()
        return await original(conn, app, user, now)

    guard.lock = slow_lock
    try:
        task = __import__("asyncio").create_task(ps.extract_session(s))
        await gate.wait()
        guard.lock = original
        await delete_user_data(pdb, "shop", "ann")
        release.set()
        with pytest.raises(MemoryWriteRaceError):
            await task
    finally:
        guard.lock = original
    assert await rows(pdb, "SELECT * FROM procedure_runs") == [] and await totals(pdb) == []


async def test_opted_out_users_contribute_nothing(pdb):
    from adk_oceanbase import OceanBaseMemoryService

    mem = OceanBaseMemoryService(database=pdb, embedder=HashEmbedder())
    try:
        await mem.set_memory_opt_out("shop", "ann")
    finally:
        await mem.close()
    report = await store(pdb).extract_session(session(run("i", REFUND, ["a"], True), user="ann"))
    assert report["skipped"] == 1 and await totals(pdb) == []


async def test_retention_expires_old_runs_out_of_the_aggregates(pdb):
    ps = store(pdb)
    for user in ("ann", "bob"):
        await ps.extract_session(session(run("i", REFUND, ["a"], True), user=user))
    async with transaction(pdb) as conn:
        await conn.exec_driver_sql("UPDATE procedure_runs SET stored_at = stored_at - INTERVAL 40 DAY WHERE user_id = 'ann'")
    policy = RetentionPolicy(Retention(memory_ttl="30d"))
    dry = await sweep(pdb, policy, apps=["shop"], dry_run=True)
    assert dry.procedure_runs == 1 and [tuple(r) for r in await totals(pdb)] == [("", 2, 0, 0, 2)]
    done = await sweep(pdb, policy, apps=["shop"], audit=True)
    assert done.procedure_runs == 1 and [tuple(r) for r in await totals(pdb)] == [("", 1, 0, 0, 1)]
    assert (await sweep(pdb, policy, apps=["shop"])).procedure_runs == 0


async def test_writes_and_reads_are_audited(pdb):
    ps = ProcedureStore(database=pdb, embedder=HashEmbedder(), audit=AuditSettings(read_sample=1.0))
    s = session(run("i", REFUND, ["a"], True), user="ann")
    await ps.extract_session(s)
    await ps.record_outcome(s, "i", False)
    await ps.recall_procedures("shop", REFUND)
    got = await rows(pdb, "SELECT operation, user_id, session_id, row_count FROM audit_log "
                          "WHERE operation LIKE 'procedure%' ORDER BY audit_id")
    assert [tuple(r) for r in got] == [
        ("procedure_extract", "ann", s.id, 1), ("procedure_outcome", "ann", s.id, 1), ("procedure_recall", None, None, 0)]


async def test_analyst_views_answer_from_the_aggregates(pdb):
    ps = store(pdb)
    for ok in (True, True, False):
        await ps.extract_session(session(run("i", REFUND, [("pay", {}, {"ok": 1} if ok else {"error": "declined"})], ok)))
    [(rate, n_fail, tainted)] = await rows(pdb, "SELECT success_rate, failures, tainted FROM v_procedure_success")
    assert (round(float(rate), 3), n_fail, tainted) == (0.667, 1, 0)
    [(tool, with_error, failed)] = await rows(pdb, "SELECT failed_tool, runs_with_error, failed_runs FROM v_procedure_failing_tools")
    assert (tool, with_error, failed) == ("pay", 1, 1)
    # a path getting worse: last week all three worked, this week one of three did
    async with transaction(pdb) as conn:
        await conn.exec_driver_sql("UPDATE procedure_runs SET created_at = created_at - INTERVAL 7 DAY, outcome = 'success'")
    for ok in (True, False, False):
        await ps.extract_session(session(run("i", REFUND, [("pay", {}, {"ok": 1})], ok)))
    weeks = await rows(pdb, "SELECT week_start, success_rate FROM v_procedure_weekly ORDER BY week_start")
    assert [round(float(r[1]), 3) for r in weeks] == [1.0, 0.333]


async def test_retention_visits_apps_that_have_only_procedural_rows(pdb):
    # the sessions were never stored here (or expired before): no session or memory names the app, and
    # a sweep without apps= used to skip it, keeping its runs, counts and scenarios for ever
    ps = store(pdb)
    await ps.extract_session(session(run("i", REFUND, ["a"], True), app="lonely", user="ann"))
    await ps.extract_session(session(run("i", REFUND, ["a"], {"success": True, "scenario": "refund"}), app="lonely", user="ann"))
    async with transaction(pdb) as conn:
        await conn.exec_driver_sql("UPDATE procedure_runs SET stored_at = stored_at - INTERVAL 40 DAY WHERE app_name = 'lonely'")
    done = await sweep(pdb, RetentionPolicy(Retention(memory_ttl="30d")))
    assert done.procedure_runs == 2
    for table in ("procedure_runs", "procedure_stats", "procedure_scenarios"):  # the labelled scenario and the header too
        assert await rows(pdb, f"SELECT * FROM {table} WHERE app_name = 'lonely'") == [], table
