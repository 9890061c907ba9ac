"""The plain-text results table (environment capture lives in ``benchmarks/_common.py``)."""

from __future__ import annotations

from typing import Any

__all__ = ["format_table"]

def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


def format_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A fixed-width table; ``rows`` are dicts with a ``system`` key plus ``columns``."""
    header = ["system", *columns]
    body = [[str(r.get("system", ""))] + [_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    out = [title, line, "-" * len(line)]
    for b in body:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(b, widths))))
    return "\n".join(out)
