"""Paraphrases meet in one scenario with the packaged MiniLM; different tasks stay apart (seekdb and MariaDB)."""

from __future__ import annotations

import pytest

from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore

from .helpers import rows, run, session

pytestmark = pytest.mark.slow

REFUND = ["I want a refund for order 4411", "please give me my money back for order 4411",
          "refund my purchase 4411", "can I get order 4411 refunded?"]
TRACK = ["where is my parcel 9912?", "track shipment 9912 for me", "has package 9912 been delivered yet?"]


async def test_paraphrases_share_a_scenario_and_tasks_do_not(pdb, minilm):
    ps = ProcedureStore(database=pdb, embedder=minilm, settings=ProceduralSettings())
    for text in REFUND:
        await ps.extract_session(session(run("i", text, ["find_order", "refund"], True)))
    for text in TRACK:
        await ps.extract_session(session(run("i", text, ["track"], True)))
    groups = await rows(pdb, "SELECT scenario_id, GROUP_CONCAT(path_hash) FROM procedure_runs GROUP BY scenario_id")
    assert len(groups) == 2 and all(len(set(g[1].split(","))) == 1 for g in groups)
    hit = await ps.recall_procedures("shop", "could you refund order 4411")
    assert [p.tools for p in hit.procedures] == [["find_order", "refund"]]
