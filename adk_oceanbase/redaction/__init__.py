"""PII redaction at the persistence boundary: rules, the pluggable ``Redactor``, and what it walks.

Seed 000 §8.1.3: "any event not marked ``redacted=true`` must not reach long-term
storage".  The services run the configured :class:`Redactor` over every
string they are about to write (the whole event but its structural fields,
state keys and values, memory content, authors and metadata, what
``import-adk`` copies, the debug archive), *before* the transaction starts,
so a redaction failure writes nothing.

* :mod:`.normalise`: the text rules read (NFKC, zero-width removed, look-alikes
  and separators unified), mapped back to the original for replacement;
* :mod:`.checks` and :mod:`.rules`: the built-in rules (:data:`BUILTIN_RULES`,
  tabled in README.md) with their validators and context vetoes;
* :mod:`.redactor`: :class:`Redactor`, :class:`RuleRedactor`, :class:`RedactionPolicy`;
* :mod:`.walk`: which parts of an event, a state or a value are redacted.

Plug in anything else (a Presidio service, an LLM judge) by subclassing
:class:`Redactor`: it gets every string of one write in one batch.
"""

from __future__ import annotations

from .checks import card_ok, iban_ok, legacy_id_ok, luhn_ok, prc_id_ok
from .normalise import normalise
from .redactor import PLACEHOLDER, RedactionPolicy, Redactor, RuleRedactor
from .rules import BUILTIN_RULES, Rule
from .walk import STRUCTURAL_FIELDS, redact_event, redact_value

__all__ = [
    "BUILTIN_LABELS",
    "BUILTIN_RULES",
    "PLACEHOLDER",
    "STRUCTURAL_FIELDS",
    "RedactionPolicy",
    "Redactor",
    "Rule",
    "RuleRedactor",
    "card_ok",
    "iban_ok",
    "legacy_id_ok",
    "luhn_ok",
    "normalise",
    "prc_id_ok",
    "redact_event",
    "redact_value",
]

BUILTIN_LABELS = tuple(dict.fromkeys(r.label for r in BUILTIN_RULES))
"""Labels of the built-in rules (``RuleRedactor(builtin=...)`` picks among them)."""
