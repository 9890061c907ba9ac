"""The pruner (issue #30): the budget is never exceeded, groups stay whole, over-budget blocks degrade, reasons are given."""

from __future__ import annotations

import random

import pytest

from adk_oceanbase.context.blocks import Block, Budget, Priority, Sensitivity
from adk_oceanbase.context.pruner import prune
from adk_oceanbase.errors import ContextBudgetError, ValidationError


def b(bid: str, tokens: int, **kw) -> Block:
    kw.setdefault("kind", "event")
    return Block(bid, text=bid, tokens=tokens, **kw)


def random_blocks(rng: random.Random) -> list[Block]:
    out = []
    for i in range(rng.randint(1, 40)):
        summary = rng.random() < 0.4
        tokens = rng.randint(0, 400)
        out.append(Block(
            f"b{i}", rng.choice(["memory", "event", "summary", "evidence"]), "x", tokens,
            Priority(rng.choice(list(Priority)[:3])), must_keep=rng.random() < 0.05,
            created_at=0.0, ttl_s=rng.choice([None, 5.0, 50.0]), sensitivity=Sensitivity(rng.randint(0, 3)),
            group=rng.choice([None, None, "g1", "g2"]), summary="s" if summary else None,
            summary_tokens=rng.randint(0, tokens) if summary else 0, chain=rng.choice([None, "events"]),
            score=rng.random(), order=i,
        ))
    return out


def test_the_budget_is_never_exceeded_and_every_block_is_decided() -> None:
    rng = random.Random(30)
    raised = 0
    for _ in range(2000):
        blocks = random_blocks(rng)
        window = rng.randint(0, 4000)
        budget = Budget(window, rng.randint(0, min(300, window)) if rng.random() < 0.5 else 0,
                        {"memory": rng.randint(0, 500)}, Sensitivity(rng.randint(0, 3)))
        try:
            report = prune(blocks, budget, now=10.0)
        except ContextBudgetError:
            units: dict[str, list[Block]] = {}
            for x in blocks:
                units.setdefault(x.group or x.block_id, []).append(x)
            must = [u for u in units.values() if any(x.must_keep for x in u) and all(x.sensitivity <= budget.max_sensitivity for x in u)]
            # a must-keep block takes its whole group with it; even degraded they do not fit
            assert sum(x.summary_tokens if x.summary else x.tokens for u in must for x in u) > budget.available
            raised += 1
            continue
        assert report.used_tokens <= budget.available
        assert sorted(d.block.block_id for d in report.decisions) == sorted(x.block_id for x in blocks)
        assert all(d.reason for d in report.decisions)
        must_groups = {x.group for x in blocks if x.must_keep and x.group}
        sent_memory = sum(d.tokens for d in report.decisions if d.block.kind == "memory" and not d.block.must_keep
                          and d.block.group not in must_groups)  # must-keep units are exempt from caps
        assert sent_memory <= budget.kind_caps["memory"]
        for d in report.decisions:
            assert not (d.action != "dropped" and d.block.sensitivity > budget.max_sensitivity)
            if d.action == "dropped" and d.block.must_keep:
                assert d.reason.startswith("sensitivity")  # its own level or its group's: never for room
        for group in ("g1", "g2"):  # a group is never split: all dropped or none
            actions = {d.action == "dropped" for d in report.decisions if d.block.group == group}
            assert len(actions) <= 1
    assert 0 < raised < 2000


def test_must_keep_instruction_and_reply_reserve_are_paid_first() -> None:
    blocks = [b("instruction", 300, kind="instruction", must_keep=True, order=-2), b("tools", 200, kind="tools", must_keep=True, order=-1)]
    blocks += [b(f"e{i}", 100, chain="events", order=i) for i in range(10)]
    report = prune(blocks, Budget(1000, reserve_for_reply=200))
    assert report.used_tokens == 800  # 1000 - 200 reserved: instruction 300 + tools 200 + three events
    kept = [d.block.block_id for d in report.kept]
    assert kept == ["instruction", "tools", "e7", "e8", "e9"]  # newest, contiguous
    assert {d.reason for d in report.dropped} == {"100 tokens > 0 left", "older than the budget cut"}


def test_must_keep_blocks_that_cannot_fit_raise_a_typed_error() -> None:
    with pytest.raises(ContextBudgetError, match="reserved for the reply"):
        prune([b("instruction", 900, must_keep=True)], Budget(1000, reserve_for_reply=200))
    # one that can degrade does, instead of raising
    report = prune([b("instruction", 900, must_keep=True, summary="short", summary_tokens=100)], Budget(1000, reserve_for_reply=200))
    assert [d.action for d in report.decisions] == ["degraded"] and report.used_tokens == 100


def test_a_call_and_its_response_are_never_separated() -> None:
    blocks = [b("call", 50, group="g", chain="events", order=0), b("response", 400, group="g", chain="events", order=1),
              b("latest", 50, chain="events", order=2)]
    report = prune(blocks, Budget(300))
    assert [(d.block.block_id, d.action) for d in report.decisions] == [("call", "dropped"), ("response", "dropped"), ("latest", "kept")]
    report = prune(blocks, Budget(600))
    assert all(d.action == "kept" for d in report.decisions)


def test_over_budget_blocks_degrade_to_their_summary_before_being_dropped() -> None:
    blocks = [b("big", 500, summary="gist", summary_tokens=40, order=0), b("other", 100, order=1)]
    report = prune(blocks, Budget(200))
    big = report.decisions[0]
    assert (big.action, big.tokens, big.text) == ("degraded", 40, "gist") and "summary fits" in big.reason
    assert report.used_tokens == 140


def test_ttl_sensitivity_and_duplicate_ids() -> None:
    blocks = [
        b("stale", 10, created_at=0, ttl_s=5, order=0),
        b("stale-with-summary", 10, created_at=0, ttl_s=5, summary="s", summary_tokens=2, order=1),
        b("secret", 10, sensitivity=Sensitivity.SECRET, group="pair", order=2),
        b("its-pair", 10, group="pair", order=3),
        b("fresh", 10, created_at=0, ttl_s=500, order=4),
    ]
    report = prune(blocks, Budget(1000, max_sensitivity=Sensitivity.INTERNAL), now=100.0)
    actions = {d.block.block_id: (d.action, d.reason) for d in report.decisions}
    assert actions["stale"] == ("dropped", "expired (past its TTL, no summary)")
    assert actions["stale-with-summary"][0] == "degraded" and actions["stale-with-summary"][1].startswith("expired")
    assert actions["secret"] == actions["its-pair"] == ("dropped", "sensitivity secret above internal")
    assert actions["fresh"][0] == "kept"
    with pytest.raises(ValidationError):
        prune([b("x", 1), b("x", 2)], Budget(10))
    with pytest.raises(ValidationError):
        Budget(10, reserve_for_reply=11)


def test_priority_then_score_decides_who_gets_the_room() -> None:
    blocks = [b("low", 60, priority=Priority.LOW, order=0), b("high-weak", 60, priority=Priority.HIGH, score=0.1, order=1),
              b("high-strong", 60, priority=Priority.HIGH, score=0.9, order=2)]
    report = prune(blocks, Budget(130))
    assert [d.block.block_id for d in report.kept] == ["high-weak", "high-strong"]
    report = prune(blocks, Budget(70))
    assert [d.block.block_id for d in report.kept] == ["high-strong"]
