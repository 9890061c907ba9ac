"""Compaction policies are pure decisions over stored metadata: thresholds, keep-last-N, key events, recursion."""

from __future__ import annotations

import pytest

from adk_oceanbase.compaction.policy import EventInfo, KeepLastN, TokenThresholdPolicy


def events(n: int, tokens: int = 100, kinds: dict[int, str] | None = None, summaries: list[int] | None = None):
    out = [EventInfo(seq=s, ts=1000.0 + s, tokens=500, event_type="compaction") for s in (summaries or [])]
    base = len(out)
    for i in range(n):
        kind = (kinds or {}).get(i, "message")
        out.append(EventInfo(seq=base + i + 1, ts=2000.0 + i, tokens=tokens, event_type=kind, is_final=kind == "message"))
    return out


def test_below_low_does_nothing():
    assert TokenThresholdPolicy(low=4000, high=8000, keep_last=5).plan(events(39, tokens=100)) is None


def test_between_low_and_high_extracts_and_keeps_key_events():
    evs = events(50, tokens=100, kinds={3: "error", 7: "function_response", 45: "error"})
    plan = TokenThresholdPolicy(low=4000, high=8000, keep_last=10).plan(evs)
    assert plan.mode == "extract"
    assert plan.compact_seqs == tuple(e.seq for e in evs[:40])
    # key events inside the compacted prefix are kept verbatim; the one in the tail stays raw anyway
    assert plan.key_seqs == (evs[3].seq, evs[7].seq)


def test_at_high_summarises():
    plan = TokenThresholdPolicy(low=4000, high=8000, keep_last=10).plan(events(80, tokens=100))
    assert plan.mode == "summarize" and len(plan.compact_seqs) == 70 and plan.fold_summaries == ()


def test_final_answers_are_key_only_when_asked():
    evs = events(30, tokens=300)
    assert TokenThresholdPolicy(low=10, high=10**6, keep_last=5).plan(evs).key_seqs == ()
    keyed = TokenThresholdPolicy(low=10, high=10**6, keep_last=5, key_types=frozenset({"final"})).plan(evs)
    assert keyed.key_seqs == keyed.compact_seqs


def test_summaries_that_outgrow_their_budget_are_folded():
    evs = events(50, tokens=100, summaries=[1, 2, 3])  # 1500 summary tokens
    plan = TokenThresholdPolicy(low=10, high=10**6, keep_last=10, max_summary_tokens=1000).plan(evs)
    assert plan.mode == "summarize" and plan.fold_summaries == (1, 2, 3)
    assert TokenThresholdPolicy(low=10, high=10**6, keep_last=10, max_summary_tokens=2000).plan(evs).fold_summaries == ()


def test_keep_last_n_waits_for_a_batch():
    pol = KeepLastN(keep_last=20, min_batch=10)
    assert pol.plan(events(29)) is None
    plan = pol.plan(events(30))
    assert plan.mode == "summarize" and len(plan.compact_seqs) == 10


def test_thresholds_are_validated():
    with pytest.raises(ValueError):
        TokenThresholdPolicy(low=9000, high=8000)
