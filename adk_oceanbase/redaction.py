"""PII redaction at the persistence boundary: rules, the pluggable ``Redactor``, and what it walks.

Seed 000 §8.1.3: "any event not marked ``redacted=true`` must not reach long-term
storage".  The services run the configured :class:`Redactor` over every string
they are about to write (event text parts, function-call arguments and
responses, compaction summaries, state values, memory content, and so the text
that gets embedded and full-text indexed) *before* the transaction starts, so a
redaction failure writes nothing.

The default :class:`RuleRedactor` finds e-mail addresses, phone numbers
(international ``+CC`` forms, North-American formatted numbers, mainland-China
mobiles), PRC resident ID numbers (ISO 7064 checksum and a real birth date),
bank cards (13-19 digits passing Luhn), IPv4 and IPv6 addresses, plus the
caller's own patterns and dictionaries, and replaces each with a placeholder
such as ``[REDACTED:EMAIL]``.  Checksums keep order numbers and timestamps
from being taken for cards or ID numbers.  A text with no digit, ``@``, ``:``
or dictionary word is returned untouched without running any pattern: that is
most chat text, and it keeps the cost per append in microseconds.

Plug in anything else (a Presidio service, an LLM judge) by subclassing
:class:`Redactor`: it gets every string of one write in one batch.
"""

from __future__ import annotations

import ipaddress
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "PLACEHOLDER",
    "RedactionPolicy",
    "Redactor",
    "RuleRedactor",
    "redact_event",
    "redact_value",
]

PLACEHOLDER = "[REDACTED:{label}]"
"""What a finding is replaced with; ``label`` is EMAIL, PHONE, ID_CARD, BANK_CARD, IP or a custom label."""


class Redactor(ABC):
    """Turns texts into their redacted form; subclasses decide how (rules, a service, a model).

    ``redact_many`` gets every string of one write at once so a remote
    redactor pays one round trip per write, not per string.  It must return a
    list of the same length, in order; strings it leaves alone come back as is.
    """

    @abstractmethod
    async def redact_many(self, texts: Sequence[str]) -> list[str]:
        """The redacted form of each text."""

    async def redact(self, text: str) -> str:
        """One text (convenience over :meth:`redact_many`)."""
        return (await self.redact_many([text]))[0]


# ------------------------------------------------------------------ the rules
def luhn_ok(digits: str) -> bool:
    """The Luhn checksum bank cards carry (ISO/IEC 7812)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def prc_id_ok(candidate: str) -> bool:
    """An 18-character PRC resident ID: ISO 7064 MOD 11-2 check character and a real birth date."""
    body, check = candidate[:17], candidate[17].upper()
    if not body.isdigit() or _ID_CHECK[sum(int(c) * w for c, w in zip(body, _ID_WEIGHTS)) % 11] != check:
        return False
    try:
        born = date(int(body[6:10]), int(body[10:12]), int(body[12:14]))
    except ValueError:
        return False
    return 1900 <= born.year <= date.today().year


def _ipv6_ok(candidate: str) -> bool:
    """A real IPv6 address with at least two non-empty groups ("::" or "::1" in prose is not PII)."""
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return sum(1 for g in candidate.split(":") if g) >= 2


def _phone_length(digits: str) -> bool:
    """E.164 numbers have 8-15 digits with the country code ("+5 3 4" is arithmetic)."""
    return 8 <= len(digits) <= 15


@dataclass(frozen=True)
class _Rule:
    label: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    """Validates the match (its digits or text); a failing match is left alone."""
    digits_only: bool = False
    """Hand ``check`` the match's digits only (separators removed)."""


# Boundaries in ASCII: Chinese text glues digits to characters ("手机是13800138000谢谢"),
# and Python's \w would count those characters as word characters.
_D = r"(?<![A-Za-z0-9_.+-])"  # not glued to a latin word, a decimal, or another number
_E = r"(?![A-Za-z0-9_])"

_BUILTIN_RULES: tuple[_Rule, ...] = (
    _Rule("EMAIL", re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])")),
    _Rule("ID_CARD", re.compile(_D + r"\d{17}[\dXx]" + _E), prc_id_ok),
    # issuer digit 2-6 (Mastercard 2/5, Amex/JCB 3, Visa 4, Discover/UnionPay 6): keeps 13-digit
    # epoch-millisecond timestamps (1...) out, one in ten of which would pass Luhn
    _Rule("BANK_CARD", re.compile(_D + r"[2-6](?:[ -]?\d){12,18}" + _E), luhn_ok, digits_only=True),
    _Rule("IP", re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w.]\d)")),
    _Rule("IP", re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])"), _ipv6_ok),
    # +CC then 6-14 more digits in groups: +86 138 0013 8000, +1 (415) 555-0132, +44 20 7946 0958
    _Rule("PHONE", re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}" + _E), _phone_length, digits_only=True),
    # mainland-China mobile: 1[3-9] + 9 digits, optionally split 3-4-4
    _Rule("PHONE", re.compile(_D + r"1[3-9]\d(?:[ -]?\d{4}){2}" + _E)),
    # North-American formatted numbers: (415) 555-0132, 415-555-0132, 415.555.0132
    _Rule("PHONE", re.compile(r"(?<![\w(])(?:\(\d{3}\)\s?|\d{3}[.-])\d{3}[.-]\d{4}" + _E)),
)

_TRIGGER = re.compile(r"[\d@:]")


class RuleRedactor(Redactor):
    """Regex + checksum rules, custom patterns and dictionaries; pure CPU, no I/O.

    Args:
        patterns: extra ``{label: regex}`` rules (e.g. ``{"EMPLOYEE_ID": r"EMP-\\d{6}"}``).
        dictionaries: ``{label: terms}``; each term is matched as a whole word, case-insensitively
            (e.g. ``{"PROJECT": ["Bluebird", "Nightjar"]}``).
        builtin: the built-in labels to apply (default all: EMAIL, ID_CARD, BANK_CARD, IP, PHONE).

    Example:
        >>> import asyncio
        >>> r = RuleRedactor(dictionaries={"PROJECT": ["Bluebird"]})
        >>> asyncio.run(r.redact("Mail ann@example.com about Bluebird, or call +1 415 555 0132"))
        'Mail [REDACTED:EMAIL] about [REDACTED:PROJECT], or call [REDACTED:PHONE]'
    """

    def __init__(
        self,
        *,
        patterns: Mapping[str, str | re.Pattern[str]] | None = None,
        dictionaries: Mapping[str, Iterable[str]] | None = None,
        builtin: Iterable[str] | None = None,
    ):
        wanted = None if builtin is None else {b.upper() for b in builtin}
        rules = [r for r in _BUILTIN_RULES if wanted is None or r.label in wanted]
        for label, pattern in (patterns or {}).items():
            rules.append(_Rule(_label(label), pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)))
        self._always: list[_Rule] = []  # rules that need no trigger character
        for label, terms in (dictionaries or {}).items():
            words = sorted({t.strip() for t in terms if t and t.strip()}, key=len, reverse=True)
            if words:
                alt = "|".join(re.escape(w) for w in words)
                self._always.append(_Rule(_label(label), re.compile(rf"(?<!\w)(?:{alt})(?!\w)", re.IGNORECASE)))
        self._always += [r for r in rules if r not in _BUILTIN_RULES]
        self._triggered = [r for r in rules if r in _BUILTIN_RULES]

    async def redact_many(self, texts: Sequence[str]) -> list[str]:
        return [self.redact_sync(t) for t in texts]

    def redact_sync(self, text: str) -> str:
        """The synchronous core (cheap enough to run on the event loop: microseconds per text)."""
        for rule in self._always:
            text = _apply(rule, text)
        if not _TRIGGER.search(text):
            return text
        for rule in self._triggered:
            text = _apply(rule, text)
        return text


def _label(label: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", label):
        raise ValueError(f"redaction label must be a word like PHONE or EMPLOYEE_ID, got {label!r}")
    return label.upper()


def _apply(rule: _Rule, text: str) -> str:
    placeholder = PLACEHOLDER.format(label=rule.label)

    def sub(m: re.Match[str]) -> str:
        found = m.group(0)
        if rule.check is not None:
            probe = re.sub(r"\D", "", found) if rule.digits_only else found
            if not rule.check(probe):
                return found
        return placeholder

    return rule.pattern.sub(sub, text)


# ------------------------------------------------------------------ what gets walked
@dataclass(frozen=True)
class RedactionPolicy:
    """Which redactor runs, and for which apps.

    Args:
        redactor: the :class:`Redactor` (``RuleRedactor()`` for the built-in rules).
        modes: per-app ``"redact"`` or ``"off"``; apps not listed use ``default_mode``.
        default_mode: ``"redact"`` (the default once a policy is configured) or ``"off"``.
    """

    redactor: Redactor = field(default_factory=RuleRedactor)
    modes: Mapping[str, str] = field(default_factory=dict)
    default_mode: str = "redact"

    def __post_init__(self) -> None:
        for app, mode in {**self.modes, "<default>": self.default_mode}.items():
            if mode not in ("redact", "off"):
                raise ValueError(f"redaction mode for {app!r} must be 'redact' or 'off', got {mode!r}")

    def active_for(self, app_name: str) -> bool:
        return self.modes.get(app_name, self.default_mode) == "redact"


def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            _collect(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, out)


def _rebuild(value: Any, it: Any) -> Any:
    if isinstance(value, str):
        return next(it)
    if isinstance(value, Mapping):
        return {k: _rebuild(v, it) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuild(v, it) for v in value]
    if isinstance(value, tuple):
        return tuple(_rebuild(v, it) for v in value)
    return value


async def redact_value(redactor: Redactor, value: Any) -> Any:
    """``value`` with every string leaf (dict values, list items; not dict keys) redacted."""
    leaves: list[str] = []
    _collect(value, leaves)
    if not leaves:
        return value
    return _rebuild(value, iter(await redactor.redact_many(leaves)))


# Paths inside an event's JSON whose string leaves are user or model content.
# Ids, authors, roles, function names and other structure are left alone so the
# event still validates, replays and compacts.
def _content_slots(content: dict[str, Any] | None) -> list[tuple[dict[str, Any], str]]:
    slots: list[tuple[dict[str, Any], str]] = []
    for part in (content or {}).get("parts") or []:
        if part.get("text") is not None:
            slots.append((part, "text"))
        if part.get("function_call"):
            slots.append((part["function_call"], "args"))
        if part.get("function_response"):
            slots.append((part["function_response"], "response"))
        if part.get("code_execution_result"):
            slots.append((part["code_execution_result"], "output"))
        if part.get("executable_code"):
            slots.append((part["executable_code"], "code"))
    return slots


async def redact_event(redactor: Redactor, event: Any) -> Any:
    """A copy of an ADK ``Event`` with its content, state delta and compaction summary redacted.

    Returns the same object when nothing changed (no copy, no re-validation).
    """
    data = event.model_dump(mode="python", exclude_none=True)
    slots = _content_slots(data.get("content"))
    actions = data.get("actions") or {}
    if actions.get("state_delta"):
        slots.append((actions, "state_delta"))
    compaction = actions.get("compaction") or {}
    slots += _content_slots(compaction.get("compacted_content"))
    if data.get("error_message"):
        slots.append((data, "error_message"))
    leaves: list[str] = []
    for holder, key in slots:
        _collect(holder[key], leaves)
    if not leaves:
        return event
    redacted = await redactor.redact_many(leaves)
    if redacted == leaves:
        return event
    it = iter(redacted)
    for holder, key in slots:
        holder[key] = _rebuild(holder[key], it)
    return type(event).model_validate(data)
