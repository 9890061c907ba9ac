"""Pure parts of benchmarks/retrieval.py: LoCoMo normalisation, metrics, synthetic sets, baselines.

No database, no model, no LoCoMo file: hand-made inputs whose answers are
worked out in the assertions.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

import numpy as np
import pytest

from benchmarks._locomo import load_locomo, memory_text, normalise_evidence, parse_session_time
from benchmarks._metrics import aggregate, mrr, ndcg_at_k, percentile, query_metrics, recall_at_k
from benchmarks._synthetic import clustered_vectors, make_knowledge_update_set


# ------------------------------------------------------------------ LoCoMo
@pytest.mark.parametrize(
    ("raw", "ids", "repaired"),
    [
        ("D1:3", ["D1:3"], False),
        ("D:11:26", ["D11:26"], True),
        ("D30:05", ["D30:5"], True),
        ("D8:6; D9:17", ["D8:6", "D9:17"], True),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], True),
        ("D", [], True),
        ("", [], True),
    ],
)
def test_normalise_evidence(raw, ids, repaired):
    assert normalise_evidence(raw) == (ids, repaired)


def test_parse_session_time():
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert parse_session_time("10:04 am on 19 January, 2024") == datetime(2024, 1, 19, 10, 4, tzinfo=timezone.utc)
    with pytest.raises(ValueError):
        parse_session_time("yesterday")


def _tiny_locomo(tmp_path):
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Look at my dog.", "blip_caption": "a photo of a dog"},
        ],
        "session_2_date_time": "9:00 am on 10 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "I adopted a cat."}],
    }
    qa = [
        {"question": "Who has a dog?", "answer": "Bo", "evidence": ["D1:2"], "category": 4},
        {"question": "Pets?", "answer": "dog, cat", "evidence": ["D1:2; D2:1", "D:2:1"], "category": 1},
        {"question": "Ghost?", "answer": "x", "evidence": ["D9:9", "D"], "category": 2},
        {"question": "Adv?", "adversarial_answer": "no", "evidence": ["D2:1"], "category": 5},
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conv, "qa": qa}]))
    return path


def test_load_locomo_counts_repairs_and_drops(tmp_path):
    convs, stats = load_locomo(_tiny_locomo(tmp_path))
    (c,) = convs
    assert [t.dia_id for t in c.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [q.evidence for q in c.queries] == [("D1:2",), ("D1:2", "D2:1"), ("D2:1",)]
    assert c.queries[2].answer == "no"  # adversarial answer kept
    assert stats.evidence_ids == 6  # raw strings, before splitting
    assert stats.evidence_repaired == 2
    assert stats.evidence_dropped_malformed == 1  # "D"
    assert stats.evidence_dropped_dangling == 1  # "D9:9"
    assert stats.queries_without_evidence == 1
    assert stats.queries == 3 and stats.turns == 3


def test_memory_text_carries_speaker_date_and_caption(tmp_path):
    convs, _ = load_locomo(_tiny_locomo(tmp_path))
    turn = convs[0].turns[1]
    assert turn.time == datetime(2023, 5, 8, 13, 56, 1, tzinfo=timezone.utc)  # one second per turn
    assert memory_text(turn) == "8 May 2023, Bo: Look at my dog. [shares a photo: a photo of a dog]"


# ------------------------------------------------------------------ metrics
def test_recall_at_k():
    ranked = ["a", "x", "b", "y"]
    assert recall_at_k(ranked, {"a", "b"}, 1) == 0.5
    assert recall_at_k(ranked, {"a", "b"}, 3) == 1.0
    assert recall_at_k(ranked, {"z"}, 10) == 0.0
    assert recall_at_k(["a", "a", "b"], {"a", "b"}, 2) == 1.0  # duplicates do not use up a slot
    with pytest.raises(ValueError):
        recall_at_k(ranked, set(), 1)


def test_ndcg_at_k():
    assert ndcg_at_k(["a", "b"], {"a"}) == 1.0
    assert ndcg_at_k(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    # two relevant, found at ranks 1 and 3: (1 + 1/2) / (1 + 1/log2(3))
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["x", "y", "z", "a"], {"a"}, k=3) == 0.0


def test_mrr_and_query_metrics():
    assert mrr(["x", "y", "a"], {"a", "b"}) == pytest.approx(1 / 3)
    assert mrr(["x"], {"a"}) == 0.0
    m = query_metrics(["x", "a"], ["a"])
    assert m == {"R@1": 0.0, "R@5": 1.0, "R@10": 1.0, "nDCG@10": pytest.approx(1 / math.log2(3)), "MRR": 0.5}


def test_aggregate_means_per_group():
    out = aggregate([("g", {"R@1": 1.0}), ("g", {"R@1": 0.0}), ("h", {"R@1": 0.25})])
    assert out == {"g": {"R@1": 0.5, "n": 2}, "h": {"R@1": 0.25, "n": 1}}


def test_percentile_matches_numpy():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0, 10.0]
    for q in (0, 50, 95, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    assert math.isnan(percentile([], 50))


# ------------------------------------------------------------------ synthetic sets
def test_knowledge_update_set_is_seeded_and_well_formed():
    a, b = make_knowledge_update_set(3), make_knowledge_update_set(3)
    assert a == b
    assert make_knowledge_update_set(4) != a
    by_id = {m.memory_id: m for m in a.memories}
    assert len(by_id) == len(a.memories)
    for q in a.queries:
        target = by_id[q.relevant]
        group = [m for m in a.memories if m.group == target.group]
        assert len(group) >= 2
        newest = min(group, key=lambda m: m.days_ago)
        if q.signal == "recency":
            assert target is newest
        else:  # frequency: never the newest, and recalled more than any sibling
            assert target is not newest
            counts = {m.memory_id: a.warmups.count(m.text.rstrip(".")) for m in group}
            assert counts[target.memory_id] > max(v for k, v in counts.items() if k != target.memory_id)
    assert {q.signal for q in a.queries} == {"recency", "frequency"}


def test_clustered_vectors_are_unit_and_seeded():
    v = clustered_vectors(500, 16, seed=1, clusters=10)
    assert v.shape == (500, 16) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, clustered_vectors(500, 16, seed=1, clusters=10))


# ------------------------------------------------------------------ baselines
async def test_baselines_rank_hand_made_docs():
    from benchmarks._baselines import BM25System, DenseSystem, Doc, FusionSystem

    t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    docs = [
        Doc("cat", "my cat sleeps all day", "my cat sleeps all day", "u", t, np.array([1.0, 0.0], dtype=np.float32)),
        Doc("car", "the red car is fast", "the red car is fast", "u", t, np.array([0.0, 1.0], dtype=np.float32)),
        Doc("dog", "a dog barks at the mailman", "a dog barks at the mailman", "u", t, np.array([0.6, 0.8], dtype=np.float32)),
    ]
    q = np.array([0.0, 1.0], dtype=np.float32)
    dense = DenseSystem()
    await dense.index("s", docs)
    assert await dense.search("s", "anything", q, 2) == ["car", "dog"]
    bm25 = BM25System()
    await bm25.index("s", docs)
    assert (await bm25.search("s", "dog mailman", q, 1)) == ["dog"]
    fusion = FusionSystem(w_cos=0.5, w_bm25=0.5)
    await fusion.index("s", docs)
    # cosine prefers car (1.0) over dog (0.8); BM25 on "dog" lifts dog above car
    assert (await fusion.search("s", "dog", q, 1)) == ["dog"]
