"""Scenarios: what users asked for, grouped so that paraphrases of one task meet.  Pure, no I/O.

A request joins the scenario whose centroid (the normalised sum of its
members' unit vectors) is nearest by cosine, if at least
``ProceduralSettings.similarity``; otherwise it starts a new one.  A
task's first requests can start two scenarios before either centroid
settles: MiniLM puts two wordings of one task as low as 0.29 and two tasks
as high as 0.79 (the tune split's 12 tasks), so no cosine threshold alone
separates them.  What the runs did does: two scenarios whose centroids are
within ``ProceduralSettings.merge_similarity`` and whose tool paths agree
(Jaccard at least ``merge_overlap`` over the paths both ran whose success
rates differ by at most ``merge_agreement``) are one task, and are merged
(:class:`Grouping` decides, :func:`.ledger.merge_scenarios` moves the rows).
On the tune split that took the tasks split over several scenarios from
6-9 of 12 to 1-5 (``benchmarks/procedural_tune.py grouping``).  Shared
paths alone (``merge_agreement=None``) also merged two tasks that share a
one-tool path: purity 0.918-0.922 on two tune seeds, 0.972-0.983 with the
outcomes compared.
What a run did also decides its join (``ProceduralSettings.path_similarity``):
a run whose nearest centroid never ran its tool path joins the nearest
scenario within that lower bar that did (:meth:`Grouping.assign`), so a
wording that reads like another task is filed with the task it runs like.
And what the runs did undoes a wrong join (``ProceduralSettings.split_p``): a group of
wording clusters that runs paths the rest of its scenario never ran is moved out
(:mod:`.splitting` finds it, :meth:`Grouping.split_to` picks where it goes).
An explicit label (``{"scenario": "refund"}`` in the outcome signal, or
``record_outcome(..., scenario=)``) names the scenario outright.
The request text itself is never stored: only its hash and its vector.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .splitting import disagree
from .stats import decode_vector

__all__ = ["HEADER_ID", "Centroid", "Grouping", "centroids", "label_id", "near", "nearest", "nearest_runs", "new_id", "request_hash",
           "split_id", "vote"]

HEADER_ID = ""
"""The scenario id of a scope's header row: the lock every procedural write of the scope takes first."""


@dataclass(frozen=True)
class Centroid:
    scenario_id: str
    label: str | None
    direction: np.ndarray | None  # unit vector, or None for a label with no vectors yet
    members: int
    total: np.ndarray | None = None  # the members' vector sum (what a merge adds up)


def request_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label_id(label: str) -> str:
    """The scenario id of an explicit label (the same label always meets itself)."""
    return "l-" + hashlib.sha256(label.strip().lower().encode("utf-8")).hexdigest()[:40]


def new_id(app: str, scope: str, req_hash: str) -> str:
    """A new scenario's id, derived from its first request: two extractors of one session pick the same."""
    return "s-" + hashlib.sha256(f"{app}\x00{scope}\x00{req_hash}".encode("utf-8")).hexdigest()[:40]


def split_id(app: str, scope: str, req_hash: str) -> str:
    """The scenario a split starts, named by the oldest moved run's request: two extractors pick the same,
    and it never collides with the scenario that request itself started (:func:`new_id`)."""
    return new_id(app, scope, "split\x00" + req_hash)


def centroids(rows: Iterable[Any], model: str) -> list[Centroid]:
    """Decoded scenario rows; vectors of another embedding model are not comparable and are ignored."""
    out = []
    for r in rows:
        if r.scenario_id == HEADER_ID:
            continue
        total = decode_vector(r.vector_sum) if r.embedding_model in (None, model) else None
        out.append(_centroid(r.scenario_id, r.label, total, int(r.members)))
    return out


def _centroid(scenario_id: str, label: str | None, total: np.ndarray | None, members: int) -> Centroid:
    norm = float(np.linalg.norm(total)) if total is not None else 0.0
    return Centroid(scenario_id, label, total / norm if norm > 0 else None, members, total)


def nearest(vec: np.ndarray, known: Sequence[Centroid], threshold: float) -> tuple[str | None, float]:
    """The best scenario for a unit vector and its cosine, or ``(None, best cosine)`` below ``threshold``."""
    best, score = None, -1.0
    for c in known:
        if c.direction is None or c.direction.shape != vec.shape:
            continue
        s = float(np.dot(c.direction, vec))
        if s > score:
            best, score = c.scenario_id, s
    return (best, score) if score >= threshold else (None, score)


def near(vec: np.ndarray, known: Sequence[Centroid], threshold: float, limit: int = 3) -> list[tuple[str, float]]:
    """Every scenario within ``threshold`` of a unit vector, nearest first (at most ``limit``).

    Recall pools them: early requests of one task can start two scenarios
    before their centroids settle (benchmarks/procedural.py: 39 scenarios
    for 20 tasks, 98 % pure), and their evidence belongs together.
    """
    scored = [(c.scenario_id, float(np.dot(c.direction, vec))) for c in known
              if c.direction is not None and c.direction.shape == vec.shape]
    return sorted((x for x in scored if x[1] >= threshold), key=lambda x: -x[1])[:limit]


class Grouping:
    """The scenarios of one scope while one extraction assigns its requests: join, start, merge.

    Pure: the store reads the centroids under the scope's header lock, asks
    this for each request, and writes what it decided (the runs, then each
    merge), so concurrent extractors never decide on a stale picture.

    Example:
        >>> g = Grouping([], join=0.9, merge=0.7)
        >>> g.assign(np.array([1.0, 0.0]), "a", "p1"), g.assign(np.array([0.6, 0.8]), "b", "p2")  # two wordings at 0.6
        (('a', []), ('b', []))
        >>> g.assign(np.array([0.8, 0.6]), "c", "p1")  # joins b, now within 0.7 of a and run the same ways: a joins b
        ('b', [('a', 'b')])
    """

    def __init__(
        self, known: Sequence[Centroid], *, join: float, merge: float | None, overlap: float = 0.5,
        paths: Mapping[str, Iterable[str]] | None = None, agreement: float | None = None,
        outcomes: Mapping[str, Mapping[str, tuple[int, int]]] | None = None, path_join: float | None = None,
        split_p: float | None = None, split_min: int = 5,
    ):
        self.known = {c.scenario_id: c for c in known}
        self.paths = {k: set(v) for k, v in (paths or {}).items()}
        # (successes, failures) per scenario and path: what the agreement rule compares
        self.outcomes = {k: {p: [int(s), int(f)] for p, (s, f) in v.items()} for k, v in (outcomes or {}).items()}
        for k, v in self.outcomes.items():
            self.paths.setdefault(k, set()).update(v)
        self.join, self.merge, self.overlap, self.agreement = join, merge, overlap, agreement
        self.path_join = path_join
        self.split_p, self.split_min = split_p, split_min

    def assign(
        self, vec: np.ndarray, new: str, path: str | None = None, outcome: bool | None = None
    ) -> tuple[str, list[tuple[str, str]]]:
        """Adds the unit vector ``vec`` run on ``path`` (``outcome``: succeeded, failed, ``None`` unknown):
        ``(its scenario, [(merged, into), ...])``; ``new`` names a scenario it starts."""
        target = self._join_of(vec, path) or new
        self.add(target, vec, path, outcome)
        merges = []
        while (pair := self._merge_of(target)) is not None:
            src, dst = pair
            self._fold(src, dst)
            merges.append(pair)
            target = dst
        return target, merges

    def _join_of(self, vec: np.ndarray, path: str | None) -> str | None:
        """The scenario a request joins: the nearest centroid at ``join`` or more, unless the run's path says otherwise.

        With ``path_join`` set, a run whose nearest centroid has never run its
        tool path (or that no centroid reaches) joins the nearest scenario within
        ``path_join`` that has.  Why: MiniLM puts a wording nearer another task's
        centroid than its own (tune split: missing_item's wordings at 0.62-0.78
        of a reorder scenario, 0.40-0.54 of their own), and once filed there its paths were
        filed there too, so text alone could never undo it; two tasks seldom run
        the same path, so the path tells them apart where the text does not.  It
        also files a task's later runs, which mostly take its learned best path,
        with the scenario that knows that path instead of starting a fragment that
        knows one path of four and so never reaches ``merge_overlap``.
        Scenarios within ``merge`` of the nearest one are passed over: they may be
        fragments of its task, which the merge rule joins once they share paths,
        and filing by path would keep their paths apart for ever (tune split, bar
        0.4: 6.2 tasks split per seed without this exception, 2.1 with it, 4.5
        with no join by path).  Pure and deterministic:
        the same centroids and paths give the same answer to every extractor.
        """
        target, _score = nearest(vec, list(self.known.values()), self.join)
        if self.path_join is None or path is None or (target is not None and path in self.paths.get(target, ())):
            return target
        home = self.known[target].direction if target is not None else None
        ran = [c for c in self.known.values() if c.direction is not None and path in self.paths.get(c.scenario_id, ())
               and (home is None or self.merge is None or float(np.dot(c.direction, home)) < self.merge)]
        found = near(vec, ran, self.path_join, limit=1)
        return found[0][0] if found else target

    def add(self, scenario: str, vec: np.ndarray | None, path: str | None = None, outcome: bool | None = None) -> None:
        have = self.known.get(scenario)
        if vec is not None:
            total = vec if have is None or have.total is None else have.total + vec
            self.known[scenario] = _centroid(scenario, have.label if have else None, total, (have.members if have else 0) + 1)
        if path is not None:
            self.paths.setdefault(scenario, set()).add(path)
            if outcome is not None:
                self.outcomes.setdefault(scenario, {}).setdefault(path, [0, 0])[0 if outcome else 1] += 1

    def overlap_of(self, a: str, b: str) -> float:
        """How far two scenarios' paths agree: the Jaccard overlap of their tried paths, or, with
        ``agreement`` set, of the paths both ran with known outcomes whose success rates differ by at
        most ``agreement`` (a path two tasks share but that works for only one of them is no evidence
        that they are one task: the wrong merges of benchmarks/procedural.py, README)."""
        mine, theirs = self.paths.get(a, set()), self.paths.get(b, set())
        if self.split_p is not None and disagree(self.outcomes.get(a, {}), self.outcomes.get(b, {}), p=self.split_p,
                                                 min_count=self.split_min):
            return 0.0  # a path that works for one and not the other: two tasks (and what a split took apart stays apart)
        if self.agreement is None:
            return _jaccard(mine, theirs)
        if not mine or not theirs:
            return 0.0
        oa, ob = self.outcomes.get(a, {}), self.outcomes.get(b, {})
        agree = 0
        for path in mine & theirs:
            (sa, fa), (sb, fb) = oa.get(path, (0, 0)), ob.get(path, (0, 0))
            if sa + fa and sb + fb and abs(sa / (sa + fa) - sb / (sb + fb)) <= self.agreement:
                agree += 1
        return agree / len(mine | theirs)

    def _merge_of(self, scenario: str) -> tuple[str, str] | None:
        me = self.known[scenario]
        if self.merge is None or me.label or me.direction is None:
            return None  # an explicit label names its scenario outright: never merged away or into
        others = [c for c in self.known.values() if c.scenario_id != scenario and not c.label
                  and self.overlap_of(scenario, c.scenario_id) >= self.overlap]
        other, _score = nearest(me.direction, others, self.merge)
        if other is None:
            return None
        them = self.known[other]
        # the smaller joins the larger (fewer rows move); ties: the smaller id stays, so every extractor agrees
        keep = min((me, them), key=lambda c: (-c.members, c.scenario_id))
        gone = them if keep is me else me
        return gone.scenario_id, keep.scenario_id

    def split_to(self, scenario: str, total: np.ndarray, table: Mapping[str, Sequence[int]], path: str, new: str) -> str:
        """Where runs split out of ``scenario`` go: the nearest other scenario (cosine of centroids at least
        ``merge``, else ``join``) that ran ``path`` with ``split_min`` known outcomes or more and whose outcomes do not
        disagree with the moved runs' ``table`` (``{path: (successes, failures)}``); else ``new``.  ``total`` is
        the moved runs' vector sum.  Pure: the same picture gives every extractor the same answer."""
        norm = float(np.linalg.norm(total))
        if norm <= 0:
            return new
        direction, bar = total / norm, self.join if self.merge is None else self.merge
        best, score = new, -1.0
        for c in sorted(self.known.values(), key=lambda c: c.scenario_id):
            if c.scenario_id == scenario or c.label or c.direction is None or c.direction.shape != direction.shape:
                continue
            have = self.outcomes.get(c.scenario_id, {})
            cos = float(np.dot(c.direction, direction))
            if (cos >= bar and cos > score and sum(have.get(path, (0, 0))) >= self.split_min
                    and not disagree(table, have, p=self.split_p or 0.0, min_count=self.split_min)):
                best, score = c.scenario_id, cos
        return best

    def move(self, src: str, dst: str, total: np.ndarray, members: int, table: Mapping[str, Sequence[int]],
             left: Iterable[str]) -> None:
        """Moves ``members`` runs (vector sum ``total``, outcomes ``table``) from ``src`` to ``dst``; ``left``: the
        paths ``src`` still has runs on (what its statistics keep)."""
        a, b = self.known[src], self.known.get(dst)
        self.known[src] = _centroid(src, a.label, None if a.total is None else a.total - total, a.members - members)
        self.known[dst] = _centroid(dst, b.label if b else None, total if b is None or b.total is None else b.total + total,
                                    members + (b.members if b else 0))
        mine, into = self.outcomes.setdefault(src, {}), self.outcomes.setdefault(dst, {})
        for path, (s, f) in table.items():
            have = mine.setdefault(path, [0, 0])
            have[0] -= s
            have[1] -= f
            add = into.setdefault(path, [0, 0])
            add[0] += s
            add[1] += f
        self.paths[src] = set(left)
        self.outcomes[src] = {k: v for k, v in mine.items() if k in self.paths[src]}
        self.paths.setdefault(dst, set()).update(table)

    def _fold(self, src: str, dst: str) -> None:
        a, b = self.known.pop(src), self.known[dst]
        total = b.total if a.total is None else (a.total if b.total is None else a.total + b.total)
        self.known[dst] = _centroid(dst, b.label, total, a.members + b.members)
        self.paths.setdefault(dst, set()).update(self.paths.pop(src, set()))
        into = self.outcomes.setdefault(dst, {})
        for path, (s, f) in self.outcomes.pop(src, {}).items():
            have = into.setdefault(path, [0, 0])
            have[0] += s
            have[1] += f


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def nearest_runs(vec: np.ndarray, vectors: np.ndarray, k: int, floor: float) -> list[int]:
    """Rows of ``vectors`` (unit request vectors of stored runs) nearest the unit vector ``vec``:
    at most ``k``, each at cosine ``floor`` or more, nearest first (ties: the earlier row)."""
    if k <= 0 or len(vectors) == 0:
        return []
    scores = vectors @ vec.astype(np.float32)
    keep = np.flatnonzero(scores >= floor)
    order = keep[np.argsort(-scores[keep], kind="stable")][:k]
    return [int(i) for i in order]


def vote(
    vec: np.ndarray, scenarios: Sequence[str], vectors: np.ndarray, k: int, floor: float
) -> tuple[str | None, float]:
    """The scenario most of the ``k`` runs nearest ``vec`` belong to, and the cosine of its nearest run.

    ``scenarios[i]`` is the scenario of the run whose unit request vector is
    ``vectors[i]``.  Ties go to the scenario of the nearer run.  ``(None,
    0.0)`` when no run is within ``floor``.  Why runs and not centroids: a
    wording can sit nearer another task's centroid than its own task's
    (README, session 16: 0.73-0.87 against 0.62-0.72), but its own earlier
    runs (the same wording, another order number) are nearer still.

    Example:
        >>> v = np.array([[1.0, 0.0], [0.96, 0.28], [0.6, 0.8]], dtype=np.float32)
        >>> vote(np.array([0.8, 0.6]), ["a", "b", "b"], v, k=3, floor=0.5)
        ('b', 0.96)
    """
    nearest = nearest_runs(vec, vectors, k, floor)
    if not nearest:
        return None, 0.0
    counts = Counter(scenarios[i] for i in nearest)  # most_common keeps first-seen (nearest) order on ties
    winner = counts.most_common(1)[0][0]
    first = next(i for i in nearest if scenarios[i] == winner)
    return winner, round(float(np.dot(vectors[first], vec)), 3)
