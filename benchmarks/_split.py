"""Tune / test split and the abstention sets (pure: no database, no model).

Every default of ours (weights, context window, version and gate thresholds)
and every baseline's tuned weight is chosen on the **tune** split; the
headline reports the **test** split, with the tune figures beside it.

* LoCoMo: conversations 1-5 tune, 6-10 test (file order, 0-based indices 0-4 / 5-9).
* Knowledge-update generator: seeds 0-3 tune, 10-19 test.

Abstention sets: questions whose answer is in no memory of the asked user.

* ``abstain:swapped`` (LoCoMo): a question of another conversation of the
  same split (categories 1-4) with its two speakers' names replaced by the
  asked conversation's speakers.  Kept only when neither the answer's content
  words nor the question's (stemmed, function words and names left out) occur
  in any turn of the asked conversation: the topic is absent, not just the
  wording.  LoCoMo's category 5 (adversarial: the right topic, the wrong
  person) is the hard case and is reported on its own.
* ``abstain:unknown-person`` (knowledge-update): the set's questions about
  people who appear nowhere in it.
* ``abstain:absent-attribute`` (knowledge-update): a question about a person
  of the set on an attribute no memory states for them (their other facts
  and chit-chat are there): harder, reported on its own.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "SPLITS",
    "Split",
    "content_terms",
    "ku_abstention_questions",
    "swap_names",
    "swapped_abstention_questions",
]


@dataclass(frozen=True)
class Split:
    name: str
    conversations: tuple[int, ...]  # 0-based indices into locomo10.json
    seeds: tuple[int, ...]  # knowledge-update generator seeds


SPLITS = {
    "tune": Split("tune", (0, 1, 2, 3, 4), (0, 1, 2, 3)),
    "test": Split("test", (5, 6, 7, 8, 9), tuple(range(10, 20))),
}

UNKNOWN_PEOPLE = ["Victor", "Wanda", "Xavier", "Yara", "Zane", "Bianca", "Caleb", "Dara", "Elif", "Felix"]


def content_terms(text: str, drop: Iterable[str] = ()) -> set[str]:
    """Stemmed words of ``text`` without English function words and without ``drop`` (stems)."""
    from adk_oceanbase.memory.lexical import stem
    from adk_oceanbase.memory.search_sql import STOPWORDS

    dropped = set(drop)
    words = re.findall(r"[^\W_]+", text.lower())
    return {stem(w) for w in words if w not in STOPWORDS} - dropped


def swap_names(question: str, old: Sequence[str], new: Sequence[str]) -> str | None:
    """``question`` with each name of ``old`` replaced by the same-position name of ``new``; ``None``
    when it names none of them (nothing to swap: it would not be about the asked user's speakers)."""
    out, hit = question, False
    marks = [f"\x00{i}\x00" for i in range(len(old))]
    for name, mark in zip(old, marks):
        first = name.split()[0] if name else ""
        if not first:
            continue
        out, n = re.subn(rf"\b{re.escape(first)}\b", mark, out)
        hit = hit or n > 0
    for mark, name in zip(marks, new):
        out = out.replace(mark, name.split()[0] if name else "")
    return out if hit else None


def swapped_abstention_questions(convs: Sequence, per_conversation: int = 40, seed: int = 0) -> list[tuple[str, str]]:
    """``(sample_id, question)`` pairs of the ``abstain:swapped`` set over ``convs`` (one split)."""
    from adk_oceanbase.memory.lexical import stem_text

    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for target in convs:
        names = {w for s in target.speakers for w in stem_text(s).split()}
        vocab = {w for t in target.turns for w in stem_text(f"{t.text} {t.caption or ''}").split()}
        found: list[str] = []
        for source in convs:
            if source.sample_id == target.sample_id:
                continue
            src_names = {w for s in source.speakers for w in stem_text(s).split()}
            for q in source.queries:
                if q.category not in (1, 2, 3, 4):
                    continue
                swapped = swap_names(q.question, source.speakers, target.speakers)
                if swapped is None:
                    continue
                answer = content_terms(q.answer, src_names | names)
                asked = content_terms(swapped, src_names | names)
                if not answer or not asked or (answer | asked) & vocab:
                    continue
                found.append(swapped)
        rng.shuffle(found)
        out.extend((target.sample_id, qq) for qq in sorted(set(found), key=found.index)[:per_conversation])
    return out


def ku_abstention_questions(ku, seed: int, per_group: int = 20) -> list[tuple[str, str]]:
    """``(question, group)`` pairs for one knowledge-update set ``ku`` (``make_knowledge_update_set``)."""
    from benchmarks._synthetic import FREQUENCY_KINDS, PEOPLE, UPDATE_KINDS

    rng = random.Random(10_000 + seed)
    templates = [v[3] for v in UPDATE_KINDS.values()] + [v[2] for v in FREQUENCY_KINDS.values()]
    unknown = [(rng.choice(templates).format(p=p), "abstain:unknown-person")
               for p in rng.sample(UNKNOWN_PEOPLE * 2, per_group)]
    stated = {tuple(m.group.split(":")[1:3]) for m in ku.memories if m.group != "filler"}
    kinds = {**{k: v[3] for k, v in UPDATE_KINDS.items()}, **{k: v[2] for k, v in FREQUENCY_KINDS.items()}}
    absent = [(p, k) for p in PEOPLE for k in kinds if (p, k) not in stated]
    picked = rng.sample(absent, min(per_group, len(absent)))
    return unknown + [(kinds[k].format(p=p), "abstain:absent-attribute") for p, k in picked]
