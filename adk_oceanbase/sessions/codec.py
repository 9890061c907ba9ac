"""Pure conversions between ADK objects and rows: events and state values. No I/O.

Validation (with :mod:`..validation` for identifiers, text and timestamps) happens here, before any transaction starts, so bad input is
rejected with a typed error and nothing is written.
"""

from __future__ import annotations

import gc
import json
import logging
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator

import pydantic
from google.adk.events.event import Event
from google.adk.sessions.state import State
from pydantic_core import PydanticSerializationError

from ..errors import (
    EventTooLargeError,
    InvalidStateError,
    InvalidValueError,
    StateTooLargeError,
)
from ..jsonvalues import check_json
from ..schema import SCOPE_APP, SCOPE_SESSION, SCOPE_USER, STATE_KEY_LEN
from ..tokens import TokenCounter, event_text
from ..validation import check_id, check_text, check_timestamp, utf8

__all__ = [
    "APP",
    "SESSION",
    "USER",
    "check_state_size",
    "decode_event",
    "decode_events",
    "decode_text_parts",
    "gc_paused",
    "decode_value",
    "encode_event",
    "encode_state",
    "event_row",
    "event_type",
    "merge_state",
    "state_document",
    "state_rows",
    "split_state",
    "to_datetime",
    "without_temp",
]

logger = logging.getLogger(__name__)

APP, USER, SESSION = SCOPE_APP, SCOPE_USER, SCOPE_SESSION


def to_datetime(epoch: float) -> datetime:
    """Naive UTC datetime for DATETIME(6) columns (connections run with time_zone '+00:00')."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(tzinfo=None)


# ------------------------------------------------------------------ state
def _encode_value(key: str, value: Any) -> str:
    """The value's JSON; only JSON-native values, so what a load returns equals what was stored.

    A set, tuple, bytes, datetime, Decimal or UUID would come back as
    something else (a list, a string), so it is refused, not converted.
    """
    _check_json_native(key, value)
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    check_text(f"state value for key {key!r}", raw, InvalidStateError)
    return raw


def _check_json_native(key: str, value: Any) -> None:
    """Raises ``InvalidStateError`` naming ``key`` and the path in it unless ``value`` is JSON all the way down."""
    check_json(f"state value for key {key!r}", value, InvalidStateError)


def decode_value(raw: str) -> Any:
    return json.loads(raw)


def split_state(state: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Splits a prefixed state dict into app/user/session scopes, dropping ``temp:`` keys."""
    scopes: dict[str, dict[str, Any]] = {APP: {}, USER: {}, SESSION: {}}
    for key, value in (state or {}).items():
        if not isinstance(key, str):
            raise InvalidStateError(f"state keys must be strings, got {type(key).__name__}")
        check_text(f"state key {key!r}", key, InvalidStateError)
        if key.startswith(State.TEMP_PREFIX):
            continue
        if key.startswith(State.APP_PREFIX):
            scopes[APP][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scopes[USER][key.removeprefix(State.USER_PREFIX)] = value
        else:
            scopes[SESSION][key] = value
    return scopes


def encode_state(scopes: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``[(scope, key, json)]`` for every value; raises before anything is written if one is bad."""
    rows: list[tuple[str, str, str]] = []
    prefix = {APP: State.APP_PREFIX, USER: State.USER_PREFIX, SESSION: ""}
    for scope, values in scopes.items():
        for key, value in values.items():
            if not key or len(key) > STATE_KEY_LEN:
                raise InvalidStateError(f"state key must be 1..{STATE_KEY_LEN} characters, got {len(key)}")
            if key.endswith(" "):  # PAD SPACE: "k " would overwrite "k" (see check_id)
                raise InvalidStateError(f"state key {prefix[scope] + key!r} ends with a space")
            rows.append((scope, key, _encode_value(key, value)))
    return rows


def state_document(encoded: list[tuple[str, str, str]]) -> str | None:
    """One JSON object of encoded state rows with ADK prefixes restored (``None`` when empty).

    Built from the already-encoded values, so nothing is serialised twice.
    """
    if not encoded:
        return None
    prefix = {APP: State.APP_PREFIX, USER: State.USER_PREFIX, SESSION: ""}
    items = (json.dumps(prefix[scope] + key, ensure_ascii=False) + ":" + raw for scope, key, raw in encoded)
    return "{" + ",".join(items) + "}"


def check_state_size(document: str | None, max_bytes: int) -> None:
    """Refuses a ``create_session`` state whose JSON is over ``max_bytes``: the same bound as one event's."""
    size = len(utf8("session state", document, InvalidStateError)) if document else 0
    if size > max_bytes:
        raise StateTooLargeError(f"session state is {size:,} bytes of JSON; the limit is {max_bytes:,} (Config.max_event_bytes)")


def merge_state(rows: Iterable[tuple[str, str, str]]) -> dict[str, Any]:
    """Rebuilds ADK's merged view: session keys bare, app/user keys prefixed."""
    merged: dict[str, Any] = {}
    prefixed: dict[str, Any] = {}
    for scope, key, raw in rows:
        value = decode_value(raw)
        if scope == SESSION:
            merged[key] = value
        elif scope == APP:
            prefixed[State.APP_PREFIX + key] = value
        else:
            prefixed[State.USER_PREFIX + key] = value
    merged.update(prefixed)
    return merged


def state_rows(encoded: list[tuple[str, str, str]], *, app: str, user: str, sid: str, when: datetime) -> list[dict]:
    """``session_state`` rows of ``encoded`` (from :func:`encode_state`) for one session, stamped ``when``.

    App keys are stored with an empty user and session, user keys with an
    empty session: the key columns of the row say the scope.
    """
    return [
        {
            "app_name": app,
            "scope": scope,
            "user_id": "" if scope == APP else user,
            "session_id": sid if scope == SESSION else "",
            "state_key": key,
            "value_json": raw,
            "updated_at": when,
        }
        for scope, key, raw in encoded
    ]


# ------------------------------------------------------------------ events
def event_row(
    event: Event,
    *,
    app: str,
    user: str,
    sid: str,
    payload: str,
    tokens: int,
    when: datetime | None = None,
    redacted: bool = False,
) -> dict:
    """The ``session_events`` row of ``event``, all but its ``seq`` (known inside the transaction).

    ``payload`` and ``tokens`` come from :func:`encode_event`; ``when`` is the
    event's timestamp as a DATETIME (computed when not given); ``redacted``
    marks a row the redaction policy rewrote.
    """
    return {
        "app": app,
        "user": user,
        "sid": sid,
        "event_id": event.id,
        "invocation_id": event.invocation_id or None,
        "author": (event.author or "")[:256] or None,
        "branch": (event.branch or "")[:512] or None,
        "event_type": event_type(event),
        "ts": event.timestamp,
        "event_time": when if when is not None else to_datetime(event.timestamp),
        "token_count": tokens,
        "is_final": 1 if event.is_final_response() else 0,
        "event_json": payload,
        "redacted": 1 if redacted else 0,
    }


def event_type(event: Event) -> str:
    """A coarse kind for analysts and compaction policies."""
    if event.actions is not None and event.actions.compaction is not None:
        return "compaction"
    if event.error_code or event.error_message:
        return "error"
    parts = event.content.parts if event.content is not None and event.content.parts else []
    if any(p.function_response is not None for p in parts):
        return "function_response"
    if any(p.function_call is not None for p in parts):
        return "function_call"
    if any(p.text for p in parts) or parts:
        return "message"
    if event.actions is not None and event.actions.state_delta:
        return "state"
    return "other"


def without_temp(event: Event) -> Event:
    """``event`` as stored: its state delta without ``temp:`` keys (a copy when it had any, else ``event`` itself)."""
    delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
    kept = {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}
    if len(kept) == len(delta):
        return event
    return event.model_copy(update={"actions": event.actions.model_copy(update={"state_delta": kept})})


def encode_event(event: Event, *, counter: TokenCounter, max_bytes: int) -> tuple[str, int]:
    """Serialises an event to its stored JSON and counts its tokens; enforces the size limit.

    Events keep pydantic's JSON round trip (inline ``bytes`` become base64),
    but text UTF-8 cannot store, anywhere in the event, is refused.
    """
    check_id("event id", event.id)
    check_timestamp("event timestamp", event.timestamp)
    if event.invocation_id:
        check_id("invocation_id", event.invocation_id, max_len=256)
    if event.actions is not None and event.actions.rewind_before_invocation_id:
        check_id("rewind_before_invocation_id", event.actions.rewind_before_invocation_id, max_len=256)
    if event.custom_metadata:  # pydantic's JSON mode would store a set as a list and NaN as null
        check_json(f"event {event.id} custom_metadata", event.custom_metadata, InvalidValueError)
    try:
        data = event.model_dump(exclude_none=True, mode="json")
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise InvalidStateError(f"event {event.id} cannot be stored as JSON: {type(exc).__name__}: {reason}") from exc
    size = len(utf8(f"event {event.id}", payload))
    if size > max_bytes:
        raise EventTooLargeError(f"event {event.id} is {size} bytes of JSON; the limit is {max_bytes} (Config.max_event_bytes)")
    return payload, counter.count(event_text(event))


def decode_events(payloads: Iterable[str]) -> list[Event]:
    """:func:`decode_event` for a whole load, with the cyclic garbage collector paused meanwhile.

    Validating an event allocates a few dozen tracked objects (models, dicts,
    lists) and none of them form cycles, yet every 700 allocations start a
    collection that walks them all again, and the older generations are
    walked as the load grows.  Measured on 5,000 benchmark events
    (``benchmarks/sessions.py``, CPU time, issue #11): 245 ms with the
    collector on, 127 ms paused.  The objects are collected normally once it
    runs again; see :func:`gc_paused` for concurrent loads.
    """
    with gc_paused():
        return [decode_event(p) for p in payloads]


_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disables the cyclic GC for the block; nested and concurrent users (threads) re-enable it once, after the last.

    A collector the application had disabled itself stays disabled.
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()


def decode_event(payload: str) -> Event:
    """Parses a stored event, tolerating fields a newer ADK wrote that this ADK does not know."""
    data = json.loads(payload)
    for _ in range(8):
        try:
            return Event.model_validate(data)
        except pydantic.ValidationError as exc:
            extras = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not extras or len(extras) != len(exc.errors()):
                raise
            for loc in extras:
                _drop_path(data, loc)
            logger.warning("dropped %d event field(s) unknown to this ADK version: %s", len(extras), extras)
    return Event.model_validate(data)


def decode_text_parts(payload: str) -> tuple[str, str, float, list[tuple[str, bool]]]:
    """A stored event's id, author, timestamp and text parts ``(text, thought)``, without building an ``Event``.

    For readers that need only what was said: memory's extraction queue reads
    a whole stored session on ``add_session_to_memory``'s request path, where
    validating 50 LoCoMo turns as ADK ``Event`` models costs 1.5 ms of CPU and
    this 0.23 ms (issue #31).  The JSON is :func:`encode_event`'s
    (``model_dump`` by field name, ``None`` left out).
    """
    data = json.loads(payload)
    content = data.get("content") or {}
    parts = [(p["text"], bool(p.get("thought"))) for p in content.get("parts") or () if p.get("text")]
    return str(data["id"]), str(data.get("author") or ""), float(data["timestamp"]), parts


def _drop_path(data: Any, loc: tuple[Any, ...]) -> None:
    node = data
    for step in loc[:-1]:
        node = node[step]
    if isinstance(node, dict):
        node.pop(loc[-1], None)
