"""The words the full-text half matches on: lowercased, light English suffix stripping, both sides.

OceanBase's ``ik`` parser indexes words as written, so "paint", "painted" and
"painting" are three terms and a question rarely uses the memory's inflection
("What did Melanie paint?" vs "I painted a sunset").  We therefore index
``stem_text(search text)`` and match ``stem_text(query)``: the same
normalisation on both sides, so the server's BM25 compares stems.

The stemmer is deliberately light (plural, -ing, -ed, -ly, a final silent
"e"): it only has to map inflections of one word to one key, never to produce
a dictionary form.  Measured on LoCoMo (10 conversations, categories 1-4,
per-conversation BM25 fused 0.7/0.3 with MiniLM): R@10 0.600 without stemming,
0.639 with it.  Words with digits or non-Latin letters (CJK, Korean) pass
through unchanged in ``search_text``.

Since revision 0012 the ranking no longer uses the server's ``MATCH``: the
words are split into *terms* here (:func:`doc_terms`, :func:`query_terms`)
and stored per user in ``memory_terms`` (see ``memory.postings``), so the
BM25 statistics are the user's own.  Latin words are one term each; a run of
CJK, kana or Hangul characters (written without spaces) becomes its character
bigrams ("咖啡馆" -> "咖啡", "啡馆"), or the character itself for a one-character
run, so Chinese, Japanese and Korean match without a segmenter.  Pure
Python and deterministic: both engines index and query the same terms.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Iterable

__all__ = ["MAX_TERM_CHARS", "doc_terms", "query_terms", "stem", "stem_text", "terms_of"]

MAX_TERM_CHARS = 64
"""A term longer than this (a URL, a hash) is cut: the ``memory_terms.term`` column's width."""

# CJK ideographs, kana, Hangul: scripts written without spaces between words.
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_VOWELS = set("aeiouy")
_DOUBLE_OK = set("lsz")  # "fall", "miss", "buzz" keep their double letter


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The match key of one lowercase word (ASCII letters only; anything else is returned as is).

    Cached: a text's words repeat (the vocabulary of a user's memories is
    small next to their length), and stemming was half of the client's time
    writing a batch of memories (500 memories of 12-18 words: 35 ms of
    ``search_text``, load 10, issue 28).
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("es") and w[-3] in "xz" or w.endswith(("ches", "shes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if w.endswith(suffix):
            rest = w[: -len(suffix)]
            if len(rest) >= 3 and _VOWELS & set(rest):
                w = rest
                if len(w) > 3 and w[-1] == w[-2] and w[-1] not in _VOWELS | _DOUBLE_OK:
                    w = w[:-1]  # "running" -> "run"
            break
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # "make"/"making", "love"/"loved" meet at "mak"/"lov"
    return w


def stem_text(text: str) -> str:
    """``text`` as space-separated match keys (lowercased, stemmed); CJK and digits kept as written."""
    return " ".join(stem(w) for w in _WORD.findall(text.lower()))


def terms_of(word: str) -> list[str]:
    """The terms of one match key: itself, or for CJK/kana/Hangul runs their character bigrams.

    A key mixing scripts ("2023年5月") is split at each run: "2023", "年", "5", "月".
    """
    if word.isascii():
        return [word[:MAX_TERM_CHARS]] if word else []
    out: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(word):
        if m.start() > pos:
            out.append(word[pos : m.start()][:MAX_TERM_CHARS])
        run = m.group()
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        pos = m.end()
    if pos < len(word):
        out.append(word[pos:][:MAX_TERM_CHARS])
    return out


def doc_terms(search_text: str | None) -> Counter[str]:
    """Term frequencies of a stored ``search_text`` (already stemmed): what ``memory_terms`` holds for it."""
    text = search_text or ""
    if text.isascii():  # every word is one term (terms_of): one Counter pass, 4x faster on a bulk write
        return Counter(w[:MAX_TERM_CHARS] for w in text.split())
    counts: Counter[str] = Counter()
    for word in text.split():
        counts.update(terms_of(word))
    return counts


def query_terms(keys: Iterable[str]) -> Counter[str]:
    """Query terms with their multiplicity, from the stemmed query words (``search_sql.fulltext_query``)."""
    counts: Counter[str] = Counter()
    for word in keys:
        counts.update(terms_of(word))
    return counts


# English function words dropped from the full-text query (not from the index).  Measured with
# OceanBase's BM25 (every matched term weighs > 0): "when did ... the ... to" pulled short,
# unrelated turns up; the per-user BM25 floors such terms low but they still add noise.
STOPWORDS = frozenset(
    "a an the and or but if of at by for with about against between into through during before after above "
    "below to from up down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than too very can will just "
    "should now i me my myself we our ours you your yours he him his she her hers it its they them their "
    "theirs what which who whom this that these those am is are was were be been being have has had having "
    "do does did doing would could might must shall may s t d ll m o re ve y".split()
    # ADK's author of every user turn is "user", and search_text carries the author: in
    # "does the user have pets?" the word matched every user row and max-normalisation
    # made the shortest one the full-text winner.
    + ["user"]
)
_QUERY_WORDS = re.compile(r"[^\W_]+", re.UNICODE)


def fulltext_query(query: str, *, drop_stopwords: bool = True, drop_terms: frozenset[str] = frozenset()) -> str:
    """The words of ``query`` the full-text half looks up: stemmed like ``search_text``, stopwords removed.

    Space-separated; ``lexical.query_terms`` turns them into index terms.

    ``drop_terms`` are stems left out as well (the user's author names, see
    ``MemorySettings.fulltext_drop_authors``).  Keeps every word when nothing
    else is left; CJK and other scripts pass through (neither listed nor stemmed).
    """
    words = [w.lower() for w in _QUERY_WORDS.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] if drop_stopwords else words
    stems = [stem(w) for w in kept]
    useful = [t for t in stems if t not in drop_terms]
    return " ".join(useful or stems or [stem(w) for w in words])
