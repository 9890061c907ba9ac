"""Input checks every layer shares: identifiers, text UTF-8 can store, epoch timestamps. Pure, no I/O.

At the bottom of the package (it imports only :mod:`.errors` and
:mod:`.schema`'s column sizes), so sessions, memory, governance, compaction
and the importer all reject bad input the same way, before any transaction.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InvalidIdentifierError, InvalidTextError, ValidationError
from .schema import ID_LEN

__all__ = ["MAX_EPOCH_S", "check_id", "check_text", "check_timestamp", "utf8"]


def check_id(kind: str, value: Any, *, max_len: int = ID_LEN) -> str:
    """Returns ``value`` if it is a usable key; raises ``InvalidIdentifierError`` otherwise.

    A trailing space is refused: key columns are ``utf8mb4_bin``, which on
    seekdb/OceanBase and MySQL/MariaDB alike is PAD SPACE (``'alice' =
    'alice '``), so user ``"alice "`` would read ``"alice"``'s rows.  Tabs,
    NBSP, case, ``%`` and ``_`` compare exactly and stay legal.
    """
    if not isinstance(value, str):
        raise InvalidIdentifierError(f"{kind} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidIdentifierError(f"{kind} must not be empty")
    if value.endswith(" "):
        raise InvalidIdentifierError(
            f"{kind} {value!r} ends with a space, which the database ignores in comparisons: strip it"
        )
    if len(value) > max_len:
        raise InvalidIdentifierError(f"{kind} is {len(value)} characters; the limit is {max_len}")
    return check_text(kind, value, InvalidIdentifierError)


def check_text(kind: str, value: str, error: type[Exception] = InvalidTextError) -> str:
    """Returns ``value`` if UTF-8 can store it; a lone surrogate (``"a\\ud800b"``) raises ``error`` naming ``kind``."""
    utf8(kind, value, error)
    return value


def utf8(kind: str, value: str, error: type[Exception] = InvalidTextError) -> bytes:
    """``value`` encoded as UTF-8; text with a lone surrogate raises ``error`` naming ``kind``."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{kind} holds a lone surrogate ({value[exc.start]!r} at {exc.start}), which UTF-8 cannot store") from exc


MAX_EPOCH_S = 1e10
"""Largest timestamp taken as epoch seconds (year 2286): milliseconds (1.7e12 today) are refused, not stored as year 55,000."""


def check_timestamp(kind: str, value: Any) -> float:
    """Returns ``value`` if it is plausible epoch seconds (0 to ``MAX_EPOCH_S``, finite); raises naming ``kind``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(f"{kind} must be epoch seconds (a number), got {type(value).__name__}")
    if not (math.isfinite(value) and 0 <= value <= MAX_EPOCH_S):
        raise ValidationError(
            f"{kind} must be epoch seconds between 0 and {MAX_EPOCH_S:.0e} (year 2286), got {value!r}"
            + (": milliseconds? divide by 1000" if math.isfinite(value) and value > MAX_EPOCH_S else "")
        )
    return float(value)
