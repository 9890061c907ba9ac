"""Storage and statistics on both engines: counts, idempotence, outcomes, concurrency, bad inputs."""

from __future__ import annotations

import asyncio
import json

import pytest

from adk_oceanbase.errors import ValidationError
from adk_oceanbase.procedural import wilson_lower_bound

from .helpers import call_events, outcome, rows, run, session, store, user_says

REFUND = "please refund my order number 12"


async def stats(db, app="shop"):
    return {r[0]: r[1:] for r in await rows(
        db, "SELECT tool_path, successes, failures, unknowns, tool_calls_sum FROM procedure_stats WHERE app_name = :a", a=app)}


def tools_of(tool_path: str) -> tuple[str, ...]:
    return tuple(s["tool"] for s in json.loads(tool_path))


async def by_tools(db, app="shop"):
    return {tools_of(k): v for k, v in (await stats(db, app)).items()}


async def test_counts_and_recall_rank_the_path_that_worked(pdb):
    ps = store(pdb)
    for i in range(5):
        await ps.extract_session(session(run("i", REFUND, ["find_order", "refund"], True)))
    for i in range(4):
        await ps.extract_session(session(run("i", REFUND, [("legacy_refund", {"id": 1}, {"error": "timeout"})], False)))
    counts = await by_tools(pdb)
    assert counts[("find_order", "refund")] == (5, 0, 0, 10)
    assert counts[("legacy_refund",)] == (0, 4, 0, 4)
    hit = await ps.recall_procedures("shop", REFUND)
    [best] = hit.procedures
    assert best.tools == ["find_order", "refund"] and (best.successes, best.samples, best.success_rate) == (5, 5, 1.0)
    # the 5 successes are older than the 4 failures of the other path: recency weighs them 0.57-0.76 each
    assert best.median_iterations == 2.0 and 0.4 < best.confidence < wilson_lower_bound(5, 5) and best.evidence < 5
    [bad] = hit.avoid
    assert bad.tools == ["legacy_refund"] and bad.failure_reasons[0] == {"tool": "legacy_refund", "reason": "timeout", "count": 4}


async def test_extracting_a_session_again_changes_nothing(pdb):
    ps = store(pdb)
    s = session([*run("i1", REFUND, ["a", "b"], True), *run("i2", REFUND, ["a", "b"], False)])
    first = await ps.extract_session(s)
    again = await ps.extract_session(s)
    assert (first["changed"], again["changed"]) == (2, 0)
    assert await by_tools(pdb) == {("a", "b"): (1, 1, 0, 4)}


async def test_runs_without_outcome_are_counted_unknown_and_never_promoted(pdb):
    ps = store(pdb)
    for _ in range(10):
        await ps.extract_session(session(run("i", REFUND, ["a"])))
    assert await by_tools(pdb) == {("a",): (0, 0, 10, 10)}
    hit = await ps.recall_procedures("shop", REFUND)
    assert hit.scenario_id is not None and hit.procedures == [] and hit.avoid == []


async def test_record_outcome_before_or_after_extraction_and_changing_it(pdb):
    ps = store(pdb)
    early = session(run("i", REFUND, ["a"]))
    await ps.record_outcome(early, "i", True)  # before extraction: kept, counted when the path arrives
    assert await by_tools(pdb) == {}
    await ps.extract_session(early)
    late = session(run("i", REFUND, ["a"], True))  # the events say success ...
    await ps.extract_session(late)
    await ps.record_outcome(late, "i", False, reason="wrong refund amount")  # ... the API overrides them
    assert await by_tools(pdb) == {("a",): (1, 1, 0, 2)}
    await ps.extract_session(late)  # re-extraction keeps the API's outcome
    await ps.record_outcome(early, "i", False)
    assert await by_tools(pdb) == {("a",): (0, 2, 0, 2)}
    [(reason, source)] = await rows(pdb, "SELECT reason, outcome_source FROM procedure_runs WHERE session_id = :s", s=late.id)
    assert (reason, source) == ("wrong refund amount", "api")


async def test_concurrent_extraction_of_one_session_counts_each_invocation_once(pdb):
    ps = store(pdb)
    s = session([*run("i1", REFUND, ["a", "b"], True), *run("i2", REFUND, ["a", "b"], True), *run("i3", REFUND, ["c"], False)])
    reports = await asyncio.gather(*(ps.extract_session(s) for _ in range(6)))
    assert sum(r["changed"] for r in reports) == 3
    assert await by_tools(pdb) == {("a", "b"): (2, 0, 0, 4), ("c",): (0, 1, 0, 1)}


async def test_concurrent_extractors_never_lose_a_count(pdb):
    ps = store(pdb)
    await ps.extract_session(session(run("i", REFUND, ["a"], True), user="seed"))  # the scenario exists first
    sessions = [session(run("i", REFUND, ["a"], i % 3 != 0), user=f"u{i % 4}") for i in range(24)]
    await asyncio.gather(*(ps.extract_session(s) for s in sessions))
    assert await by_tools(pdb) == {("a",): (1 + 16, 8, 0, 25)}


async def test_giant_tool_arguments_store_only_their_shape(pdb):
    ps = store(pdb)
    giant = {"document": "secret " * 400_000, "meta": {"k": list(range(10_000))}}
    await ps.extract_session(session(run("i", REFUND, [("upload", giant, {"ok": True})], True)))
    [(tool_path, length)] = await rows(pdb, "SELECT tool_path, LENGTH(tool_path) FROM procedure_runs")
    assert json.loads(tool_path) == [{"tool": "upload", "args": {"document": "str", "meta": "object"}}]
    assert length < 200 and "secret" not in tool_path


async def test_interleaved_invocations_become_separate_runs(pdb):
    ps = store(pdb)
    a, b = run("A", REFUND, ["find", "refund"], True), run("B", "where is my parcel 9", ["track"], False)
    mixed = [x for pair in zip(a, b) for x in pair] + a[len(b):]
    await ps.extract_session(session(mixed))
    got = {r[0]: r[1:] for r in await rows(pdb, "SELECT invocation_id, tool_calls, outcome FROM procedure_runs")}
    assert got == {"A": (2, "success"), "B": (1, "failure")}


async def test_tainted_paths_are_never_served(pdb):
    ps = store(pdb)
    for _ in range(5):
        await ps.extract_session(session(run("i", REFUND, ["a"], True)))
    hit = await ps.recall_procedures("shop", REFUND)
    [p] = hit.procedures
    assert await ps.taint("shop", p.scenario_id, p.path_hash) == 1
    assert (await ps.recall_procedures("shop", REFUND)).procedures == []
    await ps.taint("shop", p.scenario_id, p.path_hash, tainted=False)
    assert len((await ps.recall_procedures("shop", REFUND)).procedures) == 1


async def test_explicit_labels_group_different_wordings(pdb):
    ps = store(pdb)
    await ps.extract_session(session([user_says("i", "money back for 12 please"), *call_events("i", ["a"]),
                                      outcome("i", {"success": True, "scenario": "refund"})]))
    s2 = session(run("i", "completely different words", ["a"]))
    await ps.extract_session(s2)
    await ps.record_outcome(s2, "i", True, scenario="refund")
    [(sid, n)] = await rows(pdb, "SELECT scenario_id, COUNT(*) FROM procedure_runs GROUP BY scenario_id")
    assert n == 2
    assert (await ps.recall_procedures("shop", scenario="refund")).scenario_id == sid
    [(label, members)] = await rows(pdb, "SELECT label, members FROM procedure_scenarios WHERE scenario_id <> ''")
    assert (label, members) == ("refund", 2)


async def test_user_scope_keeps_users_apart(pdb):
    ps = store(pdb, scope="user")
    for _ in range(3):
        await ps.extract_session(session(run("i", REFUND, ["a"], True), user="ann"))
        await ps.extract_session(session(run("i", REFUND, ["b"], True), user="bob"))
    assert [p.tools for p in (await ps.recall_procedures("shop", REFUND, user_id="ann")).procedures] == [["a"]]
    assert [p.tools for p in (await ps.recall_procedures("shop", REFUND, user_id="bob")).procedures] == [["b"]]
    with pytest.raises(ValidationError):
        await ps.recall_procedures("shop", REFUND)


async def test_failure_reasons_are_redacted(pdb):
    ps = store(pdb)
    s = session(run("i", REFUND, [("mail", {}, {"error": "no account for ann.lee@example.com"})], False))
    await ps.extract_session(s)
    [(reason,)] = await rows(pdb, "SELECT reason FROM procedure_runs")
    assert "ann.lee@example.com" not in reason and reason.startswith("no account for")


async def test_bad_inputs_raise_typed_errors_and_write_nothing(pdb):
    ps = store(pdb)
    with pytest.raises(ValidationError):
        await ps.extract_session(session(run("i", REFUND, ["a"], True), user=""))
    with pytest.raises(ValidationError):
        await ps.extract_session(session(run("i", REFUND, ["a"], True), app="x" * 500))
    s = session(run("i", REFUND, ["a"], True))
    with pytest.raises(ValidationError):
        await ps.record_outcome(s, "i", "yes")
    with pytest.raises(ValidationError):
        await ps.record_outcome(s, "", True)
    with pytest.raises(ValidationError):
        await ps.recall_procedures("shop", REFUND, top_k=0)
    with pytest.raises(ValidationError):
        await ps.recall_procedures("shop", "   ")
    assert await rows(pdb, "SELECT * FROM procedure_runs") == []
    assert (await ps.extract_session(session([user_says("i", "hello")])))["invocations"] == 0


async def test_a_newer_extractor_re_extracts_and_an_older_one_cannot_undo_it(pdb, monkeypatch):
    from adk_oceanbase.procedural import store as store_module

    ps = store(pdb)
    s = session(run("i", REFUND, ["a"], True))
    await ps.extract_session(s)
    monkeypatch.setattr(store_module, "EXTRACTOR", "path:v2")
    s.events.extend(call_events("i", ["b"]))  # v2 sees the invocation's later calls too
    assert (await ps.extract_session(s))["changed"] == 1
    assert await by_tools(pdb) == {("a", "b"): (1, 0, 0, 2)}
    monkeypatch.setattr(store_module, "EXTRACTOR", "path:v1")
    assert (await ps.extract_session(session(run("i", REFUND, ["a"], True), sid=s.id)))["changed"] == 0
    assert await by_tools(pdb) == {("a", "b"): (1, 0, 0, 2)}
