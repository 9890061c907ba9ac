"""Undoing a wrong join: the wording clusters of a scenario that run another task's paths.  Pure, no I/O.

Joins and merges put runs together; until this, nothing took them apart.  A
run's own outcome cannot tell a wrong join from a right one when it is filed
(README, session 19, proc4: the outcome differs from the target's rate by 0.25
on average for wrong joins, 0.26 for right ones), but the runs a scenario
collects can.  A task is asked in a few wordings, and the runs of one wording
(another order number each time) sit close together (MiniLM, the benchmark's
tune tasks: same wording median cosine 0.88, two tasks at most 0.69), so a
scenario's runs fall into wording clusters.  A task's clusters run the task's
paths; a cluster of another task that was filed there runs its own task's
paths, which the rest of the scenario never ran (the benchmark's two-task
scenarios: each task's four paths, one shared at most; where a path is shared,
it works for one task and not the other).  :func:`split_of` finds such a group
of clusters; the store moves its runs (statistics, vectors) to the scenario
they agree with or a new one (:meth:`.scenarios.Grouping.split_to`), and the
merge rule does not join two scenarios whose outcomes on a shared path differ
significantly (:meth:`.scenarios.Grouping.overlap_of`), so a split stays split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from .stats import fisher_differ_p

__all__ = ["Split", "clusters", "disagree", "outcome_table", "split_of"]


@dataclass(frozen=True)
class Split:
    """What :func:`split_of` found: the rows to move, the share of their runs on paths the rest ran, and the path
    most of them ran (the one a destination must know)."""

    rows: tuple[int, ...]
    covered: float
    path: str


def clusters(vectors: np.ndarray, link: float) -> list[int]:
    """Single-linkage components of unit vectors at cosine ``link``: one label per row, the component's first row.

    Example:
        >>> clusters(np.array([[1.0, 0.0], [0.6, 0.8], [0.96, 0.28]]), 0.9)
        [0, 1, 0]
    """
    n = len(vectors)
    label = list(range(n))

    def find(i: int) -> int:
        while label[i] != i:
            label[i] = label[label[i]]
            i = label[i]
        return i

    if n > 1:
        sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors, dtype=np.float32).T
        for i, j in zip(*np.nonzero(np.triu(sims >= link, 1))):
            a, b = find(int(i)), find(int(j))
            if a != b:
                label[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]


def _agree(a: Sequence[int], b: Sequence[int], p: float, min_count: int) -> bool:
    """Two ``(successes, failures)`` of one path: not significantly different (or too few to tell)."""
    (s1, f1), (s2, f2) = a, b
    return not (s1 + f1 >= min_count and s2 + f2 >= min_count and fisher_differ_p(s1, s1 + f1, s2, s2 + f2) < p)


def disagree(a: Mapping[str, Sequence[int]], b: Mapping[str, Sequence[int]], *, p: float, min_count: int) -> bool:
    """Whether two ``{path: (successes, failures)}`` tables differ significantly (Fisher p below ``p``, each side
    ``min_count`` known outcomes or more) on a path both ran: then they are not one task.

    Example:
        >>> disagree({"p": (9, 1)}, {"p": (1, 9)}, p=0.01, min_count=5), disagree({"p": (9, 1)}, {"p": (7, 3)}, p=0.01, min_count=5)
        (True, False)
    """
    return any(not _agree(a[q], b[q], p, min_count) for q in sorted(set(a) & set(b)))


def outcome_table(rows: Iterable[int], paths: Sequence[str], outcomes: Sequence[bool | None]) -> dict[str, list[int]]:
    """``{path: [successes, failures]}`` of the given rows (a path run with unknown outcomes only: ``[0, 0]``)."""
    t: dict[str, list[int]] = {}
    for i in rows:
        c = t.setdefault(paths[i], [0, 0])
        if outcomes[i] is not None:
            c[0 if outcomes[i] else 1] += 1
    return t


def split_of(
    vectors: np.ndarray, paths: Sequence[str], outcomes: Sequence[bool | None], *, link: float, p: float,
    min_count: int, overlap: float,
) -> Split | None:
    """Rows of a scenario's runs (oldest first) to move out: a group of wording clusters that runs paths the
    rest of the scenario never ran, or ran with significantly different outcomes.  ``None``: nothing to move.

    The runs are grouped into wording clusters (:func:`clusters` at ``link``).  Clusters of ``min_count`` runs
    or more are linked when at least ``overlap`` of one's distinct paths were run by the other, with outcomes
    that do not differ at Fisher p below ``p``: the linked components are the candidate tasks (a task's
    clusters share its paths; early on a wording may have explored others of its four).  A component other
    than the largest moves out when fewer than ``overlap`` of its runs are on paths the rest ran (agreeing):
    only a group that runs another set of paths leaves, never a wording that explored the task's other
    paths (tune split: no scenario of one task was split, 0 of 37 splits).  Smaller clusters go with the
    component whose paths hold most of their runs (ties: they stay).  The first such component, largest
    first, is returned; the next filing looks again.  Deterministic: the same rows in the same order give
    the same answer (two extractors read them under the scope's lock).

    Example:
        >>> v = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 5)
        >>> split_of(v, ["a"] * 5 + ["b"] * 5, [True] * 10, link=0.8, p=0.01, min_count=3, overlap=0.5)
        Split(rows=(5, 6, 7, 8, 9), covered=0.0, path='b')
    """
    n = len(vectors)
    if n < 2 * min_count:
        return None
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(clusters(vectors, link)):
        groups.setdefault(lab, []).append(i)
    big = sorted(k for k, rows in groups.items() if len(rows) >= min_count)
    if len(big) < 2:
        return None
    tables = {k: outcome_table(groups[k], paths, outcomes) for k in big}
    comp = {k: k for k in big}

    def find(k: int) -> int:
        while comp[k] != k:
            comp[k] = comp[comp[k]]
            k = comp[k]
        return k

    def share(a: int, b: int) -> float:
        ta, tb = tables[a], tables[b]
        return sum(1 for q in ta if q in tb and _agree(ta[q], tb[q], p, min_count)) / len(ta)

    for at, a in enumerate(big):
        for b in big[at + 1:]:
            if find(a) != find(b) and (share(a, b) >= overlap or share(b, a) >= overlap):
                ra, rb = find(a), find(b)
                comp[max(ra, rb)] = min(ra, rb)
    parts: dict[int, list[int]] = {}
    for k in big:
        parts.setdefault(find(k), []).extend(groups[k])
    if len(parts) < 2:
        return None
    ordered = sorted(parts, key=lambda r: (-len(parts[r]), min(parts[r])))
    path_sets = {r: {paths[i] for i in parts[r]} for r in ordered}
    for k, rows in groups.items():
        if k in comp:
            continue
        scores = sorted(((sum(1 for i in rows if paths[i] in path_sets[r]), r) for r in ordered), key=lambda x: -x[0])
        clear = scores[0][0] > 0 and (len(scores) < 2 or scores[0][0] > scores[1][0])
        parts[scores[0][1] if clear else ordered[0]].extend(rows)
    for r in ordered[1:]:
        mine = [i for k in big if find(k) == r for i in groups[k]]
        if len(mine) < min_count:
            continue
        rest = outcome_table((i for k in big if find(k) != r for i in groups[k]), paths, outcomes)
        t = outcome_table(mine, paths, outcomes)
        covered = sum(1 for i in mine if paths[i] in rest and _agree(t[paths[i]], rest[paths[i]], p, min_count))
        if covered < overlap * len(mine):
            return Split(tuple(sorted(parts[r])), covered / len(mine), max(t, key=lambda q: (sum(t[q]), q)))
    return None
