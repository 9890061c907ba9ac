"""Recall keeps the vote's request vectors between calls, and still votes as the store says now (both engines).

A store reads the newest runs' keys and scenarios on every recall and
fetches only vectors it has not seen (``procedural.vote_cache``): a warm store
must give what a new store gives after new runs, merges and erasure.
"""

from __future__ import annotations

import numpy as np

from adk_oceanbase.governance import delete_user_data
from adk_oceanbase.procedural.vote_cache import VoteVectors

from .helpers import rows, run, session, store

REQUESTS = {"refund": ["refund my order please", "I need a refund on my order"],
            "invoice": ["send me the invoice", "the invoice for my order please"]}


def same(a, b) -> bool:
    return (a.scenario_id, a.similarity, [p.path_hash for p in a.procedures], [p.samples for p in a.procedures]) == (
        b.scenario_id, b.similarity, [p.path_hash for p in b.procedures], [p.samples for p in b.procedures])


async def test_a_warm_store_recalls_what_a_new_store_recalls_as_runs_arrive(pdb):
    warm = store(pdb, recall_neighbours=3)
    for i in range(6):
        for task, wordings in REQUESTS.items():
            await warm.extract_session(session(run("i", wordings[i % 2], [f"{task}_tool"], i % 3 != 0), user=f"u{i}"))
        for wordings in REQUESTS.values():
            for text in wordings:
                assert same(await warm.recall_procedures("shop", text), await store(pdb, recall_neighbours=3)
                            .recall_procedures("shop", text))


async def test_a_warm_store_follows_a_run_moved_to_another_scenario_and_drops_erased_votes(pdb):
    warm = store(pdb, recall_neighbours=3, similarity=0.99)  # every wording its own scenario
    for _ in range(3):
        await warm.extract_session(session(run("i", "refund my order please", ["refund_tool"], True), user="bob"))
    await warm.extract_session(session(run("i", "send me the invoice", ["invoice_tool"], True), user="alice"))
    refund = (await warm.recall_procedures("shop", "refund my order please")).scenario_id
    invoice = (await warm.recall_procedures("shop", "send me the invoice")).scenario_id
    assert refund != invoice
    async with pdb.engine.begin() as conn:  # what a merge does to the runs' rows
        from sqlalchemy import text

        await conn.execute(text("UPDATE procedure_runs SET scenario_id = :s WHERE user_id = 'bob'"), {"s": invoice})
    assert (await warm.recall_procedures("shop", "refund my order please")).scenario_id == invoice
    await delete_user_data(pdb, "shop", "bob")
    assert await rows(pdb, "SELECT COUNT(*) FROM procedure_runs WHERE user_id = 'bob'") == [(0,)]
    # bob's runs no longer vote: the warm store's answer is a new store's (no run near, centroids only)
    after = await warm.recall_procedures("shop", "refund my order please")
    assert same(after, await store(pdb, recall_neighbours=3, similarity=0.99).recall_procedures("shop", "refund my order please"))
    assert after.scenario_id != invoice


def test_vote_vectors_keep_only_the_scopes_current_runs_and_a_bounded_number_of_scopes():
    cache = VoteVectors(scopes=2)
    one = np.ones(3, dtype=np.float32)
    a, b = ("u", "s1", "i", "h1"), ("u", "s2", "i", "h2")
    assert cache.keep("x", [a, b]) == {}
    cache.add("x", {a: one, b: one})
    assert set(cache.keep("x", [b])) == {b}  # a left the window: gone
    assert set(cache.keep("x", [a, b])) == {b}  # and not back until fetched again
    changed = ("u", "s2", "i", "other hash")  # another request under the same key is another entry
    assert cache.keep("x", [changed]) == {}
    cache.keep("y", [a])
    cache.add("y", {a: one})
    cache.add("never kept", {a: one})  # only a scope just read (keep) takes vectors
    cache.keep("z", [])  # a third scope: the least recently read one (x) goes
    assert len(cache) == 1  # y's
    assert cache.keep("x", [b]) == {}
