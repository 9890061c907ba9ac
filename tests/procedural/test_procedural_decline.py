"""A path that broke stops being advised within a few runs; a stable path's chance failures change nothing (issue 27)."""

from __future__ import annotations

import dataclasses

import pytest

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.procedural import ProceduralSettings
from adk_oceanbase.procedural.recall import Recall
from adk_oceanbase.procedural.serving import format_advice
from adk_oceanbase.procedural.stats import decline_point

from .helpers import run, session, store

REFUND = "please refund my order number 12"


def test_decline_point_finds_the_newest_failures_after_a_good_past():
    # newest first: three failures after ten successes is a change (p = 1/286), one failure is not (1/11)
    p, k = decline_point([False] * 3 + [True] * 10)
    assert k == 3 and p == pytest.approx(1 / 286)
    p, k = decline_point([False] + [True] * 10)
    assert k == 1 and p == pytest.approx(1 / 11)
    # a path that got better, or never changed, has no decline
    assert decline_point([True] * 4 + [False] * 6) == (1.0, 0)
    assert decline_point([True] * 8) == (1.0, 0) and decline_point([False] * 8) == (1.0, 0) and decline_point([]) == (1.0, 0)
    # a steady ~85 % path whose failures are spread out: no split is far below the rest
    steady = [False, True, True, True, True, True, True, False, True, True, True, True, True, True, True, True, False]
    assert decline_point(steady)[0] > 0.05


def test_decline_p_is_validated():
    assert ProceduralSettings(decline_p=None).decline_p is None
    for bad in (0, 1, 1.5, -0.1, True):
        with pytest.raises(ConfigurationError):
            ProceduralSettings(decline_p=bad)


async def _record(ps, script, app="shop"):
    for tool, ok in script:
        await ps.extract_session(session(run("i", REFUND, [tool], ok), app=app))


async def _paths(ps, app="shop"):
    hit = await ps.recall_procedures(app, REFUND, top_k=5)
    return hit, {p.tools[0]: p for p in [*hit.procedures, *hit.avoid, *hit.unproven]}


async def test_a_path_that_breaks_stops_being_advised_within_two_runs(pdb):
    on, off = store(pdb), store(pdb, decline_p=None)
    assert on.settings.decline_p is not None  # the default tests for a decline
    await _record(on, [("other", False), ("other", True)] + [("old", True)] * 20)
    hit, every = await _paths(on)
    assert hit.procedures[0].tools == ["old"] and not every["old"].getting_worse
    await _record(on, [("old", False)])  # one failure after twenty successes is chance: still advised
    hit, every = await _paths(on)
    assert hit.procedures[0].tools == ["old"] and not every["old"].getting_worse
    await _record(on, [("old", False)])  # two in a row after twenty: p = 1/231, a change; too few runs since to advise
    hit, every = await _paths(on)
    assert "old" not in [p.tools[0] for p in [*hit.procedures, *hit.avoid]] and every["old"].getting_worse
    await _record(on, [("old", False)])
    hit, every = await _paths(on)
    old = every["old"]
    assert "old" not in [p.tools[0] for p in hit.procedures]
    assert old.getting_worse and old.recent_samples == 3 and old.recent_success_rate == 0.0
    assert old.earlier_success_rate == pytest.approx(1.0) and old.samples == 23  # the counts keep all time
    assert [p.tools[0] for p in hit.avoid] == ["old"]
    assert hit.as_dict()["avoid"][0]["getting_worse"] is True
    # the rule before: twenty old successes still outweigh three fresh failures
    hit, every = await _paths(off)
    assert hit.procedures[0].tools == ["old"] and not every["old"].getting_worse
    assert every["old"].earlier_success_rate is None


async def test_a_stable_path_with_old_chance_failures_keeps_its_evidence(pdb):
    on, off = store(pdb), store(pdb, decline_p=None)
    ok = [False, True, True, True, True, True, True, True, True, False, True, True, True, True, True, True, False]
    await _record(on, [("steady", x) for x in ok])  # ~85 %, the newest run a failure
    (hit_on, every_on), (hit_off, every_off) = await _paths(on), await _paths(off)
    assert hit_on.procedures[0].tools == hit_off.procedures[0].tools == ["steady"]
    steady = every_on["steady"]
    assert not steady.getting_worse and steady.earlier_success_rate is None
    assert steady.confidence == every_off["steady"].confidence and steady.evidence == every_off["steady"].evidence


async def test_a_broken_path_recovers_its_advice_once_it_works_again(pdb):
    ps = store(pdb)
    await _record(ps, [("flaky", True)] * 12 + [("flaky", False)] * 4)
    _, every = await _paths(ps)
    assert every["flaky"].getting_worse
    await _record(ps, [("flaky", True)] * 12)  # fixed: the failures are now a dip in the past, not the newest runs
    hit, every = await _paths(ps)
    assert not every["flaky"].getting_worse and hit.procedures[0].tools == ["flaky"]


def test_the_advice_says_a_path_is_getting_worse():
    from .test_procedural_serving import _proc  # one Procedure builder for the serving tests

    broken = dataclasses.replace(_proc(9, 0.0), getting_worse=True, earlier_success_rate=0.9)
    block = format_advice(Recall(scenario_id="s", similarity=1.0, procedures=[_proc(0)], avoid=[broken]),
                          budget_tokens=10_000)
    assert "getting worse (was 90%)" in block and block.count("getting worse") == 1
