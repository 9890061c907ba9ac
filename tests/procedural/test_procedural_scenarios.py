"""Scenario grouping and recency on both engines: concurrent first requests, merges, drift (issue 27)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.procedural import ProceduralSettings
from adk_oceanbase.procedural.scenarios import Grouping

from .helpers import rows, run, session, store

REFUND = "refund order 12 please"  # HashEmbedder: 0.59-0.63 to the "please refund my order number N" wordings


async def scenarios(db, app="shop"):
    return await rows(db, "SELECT scenario_id, members FROM procedure_scenarios WHERE app_name = :a AND scenario_id <> ''"
                          " ORDER BY scenario_id", a=app)


async def test_concurrent_first_requests_of_a_new_task_start_one_scenario(pdb):
    # eight wordings at 0.92 of each other, none seen before: every extractor misses; before the scope
    # lock each started its own scenario (eight scenarios for one task)
    ps = store(pdb)
    for i in range(8):  # each user's guard row exists first: MariaDB deadlocks concurrent first inserts of those
        await ps.extract_session(session(run("i", "where is my parcel going today", ["track"], True), user=f"u{i}"))
    sessions = [session(run("i", f"please refund my order number {i}", ["a"], True), user=f"u{i}") for i in range(8)]
    await asyncio.gather(*(ps.extract_session(s) for s in sessions))
    [parcel, (scenario, members)] = sorted(await scenarios(pdb), key=lambda r: r[1] == 8)
    assert members == 8 and parcel[1] == 8
    assert await rows(pdb, "SELECT COUNT(*) FROM procedure_runs WHERE scenario_id = :s", s=scenario) == [(8,)]
    [(successes,)] = await rows(pdb, "SELECT successes FROM procedure_stats WHERE scenario_id = :s", s=scenario)
    assert successes == 8


async def test_two_wordings_of_one_task_run_the_same_ways_are_merged(pdb):
    # join only at 0.9: the two wordings (0.6 apart) start two scenarios; once they share a path
    # (Jaccard 1/2) and their centroids are within 0.5, the smaller folds into the larger
    # the rule before merge_agreement: shared tried paths are enough, whatever their outcomes
    ps = store(pdb, similarity=0.9, merge_similarity=0.5, pool_similarity=0.5, merge_agreement=None)
    first = session(run("i", REFUND, ["a"], True))
    await ps.extract_session(first)
    await ps.extract_session(session(run("i", "please refund my order number 1", ["b"], True)))
    await ps.extract_session(session(run("i", "where is my parcel going today", ["a"], True)))  # another task, same path
    assert len(await scenarios(pdb)) == 3  # no path in common yet between the refund wordings
    [(scenario, path)] = await rows(pdb, "SELECT scenario_id, path_hash FROM procedure_runs WHERE session_id = :s", s=first.id)
    await ps.taint("shop", scenario, path)  # a tainted path stays tainted through a merge
    await ps.extract_session(session(run("i", "please refund my order number 2", ["a"], False)))
    found = await scenarios(pdb)
    assert sorted(m for _s, m in found) == [1, 3]
    refund = next(s for s, m in found if m == 3)
    by_session = await rows(pdb, "SELECT scenario_id, COUNT(*) FROM procedure_runs GROUP BY scenario_id ORDER BY 2")
    assert [tuple(r) for r in by_session] == [(next(s for s, m in found if m == 1), 1), (refund, 3)]
    merged = await rows(pdb, "SELECT tool_path, successes, failures, tainted FROM procedure_stats WHERE scenario_id = :s"
                             " ORDER BY tool_path", s=refund)
    assert [tuple(r[1:]) for r in merged] == [(1, 1, 1), (1, 0, 0)]  # a: both runs, tainted; b
    hit = await ps.recall_procedures("shop", REFUND, top_k=5)
    assert hit.scenario_id == refund and [p.tools for p in hit.unproven] == [["b"]]
    # the folded scenario's vectors moved too: its members and the other task's are intact
    assert await rows(pdb, "SELECT COUNT(*) FROM procedure_stats WHERE scenario_id NOT IN (:s)", s=refund) == [(1,)]


def test_merge_agreement_counts_only_shared_paths_that_agree_in_outcome():
    # two wordings 0.6 apart (join 0.9 keeps them apart), both run on "p": the old rule merges them on that
    # alone; with agreement 0.5 "p" counts only when its success rates are within 0.5 of each other
    a, b = np.array([1.0, 0.0]), np.array([0.6, 0.8])

    def grouping(agreement, outcome_b):
        g = Grouping([], join=0.9, merge=0.5, overlap=0.5, agreement=agreement)
        g.assign(a, "A", "p", True)
        g.assign(a, "A", "p", True)
        return g, g.assign(b, "B", "p", outcome_b)

    assert grouping(None, False)[1] == ("A", [("B", "A")])
    g, got = grouping(0.5, False)  # "p" worked twice for A, failed for B: no evidence they are one task
    assert got == ("B", []) and g.overlap_of("A", "B") == 0.0
    assert grouping(0.5, None)[1] == ("B", [])  # an unknown outcome proves nothing either
    assert grouping(0.5, True)[1] == ("A", [("B", "A")])
    g, _ = grouping(0.5, False)
    assert g.assign(b, "B", "p", True) == ("A", [("B", "A")])  # B's "p" now 1 of 2: within 0.5 of A's 2 of 2
    assert g.outcomes["A"]["p"] == [3, 1] and "B" not in g.outcomes  # the counts moved with the merge
    with pytest.raises(ConfigurationError):
        ProceduralSettings(merge_agreement=1.5)


async def test_fragments_whose_shared_path_disagrees_in_outcome_are_not_merged(pdb):
    # both engines: the outcomes a merge compares come from procedure_stats under the scope's lock; the merge
    # rule alone (path_similarity=None: with the join by path the second run would join the first's scenario
    # outright, having run its path: test_procedural_path_join.py)
    for app, agreement in (("strict", 0.5), ("loose", None)):
        ps = store(pdb, similarity=0.9, merge_similarity=0.5, pool_similarity=0.5, merge_agreement=agreement,
                   path_similarity=None)
        await ps.extract_session(session(run("i", REFUND, ["a"], True), app=app))
        await ps.extract_session(session(run("i", "please refund my order number 1", ["a"], False), app=app))
        found = await scenarios(pdb, app)
        assert len(found) == (2 if agreement is not None else 1)
        if agreement is None:
            continue
        await ps.extract_session(session(run("i", "please refund my order number 2", ["a"], True), app=app))
        [(scenario, members)] = await scenarios(pdb, app)  # "a" now 1 of 2 there: agrees with 1 of 1, merged
        assert members == 3
        assert await rows(pdb, "SELECT successes, failures FROM procedure_stats WHERE app_name = :a", a=app) == [(2, 1)]


async def test_recall_follows_a_path_that_stopped_working_and_forgets_stale_failures(pdb):
    ps = store(pdb)
    script = [("stale", False)] * 3 + [("old", True)] * 20 + [("old", False), ("new", True)] * 6
    for tool, ok in script:
        await ps.extract_session(session(run("i", REFUND, [tool], ok)))
    hit = await ps.recall_procedures("shop", REFUND, top_k=5)
    assert [p.tools for p in hit.procedures][0] == ["new"]  # 20 old successes: under a window of 20, "old" led
    every = {p.tools[0]: p for p in [*hit.procedures, *hit.avoid, *hit.unproven]}
    assert every["old"].confidence < every["new"].confidence and every["old"].samples == 26
    # the scenario's clock ran 32 outcomes past "stale": its 3 failures weigh under a quarter each, so it
    # is no longer a path to avoid (under a per-path window it was, for ever): an explorer may try it again
    assert "stale" not in {p.tools[0] for p in hit.avoid} and "stale" in {p.tools[0] for p in hit.unproven}
    assert every["stale"].recent_samples == 3 and every["stale"].evidence < 0.6
    flat = await store(pdb, half_life=None).recall_procedures("shop", REFUND, top_k=5)
    assert {p.tools[0]: p.evidence for p in [*flat.procedures, *flat.avoid, *flat.unproven]}["stale"] == 3
