"""Recall picks the scenario by the runs nearest the request, on both engines (issue 27, session 18).

The failure it fixes (benchmarks/README.md, session 16): a wording nearer
another task's centroid than its own task's got that task's paths.  Vectors
are set by hand here so the geometry is exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from adk_oceanbase.errors import ConfigurationError
from adk_oceanbase.governance import delete_user_data
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore
from adk_oceanbase.procedural.scenarios import vote

from .helpers import FixedEmbedder, fixed_store, rows, run, session

REFUND, REFUND_ODD, INVOICE = "refund order", "I want a refund for order", "send me the invoice"
# REFUND_ODD sits at 0.62 of REFUND (it joins the refund task while that is all there is) and at 0.72 of INVOICE
VECTORS = {REFUND: [0.0, 1.0, 0.0], REFUND_ODD: [0.72, 0.62, 0.31], INVOICE: [1.0, 0.0, 0.0], "elsewhere": [0.0, 0.0, 1.0]}


def store(db, **settings) -> ProcedureStore:
    return fixed_store(db, VECTORS, **settings)


def every(hit) -> set[str]:
    return {p.tools[0] for p in [*hit.procedures, *hit.avoid, *hit.unproven]}


async def test_a_wording_nearer_another_tasks_centroid_recalls_its_own_runs(pdb):
    ps = store(pdb, recall_neighbours=5)
    for _ in range(20):
        await ps.extract_session(session(run("i", REFUND, ["refund_tool"], True)))
    for _ in range(3):  # the odd wording joins the refund scenario: the only one there is (0.62 >= 0.6)
        await ps.extract_session(session(run("i", REFUND_ODD, ["refund_tool"], True)))
    for _ in range(8):  # then invoice starts its own scenario (0.10 from the refund centroid)
        await ps.extract_session(session(run("i", INVOICE, ["invoice_tool"], True)))
    homes = await rows(pdb, "SELECT DISTINCT scenario_id, tool_path LIKE '%refund_tool%' FROM procedure_runs")
    assert len(homes) == 2  # grouping was right: each task in its own scenario
    refund = next(s for s, is_refund in homes if is_refund)
    # now the refund centroid (20 + 3 members) is at 0.70 of the odd wording, the invoice one at 0.72:
    # pooling by centroids puts invoice first and its path among the odd wording's advice
    before = await store(pdb, recall_neighbours=None).recall_procedures("shop", REFUND_ODD, top_k=5)
    assert before.scenario_id != refund and "invoice_tool" in every(before)
    # its 3 earlier runs are its nearest (1.0, then invoice's at 0.72): 3 votes of 5 for the refund scenario
    hit = await ps.recall_procedures("shop", REFUND_ODD, top_k=5)
    assert hit.scenario_id == refund and hit.similarity == pytest.approx(1.0, abs=1e-3)
    assert every(hit) == {"refund_tool"} and hit.procedures[0].samples == 23
    # the plain invoice request still recalls invoice: its own runs are its nearest
    assert every(await ps.recall_procedures("shop", INVOICE, top_k=5)) == {"invoice_tool"}


async def test_votes_read_the_stored_runs_erasure_and_the_centroid_fallback(pdb):
    ps = store(pdb, recall_neighbours=3)
    await ps.extract_session(session(run("i", REFUND, ["refund_tool"], True), user="alice"))
    for _ in range(3):
        await ps.extract_session(session(run("i", REFUND_ODD, ["odd_tool"], True), user="bob"))
    hit = await ps.recall_procedures("shop", REFUND_ODD, top_k=5)
    assert every(hit) == {"refund_tool", "odd_tool"}  # one scenario (joined at 0.62): the vote names it
    # no run within the similarity floor: nothing to vote with, and no centroid near either
    assert (await ps.recall_procedures("shop", "elsewhere")).scenario_id is None
    # another embedding model's vectors never vote, even at the same dimension
    other = ProcedureStore(database=pdb, embedder=FixedEmbedder(VECTORS, "other-3"), settings=ProceduralSettings(recall_neighbours=3))
    assert (await other.recall_procedures("shop", REFUND_ODD)).scenario_id is None
    await delete_user_data(pdb, "shop", "bob")
    assert every(await ps.recall_procedures("shop", REFUND_ODD, top_k=5)) == {"refund_tool"}
    assert await rows(pdb, "SELECT COUNT(*) FROM procedure_runs") == [(1,)]
    # a request no run in the scanned window is near (the newest one: carol's invoice) falls back to the centroids
    far = store(pdb, recall_neighbours=3, neighbour_window=1)
    await far.extract_session(session(run("i", INVOICE, ["invoice_tool"], True), user="carol"))
    assert every(await far.recall_procedures("shop", REFUND, top_k=5)) == {"refund_tool"}


def test_vote_is_the_majority_of_the_nearest_runs_ties_to_the_nearer():
    v = np.array([[1.0, 0.0], [0.96, 0.28], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    q = np.array([0.8, 0.6])  # cosines 0.8, 0.936, 0.96, 0.6
    assert vote(q, ["a", "b", "b", "c"], v, k=3, floor=0.5) == ("b", 0.96)
    assert vote(q, ["a", "b", "a", "c"], v, k=2, floor=0.5) == ("a", 0.96)  # 1 each: the nearer run's
    assert vote(q, ["a", "b", "b", "c"], v, k=3, floor=0.97) == (None, 0.0)
    assert vote(q, [], np.zeros((0, 2), dtype=np.float32), k=3, floor=0.5) == (None, 0.0)
    for bad in (0, True, 1.5):
        with pytest.raises(ConfigurationError):
            ProceduralSettings(recall_neighbours=bad)
    with pytest.raises(ConfigurationError):
        ProceduralSettings(neighbour_window=0)
