"""The pluggable :class:`Redactor`, the rule-based default :class:`RuleRedactor`, and the per-app :class:`RedactionPolicy`."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .normalise import normalise
from .rules import BUILTIN_RULES, Rule, triggered

__all__ = ["PLACEHOLDER", "RedactionPolicy", "Redactor", "RuleRedactor"]

PLACEHOLDER = "[REDACTED:{label}]"
"""What a finding is replaced with; ``label`` is EMAIL, PHONE, ID_CARD, ... or a custom label."""


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

    async def redact_groups(self, groups: Sequence[Sequence[str]]) -> list[list[str]]:
        """Each group is one text cut into pieces (adjacent text parts of a message); returns the pieces redacted.

        The default redacts every piece on its own, in one :meth:`redact_many`
        batch.  :class:`RuleRedactor` detects on each group's joined text, so a
        number split across two streamed parts is still found; a custom
        redactor that can map findings back to pieces should override this too.
        """
        flat = [piece for group in groups for piece in group]
        done = iter(await self.redact_many(flat) if flat else [])
        return [[next(done) for _ in group] for group in groups]


class RuleRedactor(Redactor):
    """Regex + checksum + context rules, custom patterns and dictionaries; pure CPU, no I/O.

    Detection runs on the normalised text (:mod:`adk_oceanbase.redaction.normalise`);
    each finding replaces the span of the *original* text it came from.

    Args:
        patterns: extra ``{label: regex}`` rules (e.g. ``{"EMPLOYEE_ID": r"EMP-\\d{6}"}``).
        dictionaries: ``{label: terms}``; each term is matched as a whole word, case-insensitively
            (e.g. ``{"PROJECT": ["Bluebird", "Nightjar"]}``).
        builtin: the built-in labels to apply (default all, see :data:`~adk_oceanbase.redaction.BUILTIN_LABELS`).
        rules: extra :class:`~adk_oceanbase.redaction.Rule` objects (a validator, a context veto, a finder).

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
        rules: Iterable[Rule] = (),
    ):
        wanted = None if builtin is None else {b.upper() for b in builtin}
        self._triggered = [r for r in BUILTIN_RULES if wanted is None or r.label in wanted]
        self._always: list[Rule] = []  # rules that need no trigger character
        for label, terms in (dictionaries or {}).items():
            words = sorted({t.strip() for t in terms if t and t.strip()}, key=len, reverse=True)
            if words:
                alt = "|".join(re.escape(w) for w in words)
                self._always.append(Rule(_label(label), re.compile(rf"(?<!\w)(?:{alt})(?!\w)", re.IGNORECASE)))
        for label, pattern in (patterns or {}).items():
            self._always.append(Rule(_label(label), pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)))
        self._always += [Rule(_label(r.label), r.pattern, r.check, r.digits_only, r.group, r.context, r.finder) for r in rules]

    async def redact_many(self, texts: Sequence[str]) -> list[str]:
        return [self.redact_sync(t) for t in texts]

    async def redact_groups(self, groups: Sequence[Sequence[str]]) -> list[list[str]]:
        return [self.redact_pieces(g) for g in groups]

    def redact_sync(self, text: str) -> str:
        """The synchronous core (cheap enough to run on the event loop: microseconds per text)."""
        findings = self.find(text)
        for start, end, label in reversed(findings):
            text = text[:start] + PLACEHOLDER.format(label=label) + text[end:]
        return text

    def redact_pieces(self, pieces: Sequence[str]) -> list[str]:
        """Detects on the joined pieces; each piece loses the part of every finding that overlaps it."""
        if len(pieces) == 1:
            return [self.redact_sync(pieces[0])]
        findings = self.find("".join(pieces))
        out, offset = [], 0
        for piece in pieces:
            lo, hi = offset, offset + len(piece)
            for start, end, label in reversed(findings):
                if start < hi and end > lo:
                    a, b = max(start, lo) - lo, min(end, hi) - lo
                    piece = piece[:a] + PLACEHOLDER.format(label=label) + piece[b:]
            out.append(piece)
            offset = hi
        return out

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, label)`` of each finding in ``text`` (original offsets), sorted, overlaps merged."""
        if not text or (not self._always and not triggered(text)):
            return []
        norm = normalise(text)
        spans: list[tuple[int, int, str]] = []
        rules = self._always + self._triggered if triggered(norm.text) else self._always
        for rule in rules:
            for start, end in rule.find(norm.text):
                if end > start:
                    spans.append((*norm.original_span(start, end), rule.label))
        if len(spans) < 2:
            return spans
        spans.sort(key=lambda s: (s[0], -s[1]))
        merged = [spans[0]]
        for start, end, label in spans[1:]:
            last = merged[-1]
            if start < last[1]:
                merged[-1] = (last[0], max(last[1], end), last[2])
            else:
                merged.append((start, end, label))
        return merged


def _label(label: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", label):
        raise ValueError(f"redaction label must be a word like PHONE or EMPLOYEE_ID, got {label!r}")
    return label.upper()


@dataclass(frozen=True)
class RedactionPolicy:
    """Which redactor runs, and for which apps.

    Args:
        redactor: the :class:`Redactor` (``RuleRedactor()`` for the built-in rules).
        modes: per-app ``"redact"`` or ``"off"``; apps not listed use ``default_mode``.
        default_mode: ``"redact"`` (the default once a policy is configured) or ``"off"``.
        app_redactors: per-app redactors used instead of ``redactor`` (an app's own
            patterns, dictionaries or rules: ``{"billing": RuleRedactor(patterns={"CONTRACT": r"C-\\d{8}"})}``).
        keep_binary: keep ``inline_data`` bytes that are not text (images, audio, PDFs) as
            they are.  Off by default: no rule can read them, so they are replaced by
            ``[REDACTED:BLOB]`` (mime type ``text/plain``); text blobs are redacted as text.

    Example:
        >>> RedactionPolicy(modes={"internal": "off"}).active_for("internal")
        False
    """

    redactor: Redactor = field(default_factory=RuleRedactor)
    modes: Mapping[str, str] = field(default_factory=dict)
    default_mode: str = "redact"
    app_redactors: Mapping[str, Redactor] = field(default_factory=dict)
    keep_binary: bool = False

    def __post_init__(self) -> None:
        for app, mode in {**self.modes, "<default>": self.default_mode}.items():
            if mode not in ("redact", "off"):
                raise ValueError(f"redaction mode for {app!r} must be 'redact' or 'off', got {mode!r}")

    def active_for(self, app_name: str) -> bool:
        return self.modes.get(app_name, self.default_mode) == "redact"

    def redactor_for(self, app_name: str) -> Redactor | None:
        """The app's redactor, or ``None`` when the app's mode is ``"off"``."""
        if not self.active_for(app_name):
            return None
        return self.app_redactors.get(app_name, self.redactor)
