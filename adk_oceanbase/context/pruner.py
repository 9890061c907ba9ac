"""The group-aware pruner: packs blocks into a budget it never exceeds, degrading before dropping (seed 004 §6.5, §8.2).

Order of work, each step recorded with its reason:

1. *Sensitivity*: blocks above ``budget.max_sensitivity`` are dropped, and
   with them the rest of their group (half a call/response pair is unusable).
2. *Units*: blocks sharing a ``group`` become one unit, kept, degraded or
   dropped as a whole; its priority and score are its members' highest.
3. *Staleness*: a block past its TTL must use its summary; a stale block
   without one drops its unit (must-keep blocks ignore the TTL).
4. *Must-keep units* are paid first.  If they do not fit, the ones that can
   degrade do, biggest saving first; if they still do not fit no request
   within the budget exists and :class:`~adk_oceanbase.errors.ContextBudgetError`
   says so, rather than sending an over-long request.
5. *The rest*, by priority, then score, then recency: kept whole if it fits
   the room left (and its kind's cap), else degraded to its summaries if those
   fit, else dropped.  Once a unit of a ``chain`` is dropped, the chain's
   later (older) units are dropped too, so the kept history has no hole.

Pure and synchronous: no I/O, safe on the event loop (10,000 random requests
of up to 60 blocks: see ``benchmarks/context.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import ContextBudgetError, ValidationError
from .blocks import Block, Budget, ContextReport, Decision

__all__ = ["prune"]


@dataclass
class _Unit:
    members: list[Block]
    stale: set[str]

    @property
    def must(self) -> bool:
        return any(b.must_keep for b in self.members)

    @property
    def kind(self) -> str:
        return self.members[0].kind

    @property
    def chain(self) -> str | None:
        return next((b.chain for b in self.members if b.chain is not None), None)

    @property
    def full(self) -> int | None:
        """Cost kept whole; ``None`` when a stale member forbids it."""
        return None if self.stale else sum(b.tokens for b in self.members)

    @property
    def degraded(self) -> int | None:
        """Cost with every summarised member on its summary; ``None`` if nothing can degrade or a stale member has no summary."""
        if not any(b.summary is not None for b in self.members):
            return None
        if any(b.summary is None for b in self.members if b.block_id in self.stale):
            return None
        return sum(b.summary_tokens if b.summary is not None else b.tokens for b in self.members)

    def spend(self, degrade: bool) -> dict[str, int] | None:
        """Tokens per kind, kept whole or degraded; ``None`` where that option does not exist."""
        if (self.degraded if degrade else self.full) is None:
            return None
        out: dict[str, int] = {}
        for b in self.members:
            n = b.summary_tokens if degrade and b.summary is not None else b.tokens
            out[b.kind] = out.get(b.kind, 0) + n
        return out

    def sort_key(self) -> tuple:
        return (-max(b.priority for b in self.members), -max(b.score for b in self.members), -max(b.order for b in self.members))


def _units(blocks: Iterable[Block]) -> list[_Unit]:
    by_group: dict[str, _Unit] = {}
    out: list[_Unit] = []
    for b in blocks:
        if b.group is None:
            out.append(_Unit([b], set()))
        elif b.group in by_group:
            by_group[b.group].members.append(b)
        else:
            by_group[b.group] = unit = _Unit([b], set())
            out.append(unit)
    return out


def _over_cap(spend: dict[str, int], caps: dict[str, int]) -> str | None:
    """Why ``spend`` breaks a kind's cap, or ``None``."""
    for kind, n in spend.items():
        if kind in caps and n > caps[kind]:
            return f"{n} {kind} tokens > {caps[kind]} left under its cap"
    return None


def _decide(unit: _Unit, action: str, reason: str) -> list[Decision]:
    out = []
    for b in unit.members:
        if action == "dropped":
            out.append(Decision(b, "dropped", reason, 0))
        elif action == "degraded" and b.summary is not None:
            out.append(Decision(b, "degraded", reason, b.summary_tokens))
        else:
            out.append(Decision(b, "kept", reason if action == "kept" else f"{reason} (its group degraded)", b.tokens))
    return out


def prune(blocks: Sequence[Block], budget: Budget, *, now: float | None = None) -> ContextReport:
    """Decides every block's fate; the kept and degraded tokens never exceed ``budget.available``.

    Raises:
        ValidationError: two blocks share a ``block_id``.
        ContextBudgetError: the must-keep blocks, degraded where they can be, exceed the budget.
    """
    ids = [b.block_id for b in blocks]
    if len(set(ids)) != len(ids):
        raise ValidationError("every Block needs its own block_id")
    now = time.time() if now is None else now
    report = ContextReport(budget)
    decided: list[Decision] = []

    units = []
    for unit in _units(blocks):
        too_secret = [b for b in unit.members if b.sensitivity > budget.max_sensitivity]
        if too_secret:
            level = too_secret[0].sensitivity
            decided += _decide(unit, "dropped", f"sensitivity {level.name.lower()} above {budget.max_sensitivity.name.lower()}")
            continue
        if not unit.must:
            unit.stale = {b.block_id for b in unit.members if b.expired(now)}
            if unit.stale and unit.degraded is None:
                decided += _decide(unit, "dropped", "expired (past its TTL, no summary)")
                continue
        units.append(unit)

    left = budget.available
    must = [u for u in units if u.must]
    plan = {id(u): "kept" for u in must}
    cost = sum(u.full or 0 for u in must)
    for u in sorted((u for u in must if u.degraded is not None), key=lambda u: u.degraded - (u.full or 0)):
        if cost <= left:
            break
        cost -= (u.full or 0) - u.degraded
        plan[id(u)] = "degraded"
    if cost > left:
        raise ContextBudgetError(
            f"must-keep blocks need {cost} tokens even degraded, but the budget leaves {left} "
            f"({budget.max_input_tokens} input - {budget.reserve_for_reply} reserved for the reply)"
        )
    for u in must:
        action = plan[id(u)]
        decided += _decide(u, action, "must keep" if action == "kept" else "must keep, degraded to fit the budget")
    left -= cost

    caps = dict(budget.kind_caps)
    broken: set[str] = set()
    for u in sorted((u for u in units if not u.must), key=_Unit.sort_key):
        chain = u.chain
        if chain is not None and chain in broken:
            decided += _decide(u, "dropped", "older than the budget cut")
            continue
        full, degraded = u.spend(False), u.spend(True)
        capped = _over_cap(full, caps) if full is not None else None
        total = sum(full.values()) if full is not None else None
        if full is not None and total <= left and capped is None:
            action, spent, reason = "kept", full, f"fits ({total} of {left} tokens left)"
        elif degraded is not None and sum(degraded.values()) <= left and _over_cap(degraded, caps) is None:
            why = "expired" if u.stale else (f"{total} tokens > {left} left" if capped is None else capped)
            action, spent, reason = "degraded", degraded, f"{why}: its summary fits"
        else:
            need = total if total is not None else sum((degraded or {}).values())
            action, spent = "dropped", {}
            reason = capped if capped is not None and need <= left else f"{need} tokens > {left} left"
            if chain is not None:
                broken.add(chain)
        for kind, n in spent.items():
            left -= n
            if kind in caps:
                caps[kind] -= n
        decided += _decide(u, action, reason)

    position = {b.block_id: i for i, b in enumerate(blocks)}
    report.decisions = sorted(decided, key=lambda d: (d.block.order, position[d.block.block_id]))
    return report
