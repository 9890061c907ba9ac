"""A run joins the task whose tool path it ran, not only the nearest centroid (issue 27, session 19).

The failure it fixes (benchmarks/README.md, session 19): a wording nearer
another task's centroid than its own task's joined that task by its text
alone, and once there its paths were filed there too (a scenario holding two
tasks).  ``ProceduralSettings.path_similarity`` lets what the run did decide
among the scenarios near enough.  Vectors are set by hand so the geometry is exact.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore
from adk_oceanbase.procedural.scenarios import Grouping

from .helpers import fixed_store, rows, run, session

A, B = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
ODD = np.array([0.5, 0.7, np.sqrt(0.26)])  # 0.5 from A (under the join bar 0.6), 0.7 from B (over it)
FAR = np.array([0.5, 0.3, np.sqrt(0.66)])  # 0.5 from A, 0.3 from B: no centroid reaches the join bar


def grouping(path_join: float | None) -> Grouping:
    g = Grouping([], join=0.6, merge=0.45, agreement=0.5, path_join=path_join)
    assert g.assign(A, "A", "pa", True) == ("A", []) and g.assign(B, "B", "pb", True) == ("B", [])
    return g


def test_a_wording_nearer_another_tasks_centroid_joins_the_task_whose_path_it_ran():
    assert grouping(None).assign(ODD, "new", "pa", True)[0] == "B"  # the old rule: the text alone decides
    g = grouping(0.45)
    assert g.assign(ODD, "new", "pa", True)[0] == "A"  # only A ran "pa", and A is within 0.45
    assert g.paths["A"] == {"pa"} and g.paths["B"] == {"pb"}  # B never learns A's path
    assert grouping(0.45).assign(ODD, "new", "pb", True)[0] == "B"  # the nearest ran it too: as before
    assert grouping(0.45).assign(ODD, "new", "pz", True)[0] == "B"  # nobody ran it: the centroid decides
    assert grouping(0.55).assign(ODD, "new", "pa", True)[0] == "B"  # A (0.5) is under the path bar


def test_a_request_no_centroid_reaches_joins_the_near_scenario_that_ran_its_path():
    assert grouping(None).assign(FAR, "new", "pa", False)[0] == "new"  # the old rule starts a scenario
    assert grouping(0.45).assign(FAR, "new", "pa", False)[0] == "A"
    assert grouping(0.45).assign(FAR, "new", "pb", False)[0] == "new"  # B ran it, but B is at 0.3
    assert grouping(0.45).assign(FAR, "new", None)[0] == "new"  # no path: nothing to go by


def test_fragments_near_each_other_are_left_to_the_merge_rule():
    # two fragments of one task at 0.6 of each other (within merge_similarity): a run nearest the first on a
    # path only the second ran stays with the first, so both come to know the path and a merge can join them
    # (filing by path would keep their path sets apart for ever: the split the tune split measured)
    a2 = np.array([0.6, 0.8, 0.0])
    g = Grouping([], join=0.9, merge=0.45, agreement=0.5, path_join=0.45)
    g.assign(A, "A", "p1", True)
    assert g.assign(a2, "A2", "p2", True) == ("A2", [])  # no path in common yet: two scenarios
    near_a = np.array([0.95, np.sqrt(1 - 0.95 ** 2), 0.0])  # 0.95 from A, 0.81 from A2
    assert g.assign(near_a, "n", "p2", True) == ("A", [("A2", "A")])  # stays with A, then A2 (now sharing p2) folds in


def test_path_similarity_is_checked():
    assert ProceduralSettings().path_similarity == 0.4
    assert ProceduralSettings(path_similarity=None).path_similarity is None
    for bad in (0.0, 1.5, True):
        with pytest.raises(ConfigurationError):
            ProceduralSettings(path_similarity=bad)


ASK_A, ASK_B, ASK_ODD = "look up my invoice", "where is my parcel", "the odd wording"
VECTORS = {ASK_A: A, ASK_B: B, ASK_ODD: ODD}


def fixed(db, **settings) -> ProcedureStore:
    return fixed_store(db, VECTORS, "fixed-path-3", **settings)


async def scenario_of(db, sid: str) -> str:
    [(scenario,)] = await rows(db, "SELECT scenario_id FROM procedure_runs WHERE session_id = :s", s=sid)
    return scenario


@pytest.mark.parametrize("path_join", [0.45, None])
async def test_the_store_files_a_run_with_the_task_whose_path_it_ran(pdb, path_join):
    # both engines: the paths a join compares come from procedure_stats under the scope's lock
    app = f"pj{path_join}".replace(".", "")
    ps = fixed(pdb, merge_similarity=0.45, path_similarity=path_join)
    first_a = session(run("i", ASK_A, ["lookup", "send"], True), app=app)
    first_b = session(run("i", ASK_B, ["track"], True), app=app)
    for s in (first_a, first_b):
        await ps.extract_session(s)
    home_a, home_b = await scenario_of(pdb, first_a.id), await scenario_of(pdb, first_b.id)
    odd = session(run("i", ASK_ODD, ["lookup", "send"], True), app=app)
    await asyncio.gather(ps.extract_session(odd), ps.extract_session(odd))  # two extractors of one session agree
    assert await scenario_of(pdb, odd.id) == (home_a if path_join else home_b)  # the old rule files it with B
    [(members,)] = await rows(pdb, "SELECT members FROM procedure_scenarios WHERE scenario_id = :s", s=home_a)
    assert members == (2 if path_join else 1)
    if path_join is None:
        return
    hit = await ps.recall_procedures(app, ASK_ODD, top_k=5)  # its vote now goes to A's scenario: 1 of 1 nearest runs
    assert hit.scenario_id == home_a
    labelled = session(run("j", ASK_ODD, ["lookup", "send"], {"success": True, "scenario": "parcels"}), app=app)
    await ps.extract_session(labelled)  # an explicit label still names the scenario outright
    assert await scenario_of(pdb, labelled.id) not in (home_a, home_b)
