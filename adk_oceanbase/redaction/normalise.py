"""The text the rules look at: NFKC, zero-width characters removed, look-alike letters and separators unified.

Detection runs on this normalised text, never on the original: a full-width
``＠``, digits written ``１３９``, a Cyrillic ``а`` inside ``exаmple.com``, a
zero-width joiner or soft hyphen between digits, an em dash or ideographic
space as a separator all read as the plain ASCII a rule expects.  The memory
index splits words on what Python's ``\\w`` does not match (``lexical``), so a
zero-width character inside a number would split it into index terms that no
rule saw as one number; removing them here closes that gap.

Each normalised character remembers the original character it came from, so
a finding is replaced in the *original* text: what is stored keeps the user's
own punctuation and width (Chinese text keeps its ``，`` and ``：``), and only
the finding becomes a placeholder.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["Normalised", "normalise"]

# Zero-width and invisible formatting characters: ZWSP, ZWNJ, ZWJ, LRM/RLM, word
# joiner, invisible operators, BOM, soft hyphen, Mongolian vowel separator.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e")

# Cyrillic and Greek letters that render like Latin ones (Unicode confusables, the common subset).
_CONFUSABLE = dict(
    zip(
        "аеорсухіјѕԁһӏԛԝвкмнтАВЕКМНОРСТХУІЈЅαβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
        "aeopcyxijsdhlqwbkmhtABEKMHOPCTXYIJSabeiknoptuxABEZHIKMNOPTYX",
    )
)
# Dashes and minus signs become "-", every kind of space a plain " ".
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe58\ufe63\uff0d\u30fc"
_SEPARATORS = {**{c: "-" for c in _DASHES}, "\u00b7": ".", "\u30fb": ".", "\u3002": "。"}

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_cache: dict[str, str] = {}


def _map_char(c: str) -> str:
    """What one original character reads as (empty: dropped)."""
    got = _cache.get(c)
    if got is not None:
        return got
    if c in ZERO_WIDTH:
        out = ""
    else:
        out = "".join(_SEPARATORS.get(x, _CONFUSABLE.get(x, x)) for x in unicodedata.normalize("NFKC", c))
        # Other scripts' digits (Arabic-Indic ١٣٨, Devanagari १३८): the index keeps them as word characters.
        out = "".join(str(unicodedata.decimal(x)) if not x.isascii() and unicodedata.decimal(x, None) is not None else x for x in out)
        out = "".join(" " if x.isspace() else x for x in out)
    if len(_cache) < 65536:
        _cache[c] = out
    return out


class Normalised:
    """A normalised text and, per normalised character, the original span it came from."""

    __slots__ = ("text", "_starts", "_ends")

    def __init__(self, text: str, starts: list[int] | None, ends: list[int] | None):
        self.text = text
        self._starts = starts
        self._ends = ends

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span behind normalised ``[start, end)``."""
        if self._starts is None or self._ends is None:
            return start, end
        return self._starts[start], self._ends[end - 1]


def normalise(text: str) -> Normalised:
    """``text`` as the rules read it; ASCII text is returned as is (no per-character work)."""
    if text.isascii():
        return Normalised(text, None, None)
    # Most non-ASCII text maps one character to one (CJK stays, "，" becomes ","): one translate, same offsets.
    table = {}
    for c in set(text):
        if not c.isascii():
            out = _map_char(c)
            if len(out) != 1:
                break
            if out != c:
                table[ord(c)] = out
    else:
        return Normalised(text.translate(table) if table else text, None, None)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _NON_ASCII.finditer(text):
        if m.start() > pos:
            pieces.append(text[pos : m.start()])
            starts.extend(range(pos, m.start()))
            ends.extend(range(pos + 1, m.start() + 1))
        for i in range(m.start(), m.end()):
            out = _map_char(text[i])
            if out:
                pieces.append(out)
                starts.extend([i] * len(out))
                ends.extend([i + 1] * len(out))
        pos = m.end()
    if pos < len(text):
        pieces.append(text[pos:])
        starts.extend(range(pos, len(text)))
        ends.extend(range(pos + 1, len(text) + 1))
    return Normalised("".join(pieces), starts, ends)
