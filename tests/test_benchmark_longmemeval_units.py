"""LongMemEval mode's pure parts (benchmarks/_longmemeval.py) on a tiny LongMemEval-shaped fixture.

No dataset file, no database, no model: the fixture is written here, vectors
are hand-made, and every expected number is worked out in the assertions.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import datetime, timezone

import numpy as np
import pytest

from benchmarks._baselines import DenseSystem
from benchmarks._longmemeval import (
    ABSTENTION,
    build_docs,
    evaluate_lme,
    lme_text,
    load_longmemeval,
    paired_bootstrap,
    parse_lme_date,
    question_metrics,
    select_questions,
    session_ranking,
    split_of,
)


def _item(qid: str, qtype: str, sessions: dict[str, list[tuple[str, str, bool]]], answer_sessions: list[str]) -> dict:
    """One entry in LongMemEval's layout; ``sessions``: id -> [(role, content, has_answer)]."""
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": f"question {qid}?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "x",
        "answer_session_ids": answer_sessions,
        "haystack_dates": [f"2023/05/{10 + i:02d} (Wed) 09:3{i}" for i in range(len(sessions))],
        "haystack_session_ids": list(sessions),
        "haystack_sessions": [
            [{"role": r, "content": c, **({"has_answer": True} if h else {})} for r, c, h in turns]
            for turns in sessions.values()
        ],
    }


FIXTURE = [
    _item("q1", "single-session-user", {
        "s_a": [("user", "I adopted a cat named Miso", True), ("assistant", "Lovely name for a cat", False)],
        "s_b": [("user", "Planning a trip to Lisbon", False), ("assistant", "Lisbon is hilly", False)],
    }, ["s_a"]),
    _item("q2", "multi-session", {
        "s_c": [("user", "I bought two bikes", True)],
        "s_d": [("user", "Weather is nice today", False)],
        "s_e": [("user", "I sold one bike last week", True), ("assistant", "Noted", False)],
    }, ["s_c", "s_e"]),
    _item("q3_abs", "single-session-user", {"s_f": [("user", "I play the violin", False)]}, ["s_f"]),
]


@pytest.fixture
def lme_file(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(FIXTURE), encoding="utf-8")
    return path


def test_parse_date_and_text():
    when = parse_lme_date("2023/05/20 (Sat) 02:21")
    assert when == datetime(2023, 5, 20, 2, 21, tzinfo=timezone.utc)
    assert lme_text("user", when, "  I like tea ") == "20 May 2023, user: I like tea"  # the service's layout


def test_load_maps_turns_evidence_and_times(lme_file):
    questions, splits, stats = load_longmemeval(lme_file)
    by_id = {q.question_id: q for q in questions}
    q1, q2, q3 = by_id["q1"], by_id["q2"], by_id["q3_abs"]
    assert [t.turn_id for t in q1.turns] == ["s_a:0", "s_a:1", "s_b:0", "s_b:1"]
    assert [t.role for t in q1.turns] == ["user", "assistant", "user", "assistant"]
    assert q1.turns[1].time == datetime(2023, 5, 10, 9, 30, 1, tzinfo=timezone.utc)  # session date + index s
    assert q1.turns[2].time == datetime(2023, 5, 11, 9, 31, tzinfo=timezone.utc)
    assert q1.asked_at == datetime(2023, 6, 1, 10, 0, tzinfo=timezone.utc)
    assert q1.evidence_turns == ("s_a:0",) and q2.evidence_turns == ("s_c:0", "s_e:0")
    assert q2.answer_sessions == ("s_c", "s_e")
    assert q3.abstention and not q1.abstention
    assert stats["turns"] == 4 + 4 + 1 and stats["evidence_turns"] == 3
    assert stats["per_stratum"] == {ABSTENTION: 1, "multi-session": 1, "single-session-user": 1}
    assert set(splits) == {"q1", "q2", "q3_abs"}


def test_selection_is_stratified_deterministic_and_split_stable():
    pairs = [(f"u{i}", "single-session-user") for i in range(10)] + [(f"m{i}", "multi-session") for i in range(6)]
    pairs += [(f"a{i}_abs", "multi-session") for i in range(3)]
    two = select_questions(pairs, 2)
    assert len(two) == 6 and select_questions(list(reversed(pairs)), 2) == two  # file order does not matter
    assert sum(q.startswith("u") for q in two) == 2 and sum(q.endswith("_abs") for q in two) == 2
    assert set(two) <= set(select_questions(pairs, 4))  # a bigger run contains the smaller one
    assert len(select_questions(pairs, 0)) == len(pairs)
    assert select_questions(pairs, 0, [ABSTENTION]) == sorted(
        select_questions(pairs, 0, [ABSTENTION]), key=lambda q: hashlib.sha256(q.encode()).hexdigest())
    assert set(select_questions(pairs, 0, [ABSTENTION])) == {"a0_abs", "a1_abs", "a2_abs"}
    splits = split_of(pairs)
    for prefix in ("u", "m"):  # halves inside every stratum
        tune = sum(1 for q, s in splits.items() if q.startswith(prefix) and not q.endswith("_abs") and s == "tune")
        assert tune == {"u": 5, "m": 3}[prefix]
    # the first two of a stratum in hash order are one tune and one test question
    us = [q for q in two if q.startswith("u")]
    assert sorted(splits[q] for q in us) == ["test", "tune"]


def test_split_from_another_file_keeps_that_files_split(tmp_path):
    """The oracle file read with the s file's split: a question the s file lacks shifts the positions
    of the questions after it, and ``split_from`` undoes that shift; the lacking one keeps its own."""
    def item(qid):
        return {"question_id": qid, "question_type": "multi-session", "question": "?", "answer": "",
                "question_date": "2023/06/01 (Thu) 10:00", "haystack_dates": [], "haystack_session_ids": [],
                "haystack_sessions": [], "answer_session_ids": []}
    ids = [f"m{i}" for i in range(9)]
    full, short = tmp_path / "full.json", tmp_path / "short.json"
    full.write_text(json.dumps([item(q) for q in ids]), encoding="utf-8")
    dropped = sorted(ids, key=lambda q: hashlib.sha256(q.encode()).hexdigest())[2]
    short.write_text(json.dumps([item(q) for q in ids if q != dropped]), encoding="utf-8")
    _, own, _ = load_longmemeval(full)
    _, reference, _ = load_longmemeval(short)
    _, kept, stats = load_longmemeval(full, split_from=short)
    assert any(own[q] != reference[q] for q in reference)  # the shift this option exists for
    assert {q: kept[q] for q in reference} == reference and kept[dropped] == own[dropped]
    assert set(kept) == set(ids) and stats["split_from"] == str(short)


def test_paired_bootstrap_is_paired_and_reads_groups():
    a = {f"k{i}": {"group": "test:knowledge-update", "turn_nDCG@10": 0.5 + 0.04 * i} for i in range(10)}
    a["m0"] = {"group": "test:multi-session", "turn_nDCG@10": 1.0}
    a["x_abs"] = {"group": "test:abstention", "clean": 1.0}
    b = {q: {**r, "turn_nDCG@10": r["turn_nDCG@10"] - 0.1} for q, r in a.items() if "turn_nDCG@10" in r}
    b["x_abs"] = {"group": "test:abstention", "clean": 0.0}
    ku = paired_bootstrap(a, b, "test:knowledge-update")
    # every question 0.1 better: the difference has no spread, whatever the questions' own spread is
    assert ku["n"] == 10 and ku["mean"] == pytest.approx(0.1) and ku["low"] == pytest.approx(0.1)
    assert ku["high"] == pytest.approx(0.1)
    overall = paired_bootstrap(a, b, "test:overall")
    assert overall["n"] == 11  # both types, not the abstention question
    assert paired_bootstrap(a, b, "tune:overall")["n"] == 0
    b["k0"]["turn_nDCG@10"] = a["k0"]["turn_nDCG@10"] + 0.9  # one question the other way widens it
    wide = paired_bootstrap(a, b, "test:knowledge-update")
    assert wide["low"] < 0 < wide["high"] and wide["mean"] == pytest.approx((9 * 0.1 - 0.9) / 10)


def test_unknown_stratum_is_refused(lme_file):
    with pytest.raises(ValueError, match="single-session"):
        load_longmemeval(lme_file, None, ["single-session"])


def test_question_metrics_turn_and_session_level(lme_file):
    questions, _, _ = load_longmemeval(lme_file)
    q2 = next(q for q in questions if q.question_id == "q2")
    # evidence turns s_c:0 and s_e:0; ranked: s_d:0, s_e:1, s_c:0, then nothing
    m = question_metrics(q2, ["s_d:0", "s_e:1", "s_c:0"])
    assert m["turn_R@5"] == 0.5 and m["turn_any@5"] == 1.0
    assert m["turn_nDCG@10"] == pytest.approx((1 / np.log2(4)) / (1 + 1 / np.log2(3)))
    # sessions in rank order: s_d, s_e, s_c -> both answer sessions retrieved (s_e through a non-evidence turn)
    assert session_ranking(["s_d:0", "s_e:1", "s_c:0", "s_e:0"]) == ["s_d", "s_e", "s_c"]
    assert m["sess_R@5"] == 1.0 and m["sess_R@10"] == 1.0
    assert m["sess_nDCG@10"] == pytest.approx((1 / np.log2(3) + 1 / np.log2(4)) / (1 + 1 / np.log2(3)))
    assert m["returned"] == 3 and m["precision"] == pytest.approx(1 / 3)


def test_session_recall_at_k_counts_only_turns_in_the_top_k(lme_file):
    questions, _, _ = load_longmemeval(lme_file)
    q1 = next(q for q in questions if q.question_id == "q1")
    ranked = ["s_b:0", "s_b:1", "s_b:0", "s_b:1", "x:0", "s_a:1"]  # s_a's turn at rank 6 (after dedupe: 4)
    m = question_metrics(q1, ranked + [f"y:{i}" for i in range(5)])
    assert m["sess_R@5"] == 1.0  # deduped ranks: s_b:0, s_b:1, x:0, s_a:1 -> s_a within the top 5 turns
    m = question_metrics(q1, ["s_b:0", "s_b:1", "x:0", "x:1", "x:2", "s_a:1"])
    assert m["sess_R@5"] == 0.0 and m["sess_R@10"] == 1.0 and m["turn_R@10"] == 0.0


def test_abstention_question_gets_only_abstention_metrics(lme_file):
    questions, _, _ = load_longmemeval(lme_file)
    q3 = next(q for q in questions if q.question_id == "q3_abs")
    assert question_metrics(q3, []) == {"clean": 1.0, "empty": 1.0, "returned": 0.0, "precision": 1.0}
    m = question_metrics(q3, ["s_f:0"])  # its haystack has no answer: anything returned is irrelevant
    assert m["clean"] == 0.0 and "turn_R@5" not in m


class _Embedder:
    """Hand-made vectors: the question of q1 points at "Miso", everything else is orthogonal."""

    def embed(self, texts):
        out = np.zeros((len(texts), 3), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, 0 if ("Miso" in t or t == "question q1?") else 1 if "bike" in t else 2] = 1.0
        return out


def test_evaluate_groups_by_split_and_stratum(lme_file):
    questions, splits, _ = load_longmemeval(lme_file)
    emb = _Embedder()
    docs = build_docs(questions, emb)
    assert docs["q1"][1].author == "assistant" and docs["q1"][2].session == "s_b"
    q_vecs = dict(zip([q.question_id for q in questions], emb.embed([q.question for q in questions])))
    res = asyncio.run(evaluate_lme(DenseSystem(), questions, docs, q_vecs, splits, 10))
    m = res["metrics"]
    q1 = m[f"{splits['q1']}:single-session-user"]
    assert q1["turn_R@5"] == 1.0 and q1["turn_nDCG@10"] == 1.0 and q1["n"] == 1
    assert m[f"{splits['q3_abs']}:{ABSTENTION}"]["clean"] == 0.0  # dense always returns something
    overall = [g for g in m if g.endswith(":overall")]
    assert sum(m[g]["n"] for g in overall) == 2  # q1 and q2; the _abs question is left out
    pq = res["per_question"]  # what the paired comparison reads
    assert set(pq) == {"q1", "q2", "q3_abs"} and pq["q1"]["turn_nDCG@10"] == 1.0
    assert pq["q3_abs"]["group"] == f"{splits['q3_abs']}:{ABSTENTION}" and pq["q3_abs"]["clean"] == 0.0
