"""What recall returns, and how stored counts become ranked advice.  Pure, no I/O."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

from .settings import ProceduralSettings
from .stats import decline_point, median_of_counts, wilson_lower_bound

__all__ = ["Procedure", "Recall", "build_recall"]


@dataclass(frozen=True)
class Procedure:
    """One tool path of a scenario and what is known about it."""

    scenario_id: str
    path_hash: str
    tools: list[str]
    steps: list[dict[str, Any]]
    """``[{"tool": name, "args": {argument: JSON type}}]``: argument shapes, never values."""
    successes: int
    failures: int
    unknowns: int
    success_rate: float | None
    """All-time successes over known outcomes (``None``: none known)."""
    recent_success_rate: float | None
    """Recency-weighted successes over recency-weighted known outcomes (``ProceduralSettings.half_life``)."""
    recent_samples: int
    """Known outcomes of this path among the scenario's newest ``ProceduralSettings.recent_window``."""
    confidence: float
    """Wilson lower bound of the recency-weighted outcomes: :attr:`evidence` is its sample size."""
    evidence: float
    """The recency-weighted number of known outcomes (old ones count less; at most :attr:`recent_samples`)."""
    median_iterations: float | None
    mean_tool_calls: float | None
    last_seen: datetime | None
    failure_reasons: list[dict[str, Any]] = field(default_factory=list)
    """``[{"tool": failed tool, "reason": redacted reason, "count": n}]``, most frequent first."""
    getting_worse: bool = False
    """Its newest outcomes are significantly worse than its older ones (``ProceduralSettings.decline_p``):
    :attr:`confidence`, :attr:`evidence`, :attr:`recent_success_rate` and :attr:`recent_samples` then
    count only the outcomes since the change, so a path that broke stops being advised within a few runs
    while a stable path keeps its long evidence."""
    earlier_success_rate: float | None = None
    """With :attr:`getting_worse`: the recency-weighted success rate of its outcomes before the change."""

    @property
    def samples(self) -> int:
        """Known outcomes, all time (unknown ones are not evidence)."""
        return self.successes + self.failures


@dataclass(frozen=True)
class Recall:
    """The answer of :meth:`ProcedureStore.recall_procedures`."""

    scenario_id: str | None
    similarity: float
    procedures: list[Procedure]
    """Paths that worked, best first (only those with enough samples and confidence)."""
    avoid: list[Procedure]
    """Paths that mostly failed lately, worst first, with their failure reasons."""
    unproven: list[Procedure] = field(default_factory=list)
    """Paths tried too few times (or with too mixed results) to advise either way: never injected,
    but an agent that explores wants them (benchmarks/procedural.py)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the ADK tool's return value)."""

        def one(p: Procedure) -> dict[str, Any]:
            return {
                "tools": p.tools, "steps": p.steps, "success_rate": _round(p.success_rate),
                "recent_success_rate": _round(p.recent_success_rate), "confidence": round(p.confidence, 3),
                "samples": p.samples, "median_iterations": p.median_iterations,
                "failures": p.failure_reasons[:3], "getting_worse": p.getting_worse,
                "earlier_success_rate": _round(p.earlier_success_rate),
            }

        return {
            "scenario_id": self.scenario_id, "similarity": round(self.similarity, 3),
            "procedures": [one(p) for p in self.procedures], "avoid": [one(p) for p in self.avoid],
            "note": "advice from past runs, not a fact: check results as usual",
        }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _pooled(stats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per path over the pooled scenarios: counts summed, tainted if tainted in any, newest shapes."""
    out: dict[str, dict[str, Any]] = {}
    for row in stats:
        have = out.get(row["path_hash"])
        if have is None:
            out[row["path_hash"]] = dict(row)
            continue
        for name in ("successes", "failures", "unknowns", "iterations_sum", "tool_calls_sum"):
            have[name] = int(have[name]) + int(row[name])
        have["tainted"] = int(bool(have["tainted"]) or bool(row["tainted"]))
        if row["last_seen"] > have["last_seen"]:
            have["last_seen"], have["tool_path"] = row["last_seen"], row["tool_path"]
    return list(out.values())


def _since_decline(w: Sequence[tuple[float, bool]], decline_p: float | None) -> tuple[int, float | None]:
    """``(k, earlier rate)``: the path's newest ``k`` outcomes are significantly worse than the rest, whose
    recency-weighted success rate is ``earlier`` (``(0, None)``: no decline, or the test is off)."""
    if decline_p is None or len(w) < 2:
        return 0, None
    p, k = decline_point([ok for _, ok in w])
    if p >= decline_p or k == 0:
        return 0, None
    weight = sum(x for x, _ in w[k:])
    return k, sum(x for x, ok in w[k:] if ok) / weight if weight else None


def build_recall(
    scenario: str, similarity: float, stats: Sequence[Mapping[str, Any]], recent: Sequence[Any],
    iterations: Sequence[Any], failures: Sequence[Any], settings: ProceduralSettings, top_k: int,
) -> Recall:
    """Ranks the paths of the pooled scenarios (``scenario`` is the nearest): Wilson lower bound of the
    recency-weighted outcomes, ties by fewer tool calls.

    ``recent`` is ``(path_hash, outcome)`` of the scenarios' newest known
    outcomes, newest first: the i-th weighs ``0.5 ** (i / half_life)``.  The
    age is counted in the scenario's outcomes, whichever path they were on.
    A path whose newest outcomes are significantly worse than its older ones
    (``settings.decline_p``, :func:`~.stats.decline_point`) is judged on the
    outcomes since the change only, and marked ``getting_worse``.
    """
    window: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for age, (path, outcome) in enumerate(recent[: settings.recent_window]):
        weight = 1.0 if settings.half_life is None else 0.5 ** (age / settings.half_life)
        window[path].append((weight, outcome == "success"))
    iters: dict[str, dict[int, int]] = defaultdict(dict)
    for path, n_iter, count in iterations:
        iters[path][int(n_iter)] = int(count)
    reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path, tool, reason, count in failures:
        reasons[path].append({"tool": tool, "reason": reason, "count": int(count)})
    good, bad, rest = [], [], []
    for row in _pooled(stats):
        if row["tainted"]:
            continue
        s, f, u = int(row["successes"]), int(row["failures"]), int(row["unknowns"])
        if s + f + u <= 0:
            continue
        w = window.get(row["path_hash"], [])
        worse, earlier = _since_decline(w, settings.decline_p)
        w = w[:worse] if worse else w
        weight = sum(x for x, _ in w)
        wins = sum(x for x, ok in w if ok)
        steps = json.loads(row["tool_path"] or "[]")
        runs = s + f + u
        proc = Procedure(
            scenario_id=scenario, path_hash=row["path_hash"], tools=[st.get("tool") for st in steps], steps=steps,
            successes=s, failures=f, unknowns=u, success_rate=s / (s + f) if s + f else None,
            recent_success_rate=wins / weight if weight else None, recent_samples=len(w),
            confidence=wilson_lower_bound(wins, weight, settings.z), evidence=weight,
            median_iterations=median_of_counts(iters.get(row["path_hash"], {})),
            mean_tool_calls=int(row["tool_calls_sum"]) / runs, last_seen=row["last_seen"],
            failure_reasons=reasons.get(row["path_hash"], []),
            getting_worse=bool(worse), earlier_success_rate=earlier,
        )
        if len(w) >= settings.min_samples and proc.confidence >= settings.min_confidence:
            good.append(proc)
        elif len(w) >= settings.min_samples and wilson_lower_bound(weight - wins, weight, settings.z) >= settings.min_confidence:
            bad.append(proc)
        else:
            rest.append(proc)
    good.sort(key=lambda p: (-p.confidence, p.mean_tool_calls or 0.0, p.path_hash))
    bad.sort(key=lambda p: (p.recent_success_rate or 0.0, p.path_hash))
    rest.sort(key=lambda p: (-p.evidence, p.path_hash))
    return Recall(scenario_id=scenario, similarity=similarity, procedures=good[:top_k], avoid=bad[:top_k],
                  unproven=rest[:top_k])
