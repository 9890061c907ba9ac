"""Validators the rules run on a candidate: checksums, issuer ranges, dates, country codes.

A pattern only proposes; these decide.  They are what keeps order numbers,
timestamps, version strings and scores from being redacted as cards, ID
numbers, IPs or phones (measured in ``benchmarks/redaction_eval.py``).
"""

from __future__ import annotations

import ipaddress
from datetime import date

__all__ = [
    "card_ok",
    "iban_length",
    "iban_ok",
    "intl_phone_ok",
    "ipv4_ok",
    "ipv6_ok",
    "legacy_id_ok",
    "luhn_ok",
    "nanp_ok",
    "prc_id_ok",
]


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum bank cards carry (ISO/IEC 7812)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# (first digits low, high, allowed lengths): the issuer (IIN) ranges of the networks an agent meets.
_ISSUERS: tuple[tuple[int, int, frozenset[int]], ...] = (
    (4, 4, frozenset({13, 16, 19})),  # Visa
    (51, 55, frozenset({16})),  # Mastercard
    (2221, 2720, frozenset({16})),  # Mastercard 2-series
    (34, 34, frozenset({15})),  # American Express
    (37, 37, frozenset({15})),
    (6011, 6011, frozenset({16, 17, 18, 19})),  # Discover
    (644, 649, frozenset({16, 17, 18, 19})),
    (65, 65, frozenset({16, 17, 18, 19})),
    (62, 62, frozenset({16, 17, 18, 19})),  # UnionPay (China UnionPay, and Discover's 622126-622925)
    (3528, 3589, frozenset({16, 17, 18, 19})),  # JCB
    (36, 36, frozenset({14, 15, 16, 17, 18, 19})),  # Diners Club International
    (38, 38, frozenset({14, 16})),
    (300, 305, frozenset({14, 15, 16, 17, 18, 19})),
)


def card_ok(digits: str) -> bool:
    """A card number: a real issuer range, that issuer's length, and Luhn."""
    n = len(digits)
    for low, high, lengths in _ISSUERS:
        width = len(str(low))
        if n in lengths and low <= int(digits[:width]) <= high:
            return luhn_ok(digits)
    return False


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
# First two digits of a PRC administrative division code (provinces, Hong Kong/Macau/Taiwan codes).
_PROVINCES = frozenset(
    {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52, 53, 54,
     61, 62, 63, 64, 65, 71, 81, 82, 83, 91}
)


def _real_date(year: int, month: int, day: int) -> bool:
    try:
        born = date(year, month, day)
    except ValueError:
        return False
    return 1900 <= born.year <= date.today().year


def prc_id_ok(candidate: str) -> bool:
    """An 18-character PRC resident ID: province code, a real birth date, ISO 7064 MOD 11-2 check character."""
    body, check = candidate[:17], candidate[17].upper()
    if not body.isdigit() or int(body[:2]) not in _PROVINCES:
        return False
    if _ID_CHECK[sum(int(c) * w for c, w in zip(body, _ID_WEIGHTS)) % 11] != check:
        return False
    return _real_date(int(body[6:10]), int(body[10:12]), int(body[12:14]))


def legacy_id_ok(digits: str) -> bool:
    """A 15-digit PRC ID (issued before 1999): province code and a real birth date ``yymmdd`` of the 1900s."""
    return (
        len(digits) == 15
        and int(digits[:2]) in _PROVINCES
        and _real_date(1900 + int(digits[6:8]), int(digits[8:10]), int(digits[10:12]))
    )


def ipv4_ok(candidate: str) -> bool:
    """Four octets of 0-255 written without leading zeros ("010.1.1.1" is a section number, not an address)."""
    octets = candidate.split(".")
    return len(octets) == 4 and all(o.isdigit() and int(o) <= 255 and (o == "0" or o[0] != "0") for o in octets)


def ipv6_ok(candidate: str) -> bool:
    """A real IPv6 address with at least two non-empty groups ("::" or "::1" in prose is not PII)."""
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return sum(1 for g in candidate.split(":") if g) >= 2


def nanp_ok(digits: str) -> bool:
    """A North-American number: area code and exchange start 2-9 and are not N11 ("411", "911")."""
    if len(digits) == 11 and digits[0] == "1":
        digits = digits[1:]
    if len(digits) != 10:
        return False
    area, exchange = digits[:3], digits[3:6]
    return area[0] >= "2" and exchange[0] >= "2" and area[1:] != "11" and exchange[1:] != "11" and area[1] != "9"


# Assigned two-digit country calling codes; 1 and 7 are the one-digit ones, anything else is three digits.
_CC2 = frozenset(
    "20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61 62 63 64 65 66 "
    "81 82 84 86 90 91 92 93 94 95 98".split()
)


def intl_phone_ok(digits: str) -> bool:
    """``+CC`` and a national number of a length that country code allows (E.164: 15 digits at most)."""
    if not 8 <= len(digits) <= 15:
        return False
    if digits[0] == "1":
        return nanp_ok(digits)
    if digits[0] == "7":
        return len(digits) == 11
    if digits[:2] in _CC2:
        national = digits[2:]
        if digits[:2] == "86":
            return 9 <= len(national) <= 11
        return 6 <= len(national) <= 12
    if digits[0] == "0":
        return False
    return 6 <= len(digits) - 3 <= 12


# IBAN lengths per country (SWIFT registry, the countries in it as of 2024).
_IBAN_LENGTHS = dict(
    pair.split(":")
    for pair in (
        "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 BY:28 CH:21 CR:22 CY:28 CZ:24 DE:22 DK:18 "
        "DO:28 EE:20 EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 HU:28 IE:22 IL:23 "
        "IQ:23 IS:26 IT:27 JO:30 KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 MC:27 MD:24 ME:22 MK:19 MR:27 "
        "MT:31 MU:30 NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 SA:24 SC:31 SE:24 SI:19 SK:24 SM:27 "
        "ST:25 SV:28 TL:23 TN:24 TR:26 UA:29 VA:22 VG:24 XK:20"
    ).split()
)


def iban_length(country: str) -> int | None:
    """The IBAN length of a country code, or ``None`` when the country has no IBAN."""
    found = _IBAN_LENGTHS.get(country)
    return int(found) if found else None


def iban_ok(compact: str) -> bool:
    """ISO 13616: the country's length and the mod-97 check (the number with its first four characters moved last)."""
    if iban_length(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
