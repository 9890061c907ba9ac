"""The report of ``sessions.py``: one line per metric with ours/ADK ratios, and the issues' targets checked.

Shared by ``sessions.py`` (an entry script): it sits below it.
"""

from __future__ import annotations

import argparse
from typing import Any

Result = dict[str, Any]


# (metric key prefix, field, higher_is_better)
def _headline(res: Result) -> list[tuple[str, str, bool]]:
    rows: list[tuple[str, str, bool]] = []
    for key in res:
        if key.startswith("append_event") or key.startswith("concurrent_writers"):
            rows += [(key, "p50_ms", False), (key, "events_per_s", True)]
        elif key.startswith("compacted_"):
            rows += [(key, "p50_ms", False), (key, "events_loaded", False), (key, "tokens_to_model", False)]
            if "tokens_to_model_uncompacted" in res[key]:
                rows.append((key, "tokens_to_model_uncompacted", False))
        elif isinstance(res[key], dict):
            rows += [(key, "p50_ms", False), (key, "p95_ms", False)]
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def print_report(adk: Result, ours: Result, tuned: Result | None = None) -> dict[str, dict[str, Any]]:
    """Prints one line per metric with ours/ADK (and ours/ADK-with-our-pool), and returns the ratios for the JSON."""
    tuned = tuned or {}
    ratios: dict[str, dict[str, Any]] = {"adk": {}, "adk_tuned": {}}
    print("\n== results (ratio = ours/ADK; for ms lower is better, for events/s higher is better;"
          " 'ADK pool' = ADK with our pool settings)")
    print(f"  {'metric':<46} {'field':<14} {'ADK':>12} {'ADK pool':>12} {'ours':>12} {'ours/ADK':>9} {'/ADK pool':>9}")
    keys = list(dict.fromkeys([*adk.keys(), *tuned.keys(), *ours.keys()]))
    merged = {k: (adk.get(k) or ours.get(k) or tuned.get(k)) for k in keys}

    def val(res: Result, key: str, field: str) -> Any:
        return (res.get(key) or {}).get(field) if isinstance(res.get(key), dict) else None

    for key, field, _hib in _headline(merged):
        a, t, o = val(adk, key, field), val(tuned, key, field), val(ours, key, field)
        cells = []
        for base, name in ((a, "adk"), (t, "adk_tuned")):
            r = (o / base) if isinstance(base, (int, float)) and isinstance(o, (int, float)) and base else None
            if r is not None:
                ratios[name][f"{key}.{field}"] = r
            cells.append(r)
        print(f"  {key:<46} {field:<14} {_fmt(a):>12} {_fmt(t):>12} {_fmt(o):>12} {_fmt(cells[0]):>9} {_fmt(cells[1]):>9}")
    for key in keys:
        for side, res in (("ADK", adk), ("ADK pool", tuned), ("ours", ours)):
            if isinstance(res.get(key), str):
                print(f"  {key}: {side}: {res[key]}")
    return ratios


def check_targets(adk: Result, ours: Result, args: argparse.Namespace, tuned: Result | None = None) -> list[dict[str, Any]]:
    """The targets of issues #2, #4 and #11, evaluated on this run's numbers."""
    def get(res: Result, key: str, field: str) -> float | None:
        v = res.get(key)
        return v.get(field) if isinstance(v, dict) else None

    app_key = f"append_event_{args.events}"
    w_key = f"concurrent_writers_{args.writers}"
    page_key = f"list_sessions_page_{args.page}_of_{args.sessions}_first"
    comp_key = f"compacted_default_load_{max(args.sizes)}"
    a_eps, o_eps = get(adk, app_key, "events_per_s"), get(ours, app_key, "events_per_s")
    a_cmp, o_cmp = get(adk, comp_key, "p50_ms"), get(ours, comp_key, "p50_ms")
    full_key = f"get_session_full_{max(args.sizes)}"
    a_full, o_full = get(adk, full_key, "p50_ms"), get(ours, full_key, "p50_ms")
    t_eps, t_full = get(tuned or {}, app_key, "events_per_s"), get(tuned or {}, full_key, "p50_ms")
    rows = [
        ("append_event events/s >= 3x ADK", o_eps / a_eps if a_eps and o_eps else None, lambda v: v >= 3.0, "x"),
        ("append_event p50 < 5.6 ms (sqlspec)", get(ours, app_key, "p50_ms"), lambda v: v < 5.6, "ms"),
        ("#11: append_event p50 <= 1.2 ms", get(ours, app_key, "p50_ms"), lambda v: v <= 1.2, "ms"),
        ("#11: append_event events/s >= 5x ADK", o_eps / a_eps if a_eps and o_eps else None, lambda v: v >= 5.0, "x"),
        (f"#11: get_session full {max(args.sizes)} <= 0.3x ADK", o_full / a_full if a_full and o_full else None, lambda v: v <= 0.3, "x"),
        ("(info) append_event events/s vs ADK with our pool", o_eps / t_eps if t_eps and o_eps else None, lambda v: v >= 5.0, "x"),
        (f"(info) get_session full {max(args.sizes)} vs ADK with our pool", o_full / t_full if t_full and o_full else None, lambda v: v <= 0.3, "x"),
        (f"(info) get_session full {max(args.sizes)} above the validation floor vs ADK's",
         (o_full - floor) / (a_full - floor) if a_full and o_full and (floor := get(ours, f"validation_floor_{max(args.sizes)}", "p50_ms"))
         and a_full > floor else None, lambda v: v <= 0.3, "x"),
        (f"{args.writers} concurrent writers >= 600 events/s", get(ours, w_key, "events_per_s"), lambda v: v >= 600, "ev/s"),
        ("create_session p50 <= 2.5 ms", get(ours, "create_session", "p50_ms"), lambda v: v <= 2.5, "ms"),
        (f"page of {args.page} from {args.sessions} p50 <= 10 ms", get(ours, page_key, "p50_ms"), lambda v: v <= 10, "ms"),
        ("compacted default load >= 20x faster than ADK full", a_cmp / o_cmp if a_cmp and o_cmp else None, lambda v: v >= 20, "x"),
        ("(info) include_compacted=False load vs ADK full", a_cmp / o_x if a_cmp and (o_x := get(ours, comp_key.replace("default_load", "load_include_compacted_false"), "p50_ms")) else None, lambda v: v >= 20, "x"),
    ]
    out = []
    print("\n== targets")
    for name, value, ok, unit in rows:
        passed = None if value is None else bool(ok(value))
        out.append({"target": name, "value": value, "unit": unit, "met": passed})
        mark = "n/a " if passed is None else ("PASS" if passed else "MISS")
        print(f"  [{mark}] {name}: {_fmt(value)} {unit}")
    slower = []
    for key, field, hib in _headline({**adk, **ours}):
        if field not in ("p50_ms", "events_per_s") or key.startswith("compacted"):
            continue
        a, o = get(adk, key, field), get(ours, key, field)
        if a is not None and o is not None and ((o < a) if hib else (o > a)):
            slower.append(f"{key}.{field} (ADK {_fmt(a)}, ours {_fmt(o)})")
    if ours:
        mark = "PASS" if not slower else "MISS"
        print(f"  [{mark}] no operation slower than ADK" + ("" if not slower else ": " + "; ".join(slower)))
        out.append({"target": "no operation slower than ADK", "value": slower, "met": not slower})
    return out
