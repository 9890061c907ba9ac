"""The one frozen settings object of procedural memory."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError
from .extraction import OUTCOME_KEY, Judge

__all__ = ["ProceduralSettings"]



@dataclass(frozen=True)
class ProceduralSettings:
    """How runs are grouped, counted and served.

    Example:
        >>> ProceduralSettings(scope="user", min_samples=5).scope
        'user'
    """

    scope: str = "app"
    """``"app"``: paths are learned across the app's users (the default); ``"user"``: per user."""

    outcome_key: str = OUTCOME_KEY
    """The ``state_delta`` / ``custom_metadata`` key an agent sets with the invocation's outcome."""

    judge: Judge | None = None
    """Decides the outcome of an invocation no event reported on; ``None``: such runs stay unknown (never promoted)."""

    similarity: float = 0.6
    """Cosine a request needs to join a scenario.  MiniLM puts paraphrases of one task at 0.6-0.9 and
    different tasks of one domain at 0.2-0.5 (benchmarks/procedural.py's 22 scenarios)."""

    merge_similarity: float | None = 0.45
    """Two unlabelled scenarios whose centroids are this close and whose tried paths overlap
    (``merge_overlap``) are merged: one task whose wordings started two.  Tuned on the tune split only
    (``benchmarks/procedural_tune.py grouping``: 0.45 split 0-3 of 12 tasks, purity 0.925-1.0; none:
    6-9 split).  ``None``: never merge."""

    path_similarity: float | None = 0.4
    """A run whose nearest centroid (at ``similarity`` or more) never ran its tool path, or that no centroid
    reaches, joins the nearest scenario at this cosine or more that ran it, unless that scenario is within
    ``merge_similarity`` of the nearest one (fragments of one task are left to the merge rule).  A wording
    nearer another task's centroid than its own (MiniLM: 0.62-0.78 against 0.40-0.54 on the tune split) is
    filed with the task whose paths it runs, not the one its text resembles.  0.4 was chosen on the tune split
    only (``benchmarks/procedural_replay.py --split tune --path-join``, seeds 101-112; benchmarks/README.md,
    session 19): tasks split over several scenarios 4.5 -> 2.1 per seed (fewer on 12 of 12), purity 0.952 ->
    0.965, expected gap to the oracle 1.1 points smaller; the noise run 1.3 points further (se 1.4), the drift
    run followed within 20 sessions on 3 seeds of 12 against 5.  ``None``: the request text alone decides
    (the rule before)."""

    merge_overlap: float = 0.5
    """Jaccard overlap of two scenarios' tool paths that a merge also needs (with ``merge_agreement``:
    only paths that agree in outcome count as shared)."""

    merge_agreement: float | None = 0.5
    """A path both scenarios ran counts towards ``merge_overlap`` only if both know outcomes of it and
    their success rates differ by at most this much: fragments merge when their paths agree in outcome,
    not only in having been tried.  Two tasks that share a path (a one-tool path such as ``verify``)
    but not its results stay apart.  0.5 was chosen on the tune split only (``benchmarks/procedural_tune.py
    grouping``, merge 0.45: purity 0.918-0.922 -> 0.972-0.983 on two of three tune seeds when early
    sessions explore, one more task split per seed; neutral to -0.015 when paths are mostly the learned
    best, where the impurity left is requests joining another task's centroid, not merges).
    ``None``: every shared tried path counts (the rule before)."""

    pool_similarity: float | None = None
    """Recall pools every scenario at least this close to the request (``None``: ``similarity``); lower
    pools the fragments one task's early paraphrases started (benchmarks/procedural.py, drift run)."""

    recall_neighbours: int | None = 10
    """Recall picks the scenario by the runs nearest the request, not by the nearest centroid: the
    scenario most of the ``recall_neighbours`` stored runs whose request vectors are nearest (cosine at
    least ``pool_similarity`` or ``similarity``) belong to, ties to the nearest run's.  A wording that
    sits nearer another task's centroid than its own (MiniLM: "I want a refund for order N" at 0.73-0.87
    to an invoice centroid, 0.62-0.72 to its own) is nearest its own earlier runs (the same wording,
    another order number): recall goes where those were filed and ranks that scenario's paths only,
    not a pool of near centroids where another task's best path tops the list
    (benchmarks/README.md, session 18).  10 was chosen on the tune split only (``benchmarks/procedural_replay.py
    --split tune``, ``TUNE_WORDINGS`` on seeds 101-112, never a reported seed): the drifted task's
    recommendation switched within 20 sessions and kept it on 5 of 12 seeds, against 1 of 12 pooling
    by centroids; clean runs slightly nearer the oracle (expected gap 0.049 against 0.056, seeds 104-112);
    the noise run explores more (0.228 against 0.196 below the oracle, seeds 101-103).
    The newest ``neighbour_window`` runs of the scope are scored; a request none of them is near falls
    back to the centroids.  ``None``: pool the scenarios whose centroids are near (the rule before)."""

    neighbour_window: int = 1000
    """How many of the scope's newest runs recall scores for ``recall_neighbours`` (their vectors are read
    and scored in the process: 2 KB each, on every engine)."""

    half_life: float | None = 12.0
    """Recency weighting: an outcome counts half once this many newer known outcomes of its scenario
    (any path) were recorded, a quarter after twice as many.  Ages run on the scenario's clock, not the
    path's, so a path nobody tries any more loses its old evidence too and is explored again, and a path
    that stopped working drops in rank within a few runs (issue 27's drift goal: the benchmark's drifted
    scenario switches within 20 sessions).  12 was chosen on the tune split only (benchmarks/procedural_tune.py
    policy: at 12 the drifted task switched after 8-12 sessions on every tune seed, 0.025 below the oracle
    when nothing drifts; at 5-8 exploration cost 5-18 points, at 20 drift took up to 22 sessions).
    ``None``: every outcome in the window counts fully."""

    recent_window: int = 60
    """Newest known outcomes of a scenario (all its paths together) that ranking and confidence read;
    at the default half-life the oldest of them weighs 1.6 %."""

    decline_p: float | None = 0.01
    """A path whose newest outcomes in the window are worse than its older ones with a one-sided p-value
    below this (Fisher's exact test, the smallest over every split of its outcomes:
    :func:`~adk_oceanbase.procedural.stats.decline_point`) is judged on its outcomes since that split only
    and served with ``getting_worse``: a path that broke loses the long evidence of its good past within
    a few failures, while a stable path's chance failures (one in ten: p = 1/11) change nothing.  At 0.01
    one failure is never a change within the 60-outcome window (its p-value is at least 1/61); two after 20
    successes are (p = 1/231).  0.01 was chosen on the tune split only (``benchmarks/procedural_replay.py
    --split tune``, seeds 101-112, paired with the rule off; benchmarks/README.md, session 19): the drifted
    task's recommendation switched within 20 sessions and kept it on 6 of 12 seeds against 5 (on 5 of 12
    against 4 on seeds 113-124), clean and noise runs within 0.1 point of the rule off; 0.002 never fired
    outside the drift and followed on 4 of 12.  ``None``: every outcome in the window counts (the rule before)."""

    split_p: float | None = 0.01
    """Undoes wrong joins: after a run is filed, its scenario's newest ``split_window`` runs are grouped into
    wording clusters (cosine ``split_link``), and a group of clusters that runs paths the rest of the scenario
    never ran (fewer than ``merge_overlap`` of its runs on paths the rest ran with outcomes that do not differ
    at Fisher p below this) is moved out, with its statistics and vectors, to the near scenario it agrees
    with or a new one (:mod:`~adk_oceanbase.procedural.splitting`).  Two scenarios whose outcomes on a shared
    path differ at p below this are never merged, so a split stays split.  Why: a wording nearer another
    task's centroid than its own is joined there while both are young, and neither the join by path nor the
    merges could undo it (seed 11's two order-number tasks in one scenario).  0.01 was chosen on the tune
    split only (``benchmarks/procedural_replay.py --split tune --split-p``, seeds 101-112, paired with the
    rule off; benchmarks/README.md, session 20, procsplit): purity 0.961 -> 0.988 on the clean run (higher
    on 7 seeds, lower on none), 0.946 -> 0.992 with noise, no scenario of one task split (0 of 37 splits);
    clean gap -0.7 point, expected gap -0.3; noise gap +0.0; drift followed within 20 sessions on 6 of 12
    against 5 (drift expected gap +0.7, se 0.8); on fresh tune seeds 125-136 the clean expected gap -1.9
    points (se 0.8, 1 seed of 12 worse).
    ``None``: runs stay where they were filed (the rule before)."""

    split_link: float = 0.8
    """Cosine that links two runs' requests into one wording cluster (single link).  MiniLM, the benchmark's
    tune tasks: one wording with another order number at median 0.88; two tasks at most 0.69."""

    split_min_runs: int = 5
    """Runs a wording cluster needs to take part in a split, and known outcomes each side needs on a path
    before a difference there counts (a handful of runs cannot tell a task apart from luck)."""

    split_window: int = 200
    """How many of the scenario's newest runs the split check reads (vectors: 2 kB each, under the scope's
    lock, once per filed run).  The benchmark's scenarios hold 50-100 runs; older runs of a split-off
    wording stay where they are (they age out of the recent-outcome window recall ranks on)."""

    min_samples: int = 3
    """Known outcomes a path needs before it is served as advice (seed 000 A.1.7: no single-sample memories)."""

    min_confidence: float = 0.3
    """Wilson lower bound a path needs to be served as one that worked."""

    z: float = 1.96
    """The Wilson interval's z (1.96: ~95 %)."""

    def __post_init__(self) -> None:
        if self.scope not in ("app", "user"):
            raise ConfigurationError(f"ProceduralSettings.scope is 'app' or 'user', not {self.scope!r}")
        if not isinstance(self.outcome_key, str) or not self.outcome_key:
            raise ConfigurationError("ProceduralSettings.outcome_key must be a non-empty string")
        if not 0.0 < self.similarity <= 1.0:
            raise ConfigurationError("ProceduralSettings.similarity must be in (0, 1]")
        if self.merge_similarity is not None and not 0.0 < self.merge_similarity <= 1.0:
            raise ConfigurationError("ProceduralSettings.merge_similarity must be in (0, 1] or None")
        if self.merge_agreement is not None and (isinstance(self.merge_agreement, bool)
                                                 or not 0.0 <= self.merge_agreement <= 1.0):
            raise ConfigurationError("ProceduralSettings.merge_agreement must be in [0, 1] or None")
        if self.path_similarity is not None and (isinstance(self.path_similarity, bool)
                                                 or not 0.0 < self.path_similarity <= 1.0):
            raise ConfigurationError("ProceduralSettings.path_similarity must be in (0, 1] or None")
        if not 0.0 < self.merge_overlap <= 1.0:
            raise ConfigurationError("ProceduralSettings.merge_overlap must be in (0, 1]")
        if self.pool_similarity is not None and not 0.0 < self.pool_similarity <= 1.0:
            raise ConfigurationError("ProceduralSettings.pool_similarity must be in (0, 1] or None")
        if self.recall_neighbours is not None and (isinstance(self.recall_neighbours, bool)
                                                   or not isinstance(self.recall_neighbours, int)
                                                   or self.recall_neighbours < 1):
            raise ConfigurationError("ProceduralSettings.recall_neighbours must be a positive integer or None")
        for name in ("recent_window", "min_samples", "neighbour_window"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"ProceduralSettings.{name} must be a positive integer, got {value!r}")
        if self.half_life is not None and (isinstance(self.half_life, bool) or not self.half_life > 0):
            raise ConfigurationError(f"ProceduralSettings.half_life must be positive or None, got {self.half_life!r}")
        if self.decline_p is not None and (isinstance(self.decline_p, bool) or not 0.0 < self.decline_p < 1.0):
            raise ConfigurationError(f"ProceduralSettings.decline_p must be in (0, 1) or None, got {self.decline_p!r}")
        if self.split_p is not None and (isinstance(self.split_p, bool) or not 0.0 < self.split_p < 1.0):
            raise ConfigurationError(f"ProceduralSettings.split_p must be in (0, 1) or None, got {self.split_p!r}")
        if isinstance(self.split_link, bool) or not 0.0 < self.split_link <= 1.0:
            raise ConfigurationError(f"ProceduralSettings.split_link must be in (0, 1], got {self.split_link!r}")
        for name in ("split_min_runs", "split_window"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 2:
                raise ConfigurationError(f"ProceduralSettings.{name} must be an integer of at least 2, got {value!r}")
        if not 0.0 <= self.min_confidence <= 1.0 or not self.z > 0:
            raise ConfigurationError("ProceduralSettings.min_confidence must be in [0, 1] and z positive")
