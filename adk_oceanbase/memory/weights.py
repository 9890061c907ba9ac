"""The score weights of memory search (``ScoreWeights``) and how they were measured.

Defaults are measured (benchmarks/README.md, "retrieval.py"); the latest retunes
(context signal, stemming, author names out of the full-text query; then the
version signal and its three knobs) are in each field's docstring.  Commands::

    HF_HUB_OFFLINE=1 python benchmarks/retrieval.py --locomo locomo10.json --conversations 3 --grid
    HF_HUB_OFFLINE=1 python benchmarks/retrieval.py --systems dense,ours --seed 7 --ours vsim=0.6,vband=0.1
    HF_HUB_OFFLINE=1 python benchmarks/retrieval.py --locomo locomo10.json --conversations 10 --out ...

On LoCoMo (3 conversations, categories 1-4, R@10; same run: dense 0.483,
rank-bm25 0.527, 0.7*cos + 0.3*BM25 0.622) our seekdb full-text alone scored
0.448 -> 0.509 with query stopwords dropped; fused 0.6/0.4 0.591, pool 200
0.599; recency costs LoCoMo at short half-lives (0.2 at 30 days: 0.521) and
is what the knowledge-update set needs; frequency does not touch LoCoMo (no
access history) and lifts the knowledge-update frequency subset 0.20 -> 0.83.
RRF (0.555) and min-max (0.589) fusion did not beat linear.  The --grid rule
(best LoCoMo R@10 among settings with knowledge-update R@1 >= dense + 0.20)
picked 0.7/0.3, recency 0.2 @ 365 days, frequency 0.3, pool 200: LoCoMo 0.598,
knowledge-update 0.389 vs dense 0.178 (first round; then 0.5/0.5 + context + version:
LoCoMo 0.701, knowledge-update 0.456; since 2026-11-23 0.6/0.4 with the ``gap`` context signal,
chosen with LongMemEval's tune half beside the LoCoMo / knowledge-update tune splits).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ScoreWeights"]


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the eight signals in ``score = Σ w_i * signal_i`` (each signal is in [0, 1], semantic in [-1, 1])."""

    semantic: float = 0.6
    """Cosine similarity ``1 - cosine_distance`` between query and memory embedding.

    0.6 / 0.4 (with ``context_mode="gap"``, context 0.5), chosen 2026-11-23 on the tune sets by
    ``retrieval.py --gate-replay ... --longmemeval`` (rule ``benchmarks/_tune.choose_ranking``): LoCoMo
    tune R@10 0.746 -> 0.758, knowledge-update tune R@1 0.528 -> 0.542, LongMemEval tune turn nDCG@10
    0.658 -> 0.687 against the previous 0.5 / 0.5, context 0.7 ``best``; 0.65 / 0.35 cost
    knowledge-update R@1 (0.522)."""

    fulltext: float = 0.4
    """Full-text relevance (BM25 over the user's own terms, ``memory.postings``) divided by the best
    full-text score among the candidates.  (Before revision 0012: ``MATCH ... AGAINST``.)

    With stemming and author names out of the query the full-text half got strong enough that an
    even split beats 0.7/0.3 with the context signal on (10 conversations: 0.699 vs 0.694)."""

    recency: float = 0.2
    """``exp(-ln2 * age / half_life)``, age from the newest candidate (``recency_reference``): 1 for it, 0.5 one half-life older.

    Measured (--grid, 3 conversations, 0.7/0.3, 365-day half-life): recency 0 / 0.1 / 0.2 / 0.3 gave
    LoCoMo R@10 0.583 / 0.595 / 0.598 / 0.582 and knowledge-update R@1 0.367 / 0.356 / 0.389 / 0.411."""

    frequency: float = 0.3
    """``min(1, ln(1 + access_count) / ln(1 + frequency_norm_count))``: how often search returned it.

    Measured: 0.05 -> 0.3 lifted the knowledge-update frequency subset R@1 0.20 -> 0.83 (0.6: no further gain);
    it cannot move LoCoMo, which has no access history.  Heavier weights risk rich-get-richer loops."""

    importance: float = 0.05
    """The stored ``importance_score`` (0.5 unless an LLM extractor or the caller set one)."""

    author: float = 0.3
    """1 for a memory by the author the question asks about (``memory.asker``): the user's own words
    for "what mileage does my hybrid get?", the agent's for "the museum you recommended"; 0 for
    every memory when the question has no such cue.  Like recency, frequency and importance it is
    a tie-breaker between relevant memories (the relevance gate's margin applies to it).

    0.3 since 2026-11-24, chosen on two LongMemEval tune halves (the cue replayed on their captured
    candidates): the s set's (72 questions, ~500 turns each) and the oracle set's (235 questions,
    their evidence sessions only).  Turn nDCG@10 for 0.2 / 0.25 / 0.3 / 0.4: s 0.794 / 0.796 /
    0.796 / 0.798, oracle 0.795 / 0.804 / 0.807 / 0.810 (0 gave 0.713 and 0.705); rule: the smallest
    weight within 0.005 of the best on both (a signal enters as lightly as the data allows).  0.2,
    chosen on the s tune half alone the day before, was 0.015 short on the oracle's.  No LoCoMo or
    knowledge-update question has a cue (third person), so both are unchanged by construction."""

    context: float = 0.5
    """What the memory's session neighbours (``context_window`` turns either side, candidates only) add:
    with ``MemorySettings.context_mode="gap"`` (the default) how far the best neighbour's
    ``semantic * w_sem + fulltext * w_ft`` exceeds the memory's own; the answer to a question is often
    the turn next to the best match.  Only turn memories have neighbours (``turn_pos``).

    0.5 with ``gap`` since 2026-11-23 (see ``semantic``; tune split: gap 0.5 / 0.6 / 0.7 gave LoCoMo
    R@10 0.758 / 0.759 / 0.755 and LongMemEval turn nDCG@10 0.687 / 0.687 / 0.677 at 0.6 / 0.4).
    Earlier, with ``best`` (the neighbour's whole relevance added):

    Measured (--grid, LoCoMo 10 conversations, R@10, 0.5/0.5): context 0 / 0.3 / 0.5 / 0.7 gave
    0.622 / 0.678 / 0.697 / 0.699 (window 2); window 3: 0.678 / 0.693 / 0.690."""

    version: float = 0.5
    """The full-text signal a *fact* borrows from a version of itself: ``max(0, best - own)`` over the
    other facts near it (cosine >= ``version_similarity``) that the query sees about equally
    (``version_band``).  Equal to ``fulltext`` (as until 2026-11-23; now 0.5 against 0.4, kept
    because the tune grid that moved ``fulltext`` left it), a version's word match counts as the fact's own; its semantic similarity stays its own, and recency / frequency pick the version.

    A newer fact rarely repeats the old one's words ("Alice lives in Lisbon" -> "Alice moved to
    Denver"), so for "Which city does Alice live in?" full-text crowned the outdated fact.  Dialogue
    turns (records of what was said when) neither lend nor borrow.  Measured (knowledge-update R@1,
    seeds 7/1/2/3; dense 0.178/0.211/0.167/0.189): 0 -> 0.311/0.311/0.300/0.333, 0.5 ->
    0.456/0.544/0.511/0.489; LoCoMo (turns only) unchanged at 0.701 (benchmarks/README.md)."""
