"""What gets redacted: the whole ADK event walked generically, minus a short list of structural fields.

Every string leaf of an event is redacted wherever it sits (text, tool
arguments and responses, ``custom_metadata``, transcriptions, ``output``,
``agent_state``, transfer reasons, tool-confirmation hints and payloads,
``file_data`` URIs, part metadata, ``set_model_response``, compaction
summaries, grounding and whatever field ADK adds next), *except* the fields
in :data:`STRUCTURAL_FIELDS`: ids, authors, roles, function and agent names,
timestamps, mime types, opaque model signatures.  Those are what make an
event validate, replay and route, and none carries user content.  An
allow-list rather than a list of what to redact, so a new ADK field is
redacted by default instead of leaking until someone notices.

Inside free-form values (fields typed ``Any`` or ``dict[str, Any]``: state,
arguments, responses, metadata) dict *keys* are redacted too, and so are
integers whose digits a rule finds (a phone or card number given as a
number becomes the placeholder string); a value under a key that names a
secret (``password``, ``api_key``, ``token``, ``密码``) is replaced whole.
Bytes there become ``[REDACTED:BYTES]``, and objects JSON cannot hold their
redacted ``repr`` (the debug archive stores them that way).  ``inline_data``
blobs: text ones are redacted as text; others are replaced by
``[REDACTED:BLOB]`` as ``text/plain`` unless ``keep_binary``.  Adjacent text
parts of one message are redacted as one text (see
:meth:`Redactor.redact_groups`).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Any, Iterator
from uuid import UUID

from pydantic import BaseModel

from .redactor import PLACEHOLDER, Redactor

__all__ = ["STRUCTURAL_FIELDS", "redact_event", "redact_value"]

STRUCTURAL_FIELDS = frozenset(
    {
        "id", "invocation_id", "author", "role", "branch", "timestamp", "name", "mime_type", "thought_signature",
        "long_running_tool_ids", "model_version", "transfer_to_agent", "route", "rewind_before_invocation_id",
        "usage_metadata", "cache_metadata", "node_info", "interaction_id", "environment_id", "live_session_id",
        "live_session_resumption_update", "error_code", "isolation_scope", "language_code", "artifact_delta",
        "start_timestamp", "end_timestamp", "json_path",
    }
)
"""Model fields never redacted, at any depth (ids, names, routing, timing, opaque signatures)."""

_SECRET_KEY = re.compile(
    r"(?i)(?:^|[_\-: .])(?:password|passwd|pwd|passphrase|secret|client_secret|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|credentials?)$|密码|口令"
)
_TEXT_MIME = re.compile(r"^(?:text/|application/(?:json|xml|csv|x-ndjson|yaml|javascript))")
_NOTHING_TO_SEE = frozenset({bool, float})
_CONTAINERS = frozenset({dict, list, str, set})
_KEEP = (bool, float, type(None), Enum, datetime, date, time, Decimal, UUID)


_SKIP, _FREE, _TYPED, _PARTS, _DATA = range(5)
_plans: dict[type, dict[str, int]] = {}


def _plan(model: type[BaseModel]) -> dict[str, int]:
    """How each field of ``model`` is walked: skipped (structural), free-form (typed ``Any``: keys and
    integers are data there), typed, a list of parts, or a blob's bytes.  Computed once per class."""
    got = _plans.get(model)
    if got is None:
        fields = model.model_fields
        blob = "data" in fields and "mime_type" in fields
        got = {}
        for name, f in fields.items():
            if name in STRUCTURAL_FIELDS:
                got[name] = _SKIP
            elif blob and name == "data":
                got[name] = _DATA
            elif name == "parts" and "Part" in str(f.annotation):
                got[name] = _PARTS
            else:
                got[name] = _FREE if "Any" in str(f.annotation) else _TYPED
        _plans[model] = got
    return got


class _Walk:
    """One traversal, run twice: ``collect`` gathers the texts, ``rebuild`` puts the redacted ones back."""

    def __init__(self, keep_binary: bool):
        self.keep_binary = keep_binary
        self.groups: list[list[str]] = []
        self.results: Iterator[list[str]] | None = None
        self.forced = False
        """Something changes whatever the redactor says (a secret-named key's value, bytes, a blob, a repr)."""

    @property
    def rebuilding(self) -> bool:
        return self.results is not None

    def text(self, s: str) -> str:
        if not self.rebuilding:
            self.groups.append([s])
            return s
        return next(self.results)[0]  # type: ignore[arg-type]

    def run(self, pieces: list[str]) -> list[str]:
        if not self.rebuilding:
            self.groups.append(pieces)
            return pieces
        return next(self.results)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- free-form values
    def free(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, _KEEP):
            return v
        if isinstance(v, int):
            if v.bit_length() > 128:  # 39+ digits: no rule's number, and str() refuses 4,300+ digits
                return v
            digits = str(v)
            out = self.text(digits)
            return v if out == digits else out
        if isinstance(v, dict):
            out = {}
            for k, item in v.items():
                key = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and isinstance(item, (str, int)) and not isinstance(item, bool) and _SECRET_KEY.search(k):
                    self.forced = self.forced or item not in ("", _SECRET)
                    item = _SECRET if item != "" else item
                else:
                    item = self.free(item)
                out[key] = item
            return out if self.rebuilding else v
        if isinstance(v, (list, tuple, set, frozenset)):
            items = [self.free(i) for i in v]
            return type(v)(items) if self.rebuilding and not isinstance(v, list) else (items if self.rebuilding else v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            self.forced = True
            return PLACEHOLDER.format(label="BYTES")
        if isinstance(v, BaseModel):
            return self.model(v)
        self.forced = True
        return self.text(repr(v))

    # ---------------------------------------------------------------- typed models
    def model(self, m: BaseModel, skip: str | None = None) -> BaseModel:
        plan = _plan(type(m))
        changes: dict[str, Any] = {}
        for name, value in m.__dict__.items():  # field values (pydantic v2 keeps them in __dict__)
            if value is None or name == skip or type(value) in _NOTHING_TO_SEE or (type(value) in _CONTAINERS and not value):
                continue
            kind = plan.get(name, _SKIP)
            if kind == _SKIP or (kind == _TYPED and (type(value) is int or isinstance(value, Enum))):
                continue
            if kind == _FREE:
                new = self.free(value)
            elif kind == _TYPED:
                new = self.typed(value)
            elif kind == _PARTS:
                new = self.parts(value)
            else:
                new = self.blob(m, value)
            if self.rebuilding and new is not value and new != value:
                changes[name] = new
        if changes.get("data") == _BLOB and plan.get("data") == _DATA:
            changes["mime_type"] = "text/plain"
        return m.model_copy(update=changes) if changes else m

    def typed(self, v: Any) -> Any:
        if isinstance(v, BaseModel):
            return self.model(v)
        if isinstance(v, str) and not isinstance(v, Enum):
            return self.text(v)
        if isinstance(v, list):
            items = [self.typed(i) for i in v]
            return items if self.rebuilding else v
        if isinstance(v, dict):  # keys of a typed dict are ids (tool confirmations by function-call id)
            items = {k: self.typed(i) for k, i in v.items()}
            return items if self.rebuilding else v
        return v  # numbers, enums, bools: typed, never content

    def parts(self, parts: list[BaseModel]) -> list[BaseModel]:
        """Parts, with each run of adjacent text parts redacted as one text."""
        out: list[BaseModel] = []
        i = 0
        while i < len(parts):
            j = i
            while j < len(parts) and isinstance(getattr(parts[j], "text", None), str):
                j += 1
            if j - i >= 2:
                texts = self.run([p.text for p in parts[i:j]])  # type: ignore[attr-defined]
                for p, t in zip(parts[i:j], texts):
                    rest = self.model(p, skip="text")
                    out.append(rest.model_copy(update={"text": t}) if self.rebuilding and t != p.text else rest)  # type: ignore[attr-defined]
                i = j
            else:
                out.append(self.model(parts[i]))
                i += 1
        return out if self.rebuilding else parts

    def blob(self, m: BaseModel, data: bytes) -> Any:
        mime = getattr(m, "mime_type", None) or ""
        if _TEXT_MIME.match(mime):
            try:
                body = data.decode("utf-8")
            except UnicodeDecodeError:
                body = None
            if body is not None:
                out = self.text(body)
                return data if out == body else out.encode("utf-8")
        if self.keep_binary or data == _BLOB:
            return data
        self.forced = True
        return _BLOB


_BLOB = PLACEHOLDER.format(label="BLOB").encode()
_SECRET = PLACEHOLDER.format(label="SECRET")


async def _redact(redactor: Redactor, walk: _Walk, visit: Any, value: Any) -> Any:
    visit(value)
    if not walk.groups and not walk.forced:
        return value
    redacted = await redactor.redact_groups(walk.groups) if walk.groups else []
    if redacted == walk.groups and not walk.forced:
        return value
    walk.results = iter(redacted)
    return visit(value)


async def redact_value(redactor: Redactor, value: Any) -> Any:
    """``value`` (state, arguments, metadata) with every string leaf, dict key and matching integer redacted."""
    walk = _Walk(keep_binary=False)
    return await _redact(redactor, walk, walk.free, value)


async def redact_event(redactor: Redactor, event: Any, *, keep_binary: bool = False) -> Any:
    """A copy of an ADK ``Event`` with everything but :data:`STRUCTURAL_FIELDS` redacted.

    Returns the same object when nothing changed (no copy).  The caller's
    event is never mutated: changed models are copied (``model_copy``).
    """
    walk = _Walk(keep_binary)
    return await _redact(redactor, walk, walk.model, event)
