"""The debug archive: ``temp:`` state and tool scratch values that ADK discards, kept in a bounded FIFO per session.

ADK drops every ``temp:``-prefixed key of an event's ``state_delta`` before
storage: agents' scratch values (``output_key="temp:draft"``) and what tools
write through ``tool_context.state["temp:..."]`` while they run, e.g. the
arguments they resolved or intermediate results.  When an agent misbehaves
("why did it call delete_file('/data/*')?") those are exactly the values
nobody can look at afterwards (seed 001, optimisation 3).

With ``OceanBaseSessionService(debug_archive=DebugArchiveSettings())`` the
append that stores an event also stores its ``temp:`` entries, in the same
transaction, into ``debug_archive``:

* ``kind = 'tool_scratch'`` when the event carries function responses (ADK
  puts a tool's state writes on its response event), with the tool's name;
* ``kind = 'temp_state'`` otherwise (agents, callbacks).

Entries are numbered 1, 2, 3, ... per session; the same transaction deletes
those beyond ``max_entries_per_session`` (oldest first).  Off (the default),
``append_event`` does one ``is None`` test more and nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import ValidationError
from . import queries as q

if TYPE_CHECKING:
    from google.adk.events.event import Event

    from ..rawtx import RawTransaction

__all__ = ["DebugArchiveSettings", "DebugEntry", "archive_event", "archive_rows", "to_entry", "to_jsonl"]

TEMP_PREFIX = "temp:"
TEMP_STATE = "temp_state"
TOOL_SCRATCH = "tool_scratch"


@dataclass(frozen=True)
class DebugArchiveSettings:
    """Turns the debug archive on; pass it as ``OceanBaseSessionService(debug_archive=...)``.

    Example:
        >>> DebugArchiveSettings(max_entries_per_session=200).max_value_bytes
        65536
    """

    max_entries_per_session: int = 1000
    """FIFO bound: a session keeps its newest this many entries (the seed's ``_max_archived_size``)."""

    max_value_bytes: int = 65536
    """A value whose JSON is longer is stored cut, as ``{"truncated": true, "bytes": n, "head": "..."}``."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_entries_per_session, int) or self.max_entries_per_session < 1:
            raise ValidationError("max_entries_per_session must be a positive integer")
        if not isinstance(self.max_value_bytes, int) or self.max_value_bytes < 64:
            raise ValidationError("max_value_bytes must be an integer of at least 64")


@dataclass(frozen=True)
class DebugEntry:
    """One archived value, as :meth:`OceanBaseSessionService.debug_entries` returns it."""

    entry_seq: int
    """Per-session number, 1 for the first entry ever archived (older ones may be gone: FIFO)."""
    event_seq: int
    """The event's ``seq`` in ``session_events`` (its place in the session)."""
    event_id: str
    invocation_id: str | None
    kind: str
    """``temp_state`` or ``tool_scratch``."""
    tool_name: str | None
    key: str
    """The state key, ``temp:`` prefix included."""
    value: Any
    created_at: datetime
    """The event's time, UTC."""

    def to_json(self) -> dict[str, Any]:
        """The entry as one JSON object (``export_debug_jsonl`` writes one per line)."""
        return {
            "entry_seq": self.entry_seq,
            "event_seq": self.event_seq,
            "event_id": self.event_id,
            "invocation_id": self.invocation_id,
            "kind": self.kind,
            "tool_name": self.tool_name,
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.replace(tzinfo=timezone.utc).isoformat(),
        }


def _value_json(value: Any, limit: int) -> str:
    # Scratch values are whatever the agent put there; repr() what JSON cannot
    # hold rather than failing an append over a debugging aid.
    raw = json.dumps(value, ensure_ascii=False, default=repr)
    if len(raw.encode("utf-8")) <= limit:
        return raw
    head = raw.encode("utf-8")[: limit // 2].decode("utf-8", errors="ignore")
    return json.dumps({"truncated": True, "bytes": len(raw.encode("utf-8")), "head": head}, ensure_ascii=False)


def archive_rows(
    settings: DebugArchiveSettings, app: str, user: str, sid: str, event_seq: int, event: "Event", when: datetime
) -> list[dict[str, Any]]:
    """The rows an event adds to the archive, without ``entry_seq`` (empty when it has no ``temp:`` keys)."""
    delta = event.actions.state_delta if event.actions else None
    if not delta:
        return []
    temp = [(k, v) for k, v in delta.items() if k.startswith(TEMP_PREFIX)]
    if not temp:
        return []
    tools = list(dict.fromkeys(r.name for r in event.get_function_responses() if r.name))
    kind = TOOL_SCRATCH if tools else TEMP_STATE
    tool_name = ",".join(tools)[:256] or None
    return [
        {
            "app_name": app,
            "user_id": user,
            "session_id": sid,
            "event_seq": event_seq,
            "event_id": event.id,
            "invocation_id": event.invocation_id or None,
            "kind": kind,
            "tool_name": tool_name,
            "state_key": key[:255],
            "value_json": _value_json(value, settings.max_value_bytes),
            "created_at": when,
        }
        for key, value in temp
    ]


async def archive_event(
    tx: "RawTransaction",
    settings: DebugArchiveSettings,
    app: str,
    user: str,
    sid: str,
    event_seq: int,
    event: "Event",
    when: datetime,
) -> None:
    """Archives the event's ``temp:`` entries (if any), numbered after the session's newest, and trims the FIFO.

    Runs inside the append transaction after its compare-and-set, which holds
    the session row's lock: two appends to one session cannot number alike.
    One round trip; an event without ``temp:`` keys costs none.
    """
    rows = archive_rows(settings, app, user, sid, event_seq, event, when)
    if not rows:
        return
    key = {"app": app, "user": user, "sid": sid}
    statements: list[tuple[str, Any]] = [(q.RAW_DEBUG_BASE, key)]
    statements += [(q.RAW_INSERT_DEBUG, {**row, "n": n}) for n, row in enumerate(rows, start=1)]
    statements.append((q.RAW_TRIM_DEBUG, {**key, "added": len(rows), "keep": settings.max_entries_per_session}))
    await tx.batch(statements)


def to_entry(row: Any) -> DebugEntry:
    return DebugEntry(
        entry_seq=int(row.entry_seq),
        event_seq=int(row.event_seq),
        event_id=row.event_id,
        invocation_id=row.invocation_id,
        kind=row.kind,
        tool_name=row.tool_name,
        key=row.state_key,
        value=json.loads(row.value_json),
        created_at=row.created_at,
    )


def to_jsonl(entries: Sequence[DebugEntry]) -> str:
    """JSON lines, one entry per line, oldest first (empty string for no entries)."""
    return "".join(json.dumps(e.to_json(), ensure_ascii=False, default=str) + "\n" for e in entries)
