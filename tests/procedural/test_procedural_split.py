"""A scenario gives back the wording that runs another task's paths (issue 27, session 20: ``split_p``).

The failure it fixes (benchmarks/README.md, session 20, procsplit): while
scenarios are young, a wording nearer another task's centroid than its own is
joined there by its text, and nothing undid it; the scenario then served one
task's paths to the other.  The runs it collects tell: the wording's runs sit
together (a wording cluster) and run paths the rest of the scenario never ran.
Vectors are set by hand so the geometry is exact.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from adk_oceanbase import AuditSettings
from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.governance import delete_user_data
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore
from adk_oceanbase.procedural.scenarios import Grouping
from adk_oceanbase.procedural.splitting import clusters, disagree, split_of

from .helpers import fixed_store, rows, run, session

A = np.array([1.0, 0.0, 0.0])
A2 = np.array([0.85, np.sqrt(1 - 0.85 ** 2), 0.0])  # another wording of A's task: 0.85 from A
X = np.array([0.7, 0.0, np.sqrt(0.51)])  # another task's wording: 0.7 from A (over the join bar 0.6), 0.6 from A2


def stack(*parts: tuple[np.ndarray, int]) -> np.ndarray:
    return np.array([v for v, n in parts for _ in range(n)])


# ---------------------------------------------------------------- the pure rule


def test_a_wording_cluster_on_paths_the_rest_never_ran_is_split_out():
    v = stack((A, 6), (X, 5))
    paths = ["pa"] * 4 + ["pb"] * 2 + ["px"] * 4 + ["py"]
    found = split_of(v, paths, [True] * 11, link=0.8, p=0.01, min_count=5, overlap=0.5)
    assert found is not None and found.rows == (6, 7, 8, 9, 10) and found.covered == 0.0 and found.path == "px"
    # too few runs to tell a wording from luck: nothing moves
    assert split_of(stack((A, 6), (X, 4)), paths[:10], [True] * 10, link=0.8, p=0.01, min_count=5, overlap=0.5) is None


def test_a_wording_that_explored_its_tasks_other_paths_stays():
    # one task, two wordings: the second tried the task's other paths first, but the rest ran them too
    v = stack((A, 8), (A2, 5))
    paths = ["pa"] * 6 + ["pb", "pc"] + ["pb", "pc", "pc", "pb", "pa"]
    assert clusters(v, 0.9) == [0] * 8 + [8] * 5  # two wording clusters at 0.9
    assert split_of(v, paths, [True] * 13, link=0.9, p=0.01, min_count=5, overlap=0.5) is None


def test_a_shared_path_that_works_for_one_cluster_only_does_not_hold_them_together():
    v = stack((A, 10), (X, 10))
    paths = ["verify"] * 20
    outcomes = [True] * 9 + [False] + [False] * 9 + [True]
    found = split_of(v, paths, outcomes, link=0.8, p=0.01, min_count=5, overlap=0.5)
    assert found is not None and found.rows == tuple(range(10, 20))
    # the same path with the same luck: one task, no split
    assert split_of(v, paths, [True] * 9 + [False] + [True] * 9 + [False], link=0.8, p=0.01, min_count=5,
                    overlap=0.5) is None


def test_grouping_moves_the_split_runs_and_never_merges_them_back():
    g = Grouping([], join=0.6, merge=0.45, agreement=0.5, split_p=0.01, split_min=5)
    for _ in range(5):
        assert g.assign(A, "A", "verify", True)[0] == "A"
    for _ in range(5):
        assert g.assign(X, "X", "verify", False)[0] == "A"  # joined by its text (0.7 from A's centroid)
    total = X * 5
    dst = g.split_to("A", total, {"verify": [0, 5]}, "verify", "new")
    assert dst == "new"  # no other scenario: a new one
    g.move("A", dst, total, 5, {"verify": [0, 5]}, {"verify"})
    assert g.known["A"].members == 5 and g.known["new"].members == 5
    assert g.outcomes["A"] == {"verify": [5, 0]} and g.outcomes["new"] == {"verify": [0, 5]}
    assert disagree(g.outcomes["A"], g.outcomes["new"], p=0.01, min_count=5)
    # the next run of X's wording joins the split-off scenario (0.7 from A, and it ran A's path) and stays there
    assert g.assign(X, "X2", "verify", False) == ("new", [])
    g.agreement = None  # shared paths alone would merge them back; the disagreement on "verify" does not
    assert g.overlap_of("A", "new") == 0.0
    g.split_p = None
    assert g.overlap_of("A", "new") == 1.0


def test_split_settings_are_checked():
    s = ProceduralSettings()
    assert (s.split_p, s.split_link, s.split_min_runs, s.split_window) == (0.01, 0.8, 5, 200)
    assert ProceduralSettings(split_p=None).split_p is None
    for bad in ({"split_p": 0.0}, {"split_p": 1.0}, {"split_p": True}, {"split_link": 0.0}, {"split_link": 1.5},
                {"split_min_runs": 1}, {"split_window": 0}, {"split_window": True}):
        with pytest.raises(ConfigurationError):
            ProceduralSettings(**bad)


# ---------------------------------------------------------------- the store, both engines

ASK_A, ASK_X = "reorder what I got in order", "my order arrived with an item missing"
VECTORS = {ASK_A: A, ASK_X: X}


def fixed(db, **settings) -> ProcedureStore:
    return fixed_store(db, VECTORS, "fixed-split-3", **settings)


async def scenario_of(db, sid: str) -> str:
    [(scenario,)] = await rows(db, "SELECT scenario_id FROM procedure_runs WHERE session_id = :s", s=sid)
    return scenario


async def stats(db, app: str) -> dict[tuple[str, str], tuple[int, int]]:
    got = await rows(db, "SELECT scenario_id, path_hash, successes, failures FROM procedure_stats WHERE app_name = :a",
                     a=app)
    return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in got}


async def members(db, app: str) -> dict[str, int]:
    got = await rows(db, "SELECT scenario_id, members FROM procedure_scenarios WHERE app_name = :a AND scenario_id <> ''",
                     a=app)
    return {r[0]: int(r[1]) for r in got}


@pytest.mark.parametrize("split_p", [0.01, None])
async def test_the_store_moves_a_wrongly_joined_wording_out_with_its_counts(pdb, split_p):
    app = "split" if split_p else "nosplit"
    ps = fixed(pdb, split_p=split_p, audit=AuditSettings())
    a_runs = [session(run("i", ASK_A, ["lookup", "reorder"], True), app=app, user="ann") for _ in range(5)]
    for s in a_runs:
        await ps.extract_session(s)
    home = await scenario_of(pdb, a_runs[0].id)
    x_runs = [session(run("i", ASK_X, ["ticket"], ok), app=app, user="bob") for ok in (True, True, False, True)]
    for s in x_runs:
        await ps.extract_session(s)
    assert {await scenario_of(pdb, s.id) for s in x_runs} == {home}  # joined by text: the wrong join
    fifth = session(run("i", ASK_X, ["ticket"], True), app=app, user="bob")
    await asyncio.gather(ps.extract_session(fifth), ps.extract_session(fifth))  # two extractors of one session agree
    where = {await scenario_of(pdb, s.id) for s in [*x_runs, fifth]}
    if split_p is None:  # the rule before: nothing undoes the join
        assert where == {home} and await members(pdb, app) == {home: 10}
        return
    [other] = where
    assert other != home and {await scenario_of(pdb, s.id) for s in a_runs} == {home}
    assert await members(pdb, app) == {home: 5, other: 5}
    by_scenario = await stats(pdb, app)
    assert sorted(by_scenario.values()) == [(4, 1), (5, 0)]  # each scenario holds its own path's counts only
    assert {k[0] for k, v in by_scenario.items() if v == (4, 1)} == {other}
    [(vec_sum,)] = await rows(pdb, "SELECT vector_sum FROM procedure_scenarios WHERE scenario_id = :s", s=other)
    assert vec_sum  # the moved runs' vectors went with them
    hit = await ps.recall_procedures(app, ASK_X, top_k=5)  # X's wording is now served X's path, not A's
    assert hit.scenario_id == other and [p.tools for p in hit.procedures] == [["ticket"]]
    audit = await rows(pdb, "SELECT operation, user_id, row_count FROM audit_log WHERE app_name = :a "
                            "AND operation = 'procedure_split'", a=app)
    assert [tuple(r) for r in audit] == [("procedure_split", "bob", 5)]
    later = session(run("i", ASK_X, ["ticket"], True), app=app, user="bob")
    await ps.extract_session(later)  # joins the split-off scenario; never merged back
    assert await scenario_of(pdb, later.id) == other and await members(pdb, app) == {home: 5, other: 6}
    await delete_user_data(pdb, app, "bob")  # erasure still removes every moved contribution
    assert await members(pdb, app) == {home: 5} and sorted((await stats(pdb, app)).values()) == [(5, 0)]


def test_split_runs_go_to_the_near_scenario_they_agree_with():
    g = Grouping([], join=0.9, merge=0.45, agreement=0.5, split_p=0.01, split_min=5)
    for _ in range(5):
        g.assign(A, "A", "pa", True)
        g.assign(X, "X", "px", True)  # X's task already has a scenario of its own (0.7 from A: under the join bar 0.9)
    moved = {"px": [5, 0]}
    assert g.split_to("A", X * 5, moved, "px", "new") == "X"  # near, ran px, agrees
    assert g.split_to("A", X * 5, {"px": [0, 5]}, "px", "new") == "new"  # ran px with the opposite luck: a new one
    assert g.split_to("A", X * 5, moved, "py", "new") == "new"  # never ran the moved runs' path
    far = np.array([0.0, 1.0, 0.0])  # 0.0 from X's centroid: under merge_similarity
    assert g.split_to("A", far * 5, moved, "px", "new") == "new"
