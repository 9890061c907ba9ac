"""Compaction bookkeeping of the session tables: which stored rows a compaction event archives, and doing it.

:func:`archive_for` runs inside the transaction that stores a compaction
or rewind event (``append_event``, and the importer for the events it
copies), so a load never sees the event without its bookkeeping.  The rest
of this module is the pure rule it applies, with no I/O.

A row is archived only when ADK's own prompt assembly would hide it anyway
once the compaction event is present, so the default (compacted) load of a
session builds the same LLM request as the full load. ADK hides a raw event
when its timestamp falls inside a retained compaction range
(``flows/llm_flows/context/_compaction.py``), but several of its other passes
read raw events that a summary covers; each rule below keeps one of them:

* **scope and branch**: only unscoped rows under an unscoped summary, and the
  summary must be visible wherever the row is (no branch, or the same branch);
* **content only**: rows without content (rewinds, aborts, state-only events,
  transcriptions) are tiny and drive ADK's rewind/abort/task-scope logic, so
  they are never archived;
* **rewound spans**: rows between a rewind and the first event of the
  invocation it rewinds stay, so ``_apply_rewinds`` finds its anchor;
* **open tool calls**: a call whose response is not inside the same archived
  set (or any long-running call) stays with its sibling responses, because
  ``_recover_compacted_function_calls`` re-injects it when its answer arrives;
* **sliding-window overlap**: the last ``overlap`` invocations before the next
  window stay, because ADK's sliding window re-summarises them
  (``EventsCompactionConfig.overlap_size``).

Older compaction events whose range the new one contains are archived too
(ADK drops subsumed summaries from the request), which is what makes
summary-of-summaries shrink the load.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from google.adk.events.event import Event

from ..rawtx import RawTransaction
from . import queries as q

__all__ = ["StoredRow", "archive_for", "compaction_range", "rows_to_archive", "seq_ranges"]

logger = logging.getLogger(__name__)

# Seq ranges per UPDATE: keeps each statement short whatever the session's length.
_RANGES_PER_UPDATE = 200


@dataclass(frozen=True)
class StoredRow:
    """One unarchived event row: its sequence number and decoded JSON payload."""

    seq: int
    data: Mapping[str, Any]

    @property
    def ts(self) -> float:
        return float(self.data.get("timestamp") or 0.0)

    @property
    def invocation_id(self) -> str | None:
        return self.data.get("invocation_id") or None

    @property
    def actions(self) -> Mapping[str, Any]:
        return self.data.get("actions") or {}

    def parts(self) -> list[Mapping[str, Any]]:
        content = self.data.get("content") or {}
        return list(content.get("parts") or [])

    def call_ids(self) -> set[str]:
        return {p["function_call"]["id"] for p in self.parts() if (p.get("function_call") or {}).get("id")}

    def response_ids(self) -> set[str]:
        return {p["function_response"]["id"] for p in self.parts() if (p.get("function_response") or {}).get("id")}


def compaction_range(data: Mapping[str, Any]) -> tuple[float, float] | None:
    """``(start, end)`` of a stored compaction event ADK would retain, else ``None``."""
    comp = (data.get("actions") or {}).get("compaction")
    if not comp or comp.get("compacted_content") is None:
        return None
    start, end = comp.get("start_timestamp"), comp.get("end_timestamp")
    if start is None or end is None or math.isnan(start) or math.isnan(end) or start > end:
        return None
    return float(start), float(end)


def _archivable_raw(row: StoredRow) -> bool:
    data = row.data
    if data.get("isolation_scope") or data.get("error_code") or data.get("long_running_tool_ids"):
        return False
    acts = row.actions
    if acts.get("rewind_before_invocation_id") or acts.get("requested_tool_confirmations"):
        return False
    if acts.get("requested_auth_configs") or acts.get("compaction"):
        return False
    content = data.get("content") or {}
    return bool(content.get("role")) and bool(row.parts())


def _rewound_seqs(rows: list[StoredRow]) -> set[int]:
    first_seq: dict[str, int] = {}
    for r in rows:
        if r.invocation_id and r.invocation_id not in first_seq:
            first_seq[r.invocation_id] = r.seq
    out: set[int] = set()
    for r in rows:
        target = r.actions.get("rewind_before_invocation_id")
        if target and target in first_seq:
            out.update(x.seq for x in rows if first_seq[target] <= x.seq <= r.seq)
    return out


def _overlap_floor(rows: list[StoredRow], end: float, overlap: int) -> int | None:
    """Lowest seq ADK's next sliding window would re-read (``overlap`` invocations before the new ones)."""
    if overlap <= 0:
        return None
    order: list[str] = []
    latest: dict[str, float] = {}
    first: dict[str, int] = {}
    for r in rows:
        inv = r.invocation_id
        if not inv or r.actions.get("compaction"):
            continue
        if inv not in latest:
            order.append(inv)
            first[inv] = r.seq
        latest[inv] = max(latest.get(inv, 0.0), r.ts)
    idx = next((i for i, inv in enumerate(order) if latest[inv] > end), len(order))
    kept = order[max(0, idx - overlap) : idx]
    return min((first[inv] for inv in kept), default=None)


def rows_to_archive(
    rows: Iterable[StoredRow],
    *,
    compaction: Mapping[str, Any],
    overlap: int = 1,
) -> list[int]:
    """Sequence numbers of ``rows`` that the new ``compaction`` event (decoded JSON) may archive.

    Args:
        rows: every unarchived row of the session stored before the compaction
            event, in ``seq`` order (rows already archived are not needed).
        compaction: the new compaction event's JSON payload.
        overlap: invocations to keep loaded for ADK's sliding-window overlap.
    """
    rng = compaction_range(compaction)
    if rng is None or compaction.get("isolation_scope"):
        return []
    start, end = rng
    branch = compaction.get("branch")
    rows = list(rows)
    rewound = _rewound_seqs(rows)
    floor = _overlap_floor(rows, end, overlap)

    def visible_with(r: StoredRow) -> bool:
        return branch is None or r.data.get("branch") == branch

    summaries: list[int] = []
    raw: list[StoredRow] = []
    for r in rows:
        if r.seq in rewound or not visible_with(r):
            continue
        if r.actions.get("compaction"):
            other = compaction_range(r.data)
            if other and not r.data.get("isolation_scope") and start <= other[0] and other[1] <= end:
                summaries.append(r.seq)
            continue
        if floor is not None and r.seq >= floor:
            continue
        if start <= r.ts <= end and _archivable_raw(r):
            raw.append(r)

    # Open tool calls: a call stays unless its answer is archived with it; its
    # sibling answers stay with it so ADK can re-inject the pair intact.
    answered: dict[str, int] = {}
    for r in raw:
        for rid in r.response_ids():
            answered[rid] = max(answered.get(rid, 0), r.seq)
    keep_calls: set[str] = set()
    keep: set[int] = set()
    for r in raw:
        calls = r.call_ids()
        if any(answered.get(cid, 0) <= r.seq for cid in calls):
            keep.add(r.seq)
            keep_calls |= calls
    for r in raw:
        if r.response_ids() & keep_calls:
            keep.add(r.seq)
    return sorted(summaries + [r.seq for r in raw if r.seq not in keep])


def seq_ranges(seqs: Iterable[int]) -> list[tuple[int, int]]:
    """Collapses sorted sequence numbers into inclusive ``(first, last)`` runs for compact UPDATEs."""
    out: list[tuple[int, int]] = []
    for s in sorted(seqs):
        if out and s == out[-1][1] + 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


async def archive_for(
    tx: RawTransaction, app: str, user: str, sid: str, seq: int, event: Event, payload: str, *, overlap: int
) -> int:
    """Compaction bookkeeping inside the transaction that stores ``event`` at ``seq``; returns rows archived.

    A compaction event archives the rows it covers (``compacted_by``); a
    rewind restores rows whose covering compaction it annuls.  Ordinary
    events are a no-op.  ``payload`` is the event's stored JSON and
    ``overlap`` the invocations kept for ADK's sliding window
    (``compaction_overlap`` of the service).
    """
    actions = event.actions
    if actions is None:
        return 0
    if actions.rewind_before_invocation_id:
        _, found = await tx.run(q.first_seq_of_invocation(app, user, sid, actions.rewind_before_invocation_id))
        first = found[0][0] if found else None
        if first is not None:
            await tx.run(q.unarchive_from(app, user, sid, min_seq=first))
    if actions.compaction is None:
        return 0
    _, rows = await tx.run(q.select_unarchived_rows(app, user, sid, below_seq=seq))
    stored = [StoredRow(row_seq, json.loads(event_json)) for row_seq, event_json in rows]
    seqs = rows_to_archive(stored, compaction=json.loads(payload), overlap=overlap)
    ranges = seq_ranges(seqs)
    for i in range(0, len(ranges), _RANGES_PER_UPDATE):
        await tx.run(q.archive_seq_ranges(app, user, sid, ranges[i : i + _RANGES_PER_UPDATE], by_seq=seq))
    if seqs:
        logger.debug("compaction seq %d archived %d event(s) of session %s", seq, len(seqs), sid)
    return len(seqs)
