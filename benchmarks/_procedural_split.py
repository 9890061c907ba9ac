"""PROTOTYPE (helper procsplit, session 20): split a scenario whose wording clusters disagree in outcome.

Not in the library: the replay's ``--split-p`` runs it so it can be judged on the tune split first.
"""

from __future__ import annotations

import math

import numpy as np


def fisher_two_sided(s1: int, n1: int, s2: int, n2: int) -> float:
    """The smaller one-sided p-value (times nothing) of Fisher's exact test: group 1 did worse, or better."""
    n, k = n1 + n2, s1 + s2
    if n1 == 0 or n2 == 0 or k in (0, n):
        return 1.0
    lo, hi = max(0, n1 - (n - k)), min(n1, k)
    denom = math.comb(n, n1)
    pmf = {x: math.comb(k, x) * math.comb(n - k, n1 - x) / denom for x in range(lo, hi + 1)}
    less = sum(v for x, v in pmf.items() if x <= s1)
    more = sum(v for x, v in pmf.items() if x >= s1)
    return min(less, more)


def clusters(vectors: np.ndarray, link: float) -> list[int]:
    """Single-linkage components at cosine ``link``: a label per row (the label is the component's first row)."""
    n = len(vectors)
    label = list(range(n))

    def find(i: int) -> int:
        while label[i] != i:
            label[i] = label[label[i]]
            i = label[i]
        return i

    sims = vectors @ vectors.T
    for i, j in zip(*np.nonzero(np.triu(sims >= link, 1))):
        a, b = find(int(i)), find(int(j))
        if a != b:
            label[max(a, b)] = min(a, b)
    return [find(i) for i in range(n)]


def split_of(vectors: np.ndarray, paths: list[str], outcomes: list[bool | None], *, link: float, p: float,
             min_count: int, overlap: float = 0.5) -> tuple[list[int], float, str] | None:
    """Rows to move out of a scenario, or ``None``: a group of wording clusters that runs paths the rest never ran.

    The scenario's runs are grouped into wording clusters (single link at cosine ``link``).  Clusters of
    ``min_count`` runs or more are linked when at least ``overlap`` of one's distinct paths were run by the
    other (a path both ran with outcomes that differ at Fisher p below ``p`` does not count): the linked
    components are candidate tasks.  A component other than the largest moves out when fewer than
    ``overlap`` of its runs are on paths the rest of the scenario ran (agreeing); smaller clusters go with
    the component whose paths hold most of their runs (ties: they stay).
    """
    n = len(vectors)
    if n < 2 * min_count:
        return None
    labels = clusters(vectors, link)
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(lab, []).append(i)
    big = sorted(k for k, rows in groups.items() if len(rows) >= min_count)
    if len(big) < 2:
        return None

    def table(rows) -> dict[str, list[int]]:
        t: dict[str, list[int]] = {}
        for i in rows:
            c = t.setdefault(paths[i], [0, 0])
            if outcomes[i] is not None:
                c[0 if outcomes[i] else 1] += 1
        return t

    def agrees(a: list[int], b: list[int]) -> bool:
        (s1, f1), (s2, f2) = a, b
        return not (s1 + f1 >= min_count and s2 + f2 >= min_count and fisher_two_sided(s1, s1 + f1, s2, s2 + f2) < p)

    tables = {k: table(groups[k]) for k in big}
    comp = {k: k for k in big}

    def find(k: int) -> int:
        while comp[k] != k:
            comp[k] = comp[comp[k]]
            k = comp[k]
        return k

    def share(a: int, b: int) -> float:
        ta, tb = tables[a], tables[b]
        return sum(1 for q in ta if q in tb and agrees(ta[q], tb[q])) / len(ta)

    for a_i, a in enumerate(big):
        for b in big[a_i + 1:]:
            if find(a) != find(b) and (share(a, b) >= overlap or share(b, a) >= overlap):
                ra, rb = find(a), find(b)
                comp[max(ra, rb)] = min(ra, rb)
    parts: dict[int, list[int]] = {}
    for k in big:
        parts.setdefault(find(k), []).extend(groups[k])
    if len(parts) < 2:
        return None
    ordered = sorted(parts, key=lambda r: (-len(parts[r]), min(parts[r])))
    path_sets = {r: set(paths[i] for i in parts[r]) for r in ordered}
    for k, rows in groups.items():  # small clusters: with the component whose paths hold most of their runs
        if k in comp:
            continue
        scores = sorted(((sum(1 for i in rows if paths[i] in path_sets[r]), r) for r in ordered), key=lambda x: -x[0])
        if scores[0][0] > 0 and (len(scores) < 2 or scores[0][0] > scores[1][0]) and scores[0][1] != ordered[0]:
            parts[scores[0][1]].extend(rows)
        else:
            parts[ordered[0]].extend(rows)
    for r in ordered[1:]:
        mine = [i for k in big if find(k) == r for i in groups[k]]
        if len(mine) < min_count:
            continue
        rest = table(i for k in big if find(k) != r for i in groups[k])
        t = table(mine)
        covered = sum(1 for i in mine if paths[i] in rest and agrees(t[paths[i]], rest[paths[i]]))
        if covered < overlap * len(mine):
            rows = sorted(parts[r])
            return rows, covered / len(mine), max(t, key=lambda q: (sum(t[q]), q))
    return None


def disagree(a: dict[str, list[int]], b: dict[str, list[int]], *, p: float, min_count: int) -> bool:
    """Whether two outcome tables ``{path: [successes, failures]}`` differ significantly on a shared path."""
    for path in sorted(set(a) & set(b)):
        (s1, f1), (s2, f2) = a[path], b[path]
        if s1 + f1 >= min_count and s2 + f2 >= min_count and fisher_two_sided(s1, s1 + f1, s2, s2 + f2) < p:
            return True
    return False
