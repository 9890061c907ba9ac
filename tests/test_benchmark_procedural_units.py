"""The procedural benchmark's scripted agent (benchmarks/_procedural_env.choose), pure: no database, no model.

The agent explores by success per tool call (``cost``, issue 27): these pin what
that exponent does and does not change.
"""

from __future__ import annotations

import random

from benchmarks._procedural_env import Path, Scenario, choose

from adk_oceanbase.procedural.recall import Recall

NOTHING = Recall(None, 0.0, [], [])  # no evidence yet: every path's draw is Beta(1, 1)
TASK = Scenario("t", ["w"], [Path(("a",), 0.5), Path(("a", "b", "c", "d"), 0.5)])


def _picks(cost: float, n: int = 2000) -> list[int]:
    rng = random.Random(5)
    return [choose(NOTHING, TASK, rng, 0.5, cost)[0] for _ in range(n)]


def test_without_cost_paths_of_equal_evidence_are_drawn_evenly():
    cheap = _picks(0.0).count(0) / 2000
    assert 0.45 < cheap < 0.55


def test_cost_favours_the_path_with_fewer_calls_among_equal_evidence():
    # two uniform draws, the four-call path's divided by 4 ** 0.2 = 1.32: the one-call path wins with
    # probability 1 - 1 / (2 * 1.32) = 0.62
    cheap = _picks(0.2).count(0) / 2000
    assert 0.58 < cheap < 0.66


def test_cost_consumes_the_same_random_draws():
    # the benchmark's later draws (the attempt, the noise) stay aligned with a run at another exponent
    a, b = random.Random(9), random.Random(9)
    choose(NOTHING, TASK, a, 0.5, 0.0)
    choose(NOTHING, TASK, b, 0.5, 0.3)
    assert a.random() == b.random()
