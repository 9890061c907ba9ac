"""Seeded synthetic data: the knowledge-update set and the ``--scale`` vectors.

Knowledge-update set (one app, one user; every system sees the same memories):

* **Update groups** (recency is the signal): a fact about a person changes
  over time, e.g. "Alice lives in Lisbon." (~300 days ago) then "Alice moved to
  Denver." (~100 days ago) then maybe "Alice just finished moving into a flat
  in Osaka." (~10 days ago).  The question ("Which city does Alice live in?")
  has one relevant memory: the newest version.  Versions are worded
  differently, so text similarity alone does not know which is current (the
  first wording is often the closest to the question: that is the trap).
* **Frequency groups** (frequency is the signal): several parallel facts of the
  same kind at different dates ("Ben had dinner at Sakura.", "Ben had dinner at
  Luigi's.", ...), one of which the agent recalled often before the question
  ("Which restaurant does Ben go to?").  The often-recalled one is never the
  newest, so recency cannot stand in for frequency.  Recall history is a list
  of *warm-up* searches (``"Ben had dinner at Luigi's"``, top_k=1), run through
  every system before evaluation; stateless systems ignore them, ours bumps
  ``access_count`` of what it returned, exactly as in production.
* **Filler**: chit-chat memories about the same people (dated at random), so
  the store is not only the answer candidates.

Dates are offsets (``days_ago``) from a fixed clock, ``KU_CLOCK``, at which the
questions are asked; ``dated_texts`` gives every memory its date and the text
the systems embed and index ("4 March 2025: Alice moved to Denver.", the
service's layout).  Everything comes from ``random.Random(seed)``.

Why a fixed clock: until 2026-11-25 the offsets were taken from the run's wall
clock.  The date is part of the embedded and full-text indexed text, so every
day's run scored different texts: knowledge-update R@1 of the same commit moved
between 0.525 and 0.542 from one day to the next, and no results file could be
reproduced on another day.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

__all__ = ["KU_CLOCK", "KUMemory", "KUQuery", "KnowledgeUpdateSet", "clustered_vectors", "dated_texts",
           "make_knowledge_update_set"]

KU_CLOCK = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
"""When the knowledge-update questions are asked; memories are dated ``days_ago`` before it."""

PEOPLE = [
    "Alice", "Ben", "Chloe", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Keiko", "Liam", "Maya", "Nikolai", "Olivia", "Priya", "Quentin", "Rosa", "Samir", "Tove",
]
CITIES = ["Lisbon", "Denver", "Osaka", "Nairobi", "Krakow", "Montreal", "Hanoi", "Austin", "Bergen", "Seville"]
COMPANIES = ["Globex", "Initech", "Umbrella Labs", "Stark Foods", "Wayne Logistics", "Acme Robotics", "Hooli", "Vandelay"]
CARS = ["Toyota Corolla", "Tesla Model 3", "Volvo XC40", "Ford F-150", "Honda Civic", "Mazda MX-5", "VW Golf"]
HOBBIES = ["rock climbing", "pottery", "sailing", "birdwatching", "salsa dancing", "chess", "woodworking"]
LANGUAGES = ["Spanish", "Japanese", "Portuguese", "German", "Korean", "Italian", "Arabic", "Mandarin"]
PARTNERS = ["Marco", "Lena", "Tariq", "Sofia", "Owen", "Yuki", "Noah", "Amara"]
RESTAURANTS = ["Sakura", "Luigi's", "El Farolito", "The Golden Wok", "Bistro Nord", "Casa Lola", "Spice Route"]
TRAILS = ["Eagle Ridge", "Miller Canyon", "Fox Hollow", "Silver Lake loop", "Pine Bluff", "Cedar Falls"]
CAFES = ["Blue Bottle", "Bean There", "Daily Grind", "Kaffeehaus", "The Roastery", "Brew Lab"]

# attribute: (value pool, initial template, update templates, question)
UPDATE_KINDS = {
    "city": (CITIES, "{p} lives in {v}.",
             ["{p} moved to {v}.", "{p} has relocated to {v} for good.", "{p} just finished moving into a flat in {v}."],
             "Which city does {p} live in?"),
    "employer": (COMPANIES, "{p} works at {v}.",
                 ["{p} started a new job at {v}.", "{p} quit and joined {v} last week.", "{p} accepted an offer from {v}."],
                 "Where does {p} work?"),
    "car": (CARS, "{p} drives a {v}.",
            ["{p} sold the old car and bought a {v}.", "{p} traded in for a {v}.", "{p} picked up a new {v} yesterday."],
            "What car does {p} drive?"),
    "hobby": (HOBBIES, "{p} spends weekends {v}.",
              ["{p} gave that up and is now into {v}.", "{p} has a new passion: {v}.", "{p} signed up for {v} classes."],
              "What is {p}'s hobby these days?"),
    "language": (LANGUAGES, "{p} is learning {v}.",
                 ["{p} stopped that and started learning {v}.", "{p} switched to {v} lessons.", "{p} now studies {v} every evening."],
                 "Which language is {p} learning?"),
    "partner": (PARTNERS, "{p} is dating {v}.",
                ["{p} broke up and is now seeing {v}.", "{p} has a new partner, {v}.", "{p} got together with {v}."],
                "Who is {p} dating?"),
}

# kind: (value pool, template, question)
FREQUENCY_KINDS = {
    "restaurant": (RESTAURANTS, "{p} had dinner at {v}.", "Which restaurant does {p} go to?"),
    "trail": (TRAILS, "{p} went hiking at {v}.", "Where does {p} go hiking?"),
    "cafe": (CAFES, "{p} grabbed coffee at {v}.", "Which coffee place does {p} like?"),
}

FILLER = [
    "{p} said the weather was lovely today.",
    "{p} mentioned being tired after a long week.",
    "{p} laughed about a meme from the group chat.",
    "{p} asked how the weekend went.",
    "{p} is looking forward to the holidays.",
    "{p} watched a documentary about oceans.",
    "{p} complained about the traffic this morning.",
    "{p} shared a photo of a sunset.",
    "{p} thinks the new season of the show is great.",
    "{p} forgot an umbrella and got soaked.",
]


@dataclass(frozen=True)
class KUMemory:
    memory_id: str
    text: str
    days_ago: float
    group: str  # "update:<person>:<kind>", "frequency:<person>:<kind>" or "filler"


@dataclass(frozen=True)
class KUQuery:
    question: str
    relevant: str  # memory_id of the one right answer
    signal: str  # "recency" | "frequency"


@dataclass
class KnowledgeUpdateSet:
    memories: list[KUMemory] = field(default_factory=list)
    queries: list[KUQuery] = field(default_factory=list)
    warmups: list[str] = field(default_factory=list)  # recall history, run in this order with top_k=1


def make_knowledge_update_set(
    seed: int = 7, update_groups: int = 60, frequency_groups: int = 30, filler: int = 300
) -> KnowledgeUpdateSet:
    """Builds the set deterministically from ``seed`` (see the module docstring)."""
    rng = random.Random(seed)
    out = KnowledgeUpdateSet()
    next_id = iter(range(10**9))

    def add(text: str, days: float, group: str) -> str:
        mid = f"ku-{next(next_id):05d}"
        out.memories.append(KUMemory(mid, text, round(days, 3), group))
        return mid

    pairs = [(p, k) for p in PEOPLE for k in UPDATE_KINDS]
    rng.shuffle(pairs)
    for person, kind in pairs[:update_groups]:
        pool, first, updates, question = UPDATE_KINDS[kind]
        n_versions = rng.choice([2, 2, 3, 4])
        values = rng.sample(pool, n_versions)
        templates = [first] + rng.sample(updates, n_versions - 1)
        ages = sorted((rng.uniform(1, 400) for _ in range(n_versions)), reverse=True)
        group = f"update:{person}:{kind}"
        ids = [add(t.format(p=person, v=v), age, group) for t, v, age in zip(templates, values, ages)]
        out.queries.append(KUQuery(question.format(p=person), ids[-1], "recency"))

    fpairs = [(p, k) for p in PEOPLE for k in FREQUENCY_KINDS]
    rng.shuffle(fpairs)
    for person, kind in fpairs[:frequency_groups]:
        pool, template, question = FREQUENCY_KINDS[kind]
        n = rng.choice([3, 4, 5])
        values = rng.sample(pool, n)
        ages = sorted((rng.uniform(1, 300) for _ in range(n)), reverse=True)  # oldest first
        target = rng.randrange(0, n - 1)  # never the newest
        group = f"frequency:{person}:{kind}"
        ids = [add(template.format(p=person, v=v), age, group) for v, age in zip(values, ages)]
        out.queries.append(KUQuery(question.format(p=person), ids[target], "frequency"))
        for i, v in enumerate(values):
            times = rng.randint(4, 8) if i == target else rng.choice([0, 0, 1])
            out.warmups.extend([template.format(p=person, v=v).rstrip(".")] * times)

    for _ in range(filler):
        add(rng.choice(FILLER).format(p=rng.choice(PEOPLE)), rng.uniform(0, 400), "filler")
    rng.shuffle(out.warmups)
    return out


def dated_texts(ku: KnowledgeUpdateSet, clock: datetime = KU_CLOCK) -> list[tuple[KUMemory, datetime, str]]:
    """``(memory, its date, the text systems see)`` for every memory of ``ku``: dated ``days_ago`` before
    ``clock``, the text prefixed with that date as the service stores it (no author: these are facts)."""
    out = []
    for m in ku.memories:
        when = clock - timedelta(days=m.days_ago)
        out.append((m, when, f"{when.day} {when:%B %Y}: {m.text}"))
    return out


def clustered_vectors(n: int, dim: int, seed: int, clusters: int = 1000, spread: float = 0.35) -> np.ndarray:
    """``n`` unit vectors drawn around ``clusters`` random centres (a Gaussian mixture).

    Sentence embeddings are clustered by topic; uniform random vectors in 384-d
    are all nearly orthogonal, an unrealistically hard case for any ANN index.
    """
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = rng.integers(0, clusters, size=n)
    noise = rng.standard_normal((n, dim)).astype(np.float32) * (spread / np.sqrt(dim))
    vecs = centres[assign] + noise
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32)
