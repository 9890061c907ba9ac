"""Frozen settings of the memory service: retrieval knobs, ingest policy, vectorizer; weights in :mod:`.weights`.

Defaults are measured (benchmarks/README.md, "retrieval.py"); each field's
docstring gives its numbers and the command that measured them, and
:mod:`.weights` the history of the score weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigurationError
from .poisoning import InstructionDetector, PatternDetector
from .weights import ScoreWeights

__all__ = ["MemorySettings", "ScoreWeights"]


@dataclass(frozen=True)
class MemorySettings:
    """Everything that shapes ingest and retrieval; pass ``settings=`` to the service.

    Example:
        >>> s = MemorySettings(top_k=5, weights=ScoreWeights(recency=0.3))
        >>> s.weights.semantic
        0.6
    """

    # ------------------------------------------------------------ retrieval
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    """Signal weights used when a search passes none."""

    recency_half_life_s: float = 365 * 86400.0
    """Age gap (seconds, ``created_at`` vs the reference) at which the recency signal is 0.5.

    Measured at recency 0.2 (0.7/0.3): 90 days LoCoMo 0.540 / knowledge-update 0.378, 180 days
    0.583 / 0.411, 365 days 0.598 / 0.389 (LoCoMo conversations span months: short half-lives bury
    early sessions)."""

    recency_reference: Literal["newest", "now"] = "newest"
    """What age is measured from: ``newest`` = the newest candidate of this search (capped at ``now``),
    which gets 1.0; ``now`` = the search's clock (absolute age).

    ``newest`` keeps recency discriminative when every memory is older than a few half-lives
    (with ``now`` all get ~0; see tests/test_memory_ranking.py).  On the benchmarks the newest
    candidate is ~the asking time, so both score the same there (LoCoMo 0.581, KU 0.400)."""

    frequency_norm_count: int = 100
    """Access count at which the frequency signal saturates at 1."""

    top_k: int = 10
    """Memories returned by ``search_memory`` (and by ``search`` without ``top_k``)."""

    min_score: float | None = None
    """Memories scoring below this are dropped; ``None`` keeps everything in the top k."""

    fulltext_stopwords: bool = True
    """Drop English function words ("when", "did", "the", ...) from the full-text query (not the index).

    OceanBase's BM25 gives every matched term a positive weight, so function words pulled short
    unrelated turns up: full-text-only LoCoMo R@10 0.448 -> 0.509, fused 0.563 -> 0.581 (0.7/0.3)."""

    fulltext_drop_authors: bool = True
    """Leave the user's single-word author names out of the full-text query (the vector still sees them).

    Every turn's ``search_text`` starts with its author ("Caroline: ..."), so in a user's own rows a
    name is as common as "the"; OceanBase's BM25 statistics covered all users' rows, where a name
    is rare, and "What did Caroline paint?" ranked every Caroline turn by her name.  Since revision
    0012 the statistics are the user's own (the name's idf is floored there), so this matters less;
    not re-measured.  LoCoMo (10
    conversations in one table, numpy replica of table-wide BM25, 0.7/0.3): R@10 0.619 -> 0.648.
    Authors are cached per user for ``author_cache_s``."""

    author_cache_s: float = 300.0
    """How long a user's author names (``fulltext_drop_authors``) are cached; new authors ingested by
    this process are added at once."""

    fusion: Literal["linear", "minmax", "rrf"] = "linear"
    """How the semantic and full-text signals are put on one scale before weighting.

    ``linear``: raw cosine and ``fts / max(fts)`` (the issue's fusion baseline);
    ``minmax``: cosine min-max scaled over the candidates, ``fts / max(fts)``;
    ``rrf``: reciprocal rank ``(k+1) / (k + rank)`` in each list (1 for each list's best).
    """

    rrf_k: float = 60.0
    """The ``k`` of reciprocal-rank fusion (``fusion="rrf"``)."""

    context_window: int = 2
    """Turn positions on each side that count as neighbours for the context signal (0 turns it off).

    2 rather than 1: trivial turns ("ok", "thanks") are not stored but keep their positions."""

    context_mode: Literal["best", "gap"] = "gap"
    """What the context signal is: ``gap`` = only what the best neighbour's relevance has beyond the
    turn's own, ``max(0, best - max(own, 0))`` (the version signal's rule); ``best`` = the best
    neighbour's relevance itself (before 2026-11-23).

    Why: with ``best`` a turn's own relevance counted again through every neighbour, so one strong
    session lifted all of its turns together.  On LongMemEval (long, self-contained turns) the top 10
    held 2.5 sessions on average against 3.8 without context, and the evidence turn sat below its own
    session's neighbours (tune half, 48 questions: turn nDCG@10 0.658 with context vs 0.701 without).
    With ``gap`` the strongest turn of a neighbourhood borrows nothing and a weaker one never rises
    above the turn it borrows from, so a reply that only its question matches still rises (LoCoMo)
    while a session's other turns no longer crowd out other sessions."""

    context_full_chars: int | None = 800
    """Turns of up to this many characters borrow their whole context signal; a longer one borrows
    ``context * context_full_chars / its length`` (``CHAR_LENGTH(content)``).  ``None``: every turn
    borrows it whole (before 2026-11-23).

    Why: context is for turns whose meaning is in their neighbours ("Yes, every morning" after "Did
    you try the tarts?"); a long turn says what it is about itself.  On LongMemEval (turns p50 425,
    p90 2,500 characters; LoCoMo p50 149, p90 273) the gap signal still let the weaker turns of a
    strong session crowd other sessions out of the ten (tune half, 48 questions: multi-session turn
    nDCG@10 0.637 with context vs 0.690 without, session R@10 0.812 vs 0.969), while LoCoMo needs
    context (tune R@10 0.758 vs 0.668).  Chosen by ``benchmarks/_tune.choose_ranking`` on every tune
    set (``retrieval.py --gate-replay ... --longmemeval``, results/retrieval-replay-2026-11-23-lme-
    context-chars.json): LongMemEval tune turn nDCG@10 0.687 -> 0.710, session R@10 0.941 -> 0.969,
    multi-session 0.637 -> 0.689; LoCoMo tune R@10 and knowledge-update tune R@1 unchanged (0.758 /
    0.542).  200 / 300 / 400 / 600 / 1000 characters: LongMemEval 0.703 / 0.703 / 0.709 / 0.709 /
    0.705 (400-800 is a plateau)."""

    context_long_lends_less: bool = True
    """A neighbour longer than ``context_full_chars`` lends ``its relevance * context_full_chars / its
    length`` to the turns beside it, as it borrows; ``False``: it lends its whole relevance (before
    2026-11-25).  No effect with ``context_full_chars=None``.

    Why: a long turn's match says what *it* is about, not what the short turn beside it means.  A
    one-line request ("any tips for my trip?") next to a 2,000-character answer borrowed most of the
    answer's match and rose above other sessions' evidence.  LoCoMo and the knowledge-update set are
    unchanged by construction (no turn there reaches 800 characters; the longest LoCoMo tune turn
    has 438).  LongMemEval turn nDCG@10, ours minus the old lending, paired: tune halves +0.009
    (oracle, 235 questions) and +0.008 (s set, 72), both intervals above 0, so the rule (gain on both
    tune halves) keeps it; test halves -0.004 and -0.008, both intervals spanning 0 (preference
    questions lose): worth about nothing as measured.  benchmarks/README.md, "Results, 2026-11-25"."""

    version_similarity: float = 0.6
    """Cosine similarity between two facts' embeddings from which they may be versions of one fact.

    Versions of one fact sit at ~0.67 (p10 0.59), a person's unrelated facts at ~0.61 (MiniLM, dated
    texts), so this alone cannot tell them apart; ``version_band`` does the rest.  Measured (seekdb,
    knowledge-update R@1, mean of seeds 7/1/2/3): 0.5 -> 0.522, 0.6 -> 0.500, 0.7 -> 0.394; 0.6
    because at 0.5 most of a person's facts qualify.  Calibrated on MiniLM: re-check for other models."""

    version_band: float = 0.1
    """How much closer to the query (raw cosine) a fact's version may be and still lend it its match.

    Versions answer the same question, so the query sees them about equally.  Measured (as above):
    0.05 -> 0.445, 0.1 -> 0.500, 0.15 -> 0.478, unbounded -> 0.411 (the frequency subset falls
    0.85 -> 0.65: every fact of the person borrows and the newest wins)."""

    version_pool: int = 20
    """Best-relevance fact candidates compared pairwise for the version signal (20 -> at most 190 pairs).

    Measured (as above): 10 -> 0.506, 20 and 40 -> 0.500."""

    relevance_min_similarity: float | None = None
    """Relevance gate (``memory/relevance.py``): a memory may be returned only if its raw cosine
    similarity to the query reaches this, or its lexical evidence reaches ``relevance_min_lexical``
    (or, with ``relevance_gate_neighbours``, it is a session neighbour of such a memory, or, with
    ``relevance_fill_margin``, it is about as relevant as one).  When no memory has such evidence
    the search returns nothing, so ``preload_memory`` hands the model no unrelated memories.
    ``None`` for both floors turns the gate off (the default): every search returns ``top_k``.

    Recommended when enabling it: 0.76 / lexical 0.15 / ``relevance_fill_margin`` 1.0, chosen on
    the tune split (LoCoMo conversations 1-5, knowledge-update seeds 0-3; ``retrieval.py
    --gate-replay default``, rule in ``benchmarks/_tune.py``): clean abstention on 47% of the
    unanswerable questions at no loss (LoCoMo R@10 0.746, knowledge-update R@1 0.528, both as with
    the gate off); ``ours-gate`` in benchmarks/README.md for the test split.  Off by default because
    it also silences semantic-only matches: a memory sharing no weighted word with the query must
    reach cosine 0.76, and paraphrases sit far lower (MiniLM: "which novel does he like?" / "My
    favourite book is Dune" 0.51, "does the user have pets?" / "I adopted a golden retriever puppy"
    0.31; ``tests/test_memory_embedding.py``), while unanswerable questions' best cosine is p50 0.49,
    p90 0.66.  LoCoMo and the knowledge-update set almost always share a word with the answer, so
    they do not measure that loss.  The semantic floor matters little there: 0.65 abstains on 45%,
    0.55 on 41%, 0.85 on 47%.  Calibrated on MiniLM: re-check for other embedding models
    (HashEmbedder's cosines are far lower)."""

    relevance_min_lexical: float | None = None
    """Relevance gate: the lexical evidence floor, in [0, 1], on ``Signals.ft_cov``: the share of
    the query's IDF mass (per-user BM25 statistics, ``postings.bm25_ctes``) the memory's words
    match.  IDF-weighted, so a rare name is evidence and a word in half the memories is not.
    ``None``: lexical evidence never makes a memory eligible on its own.  Tune split, similarity
    0.76, fill 1.0: 0.12 -> 42% clean abstentions, 0.15 -> 47%, 0.17 -> 49% but knowledge-update
    R@1 0.528 -> 0.500 (questions answered by a fact that shares only the person's name with the
    question), 0.25 -> 64% and LoCoMo R@10 0.746 -> 0.736."""

    relevance_gate_neighbours: bool = True
    """Relevance gate: a memory within ``context_window`` turns of an eligible memory of the same
    session is eligible too (the answer is often the turn after the matching question)."""

    relevance_fill_margin: float | None = None
    """Relevance gate: once a memory has evidence of its own, memories whose relevance (weighted
    semantic + full-text + context + version) is within this of the best such memory's are
    eligible too.  The floors then decide whether a query has an answer at all, this how much
    comes with it.  ``None``: only memories with evidence (and their neighbours) are returned.
    Tune split at similarity 0.76 / lexical 0.15: LoCoMo R@10 0.743 without, 0.746 with 1.0
    (as with the gate off: the answer is often a turn with little evidence of its own)."""

    relevance_margin: float | None = None
    """Recency, frequency and importance count only for memories whose relevance (weighted semantic
    + full-text + context + version) is within this of the best eligible memory's.  They then pick
    among near-equally relevant memories and cannot lift a weak match above a strong one.
    ``None``: they count for every candidate (as before the gate).  Tune split: 0.1 / 0.2 / 0.3
    gave LoCoMo R@10 0.723 (off: 0.724) and knowledge-update R@1 0.528 / 0.525 / 0.525 (off:
    0.525): neutral there; it is meant for long single-topic histories (issue #13), not measured
    here."""

    candidate_pool: int = 200
    """Candidates taken from each of the vector and full-text lists before the final scoring (the
    HNSW index's list takes ``ann_pool``).

    Measured (LoCoMo R@10, 0.6/0.4): 100 -> 0.591, 200 -> 0.599, 300 -> 0.598."""

    ann_pool: int | None = 100
    """Depth of the vector candidate list where it comes from the HNSW index (big users, see
    ``vector_search``); the exact scan and the full-text list keep ``candidate_pool``.  ``None``:
    ``candidate_pool`` there too.  A search for more than ``ann_pool`` hits takes as many (``top_k``).
    The service's ``ob_hnsw_ef_search`` is at least the list's depth.

    Why 100: at 100k memories in one user, the statement's cost grows with its candidates (each
    HNSW row is a graph step, a row lookup, a cosine and a row of the window functions): p50 / p95
    22.9 / 24.7 -> 19.8 / 21.6 ms (synthetic text) and 17.7 / 25.2 -> 15.2 / 21.7 ms (LoCoMo text),
    interleaved (11-15% in two more runs), while the top 10 equalled the exact vector scan's (200
    candidates) in all 100 queries of each (``benchmarks/_scale.py``'s agreement, results/retrieval-
    scale-2026-11-23-single-annpool*.json).  The full-text list is what the top 10 needs deep: cutting
    it to 100 as well changed 2.9% of the synthetic top-10 entries (0.4% on LoCoMo text)."""

    vector_search: Literal["auto", "ann", "exact"] = "auto"
    """``ann`` uses the HNSW index (``APPROXIMATE``); ``exact`` scans the user's rows (a primary-key
    range scan on ``(app_name, user_id)``); ``auto`` scans exactly for users with fewer than
    ``exact_scan_rows`` memories and uses the index for bigger ones.

    Why ``auto``: seekdb 1.4 runs the tenant-filtered ``APPROXIMATE`` search as ``VECTOR INDEX
    ADAPTIVE SCAN (PRE-FILTER)`` unless the user owns most of the table, and that was slower than
    the exact scan at every user size up to 20k (``benchmarks/vector_user_sizes.py``, 88k rows,
    LIMIT 200, p50 ANN vs exact: 5k rows 97 vs 8 ms on the index grown row by row, 40 vs 13 ms
    rebuilt; 20k rows 618 vs 47, 65 vs 16 ms); at 50k rows (57% of the table) they were even.
    The exact scan is exact by construction, whatever state the index is in."""

    exact_scan_rows: int = 20_000
    """``vector_search="auto"``: users with fewer memories than this are scanned exactly.  Counted with
    a capped COUNT, cached with the author names (``author_cache_s``)."""

    ann_owner_share: float | None = 0.5
    """``vector_search="auto"``: a user below ``exact_scan_rows`` who owns this share of the table (and
    ``ann_owner_min_rows`` rows) takes the HNSW index, post-filtered (``search_sql.hybrid_search``'s
    ``ann_post_filter``); ``None``: size alone decides.  Table rows counted capped (``rows / share``),
    cached with the profile.  Why: the crossover above is for users in a shared table; one owner of a
    10k-row table (one store pool, one Agno user), the statement p50, interleaved, 2 vCPU at load 23-38:
    rows not yet compacted 669 ms exact vs 232 post-filtered HNSW, compacted 92 vs 98 (unhinted HNSW
    222); the same top 10 in every query (benchmarks/README.md, "Store search")."""

    ann_owner_min_rows: int = 2_000
    """Below this many memories a user is scanned exactly whatever its share (not tuned: a small scan)."""

    fulltext_overfetch: int | None = 2
    """Big users' full-text candidates are scored from the postings alone (``memory.postings``, the
    postings-first form): the best ``candidate_pool x fulltext_overfetch`` matches are cut before their
    rows are checked for liveness; ``None`` always checks every matching row first.

    Why: the row check cost one lookup per matching posting, 75-120 ms for one user holding 100k
    memories (query terms in 12% of them each), against 15-18 ms postings-first, with identical
    candidates on that data (``benchmarks/_scale.py``).  What it gives up: when more than half of the
    over-fetched matches are out of scope (superseded, tainted, doubtful), fewer than
    ``candidate_pool`` full-text candidates remain; scores never change.  Searches with caller
    filters (``SearchFilters``) always check rows first, since a filter can exclude any share."""

    fulltext_overfetch_rows: int = 5_000
    """Users with at least this many memories get the postings-first form (``fulltext_overfetch``);
    smaller users' row checks cost little.  Counted with ``exact_scan_rows``'s capped count.

    On OceanBase only where the vector candidates come from the HNSW index: next to the exact vector
    scan, planning the postings-first statement took 0.5 s at 12 query terms and 2.4 s at 25 (once
    per statement shape; the row-first one 45 ms), and without a query vector (embedder down) 25
    terms exceeded a 1 GB server's query memory; with the index, 40 terms plan in ~0.1 s."""

    fulltext_statistics: str = "variables"
    """Where the postings-first form (OceanBase) gets its BM25 statistics: ``"variables"``, a statement
    just before the search sets them into session variables (``postings.bm25_statistics``; same round
    trip, one REPEATABLE READ snapshot); ``"inline"``, CTEs of the search statement itself.

    Why variables: as CTEs, seekdb evaluated each term's weight as an expression on every posting; as
    variables they are constants.  One user with 100k memories, synthetic text: hybrid search p50 / p95
    20.1 / 22.5 vs 23.0 / 26.5 ms inline, identical hits, scores and coverage (benchmarks/README.md,
    session 9).  ``"inline"`` is the
    baseline the benchmark runs beside it, and a way out where session variables are not kept
    between statements (a proxy that does not carry session state; the query vector needs them too)."""

    ef_search: int | None = None
    """``ob_hnsw_ef_search`` floor for ANN searches; the service always uses at least the list's depth
    (``ann_pool``, else ``candidate_pool``)
    (an ef below the candidate LIMIT made the filtered HNSW scan repeat itself: 88 ms vs 12 ms at 100k)."""

    scoring: Literal["auto", "sql", "numpy"] = "auto"
    """Where the score is computed: ``sql`` (OceanBase/seekdb), ``numpy`` (MySQL), ``auto`` picks by engine."""

    numpy_scan_limit: int = 50_000
    """Numpy path: newest rows of the user fetched for scoring (the SQL prefilter's bound)."""

    bump_access: bool = True
    """After a search, add 1 to ``access_count`` and set ``last_accessed_at`` of returned rows (one UPDATE)."""

    search_memory_top_k: int | None = None
    """How many memories ADK's path (``search_memory``: ``load_memory`` / ``preload_memory`` tools) returns;
    ``None`` means ``top_k``.  Each one lands in the model's prompt, so agents often want fewer than a search."""

    search_memory_counts_access: bool | None = None
    """Whether ADK's ``search_memory`` counts as an access (frequency signal, ``last_accessed_at``);
    ``None`` means ``bump_access``.  ``preload_memory`` searches on every turn, so every preloaded memory
    gains frequency whether or not the model used it: evaluations and some agents turn this off."""

    include_superseded: bool = False
    """Return memories an LLM extractor marked as superseded by a newer fact."""

    min_confidence: float = 0.5
    """Memories whose ``confidence`` is below this are never returned by search, so never injected (seed 000
    A.1.7); neither are memories marked tainted (``mark_tainted``).  Turns and memories added without a
    confidence have 1.0, so the default hides only what an extractor or caller rated as doubtful."""

    max_hits_per_session: int | None = 8
    """Diversity cap (seed 000 A.1.7, "require N independent sessions"): at most this many hits of one
    source session come before the hits of other sessions; the rest follow them in score order, so a
    user with one session sees the plain ranking.  150 near-identical lines said in one session cannot
    push a fact from another session out of the top 10.  Memories without a session are not capped.
    ``None``: off.  Applies to both search paths (``search_sql.hybrid_search``, ``scoring.rank_rows``).

    A LoCoMo answer's turns often sit together in one session (the context signal ranks neighbours up),
    so the cap only bites beyond most of the top 10: tune split (``retrieval.py --tune-grid
    "scap=-1;scap=3;...;scap=8"``, 2026-11-25) LoCoMo R@10 off 0.758, cap 3 0.676, 5 0.742, 6 0.748,
    7 0.755, 8 0.757 (one question of 760); knowledge-update R@1 0.489 for every value."""

    # --------------------------------------------------------------- ingest
    instruction_detector: "InstructionDetector | None" = field(default_factory=PatternDetector)
    """Ingest guard (``memory.poisoning``): a memory whose text it flags ("Ignore all previous
    instructions", "SYSTEM PROMPT OVERRIDE", role tags such as ``<|system|>`` or ``[INST]``, their
    Chinese forms, tool-call JSON) is stored tainted with the reason in
    ``custom_metadata["tainted_reason"]``, so it is never returned nor injected.  Any callable
    ``text -> reason | None``; ``PatternDetector().extended({...})`` adds rules; ``None``: off."""

    privileged_authors: tuple[str, ...] = ("system", "developer")
    """Authors no caller may claim: ``add_memory`` refuses them (``PrivilegedAuthorError``) and an
    ingested turn by such an author is stored tainted.  Trusted memories carry the user's or an
    agent's name; ``()`` turns the check off."""

    memory_authors: tuple[str, ...] | None = None
    """Authors whose turns become memories; ``None`` means everyone (user and agents)."""

    min_turn_chars: int = 8
    """Turns shorter than this (CJK characters count 3) are not remembered."""

    max_content_chars: int = 20_000
    """Longest memory content: ``add_memory`` refuses longer text (``MemoryTooLongError``: split it
    yourself); turns and facts ingested from events are cut there, on a word boundary (the session
    log keeps the whole turn).

    Full-text indexing grows faster than the text: add_memory on seekdb (2 vCPU) took 46 ms at
    20,000 characters, 0.22 s at 50,000, 0.8 s at 100,000, 6.1 s at 300,000; 150k words ran past
    the statement timeout.  A memory is recalled by a few sentences, not a document."""

    near_duplicate_similarity: float = 0.9
    """Cosine similarity at or above which a new fact is merged into an older one."""

    near_duplicate_min_overlap: float = 0.8
    """Word-set Jaccard the two facts' contents must also reach to merge (cosine alone merged
    different people's templated facts on the benchmark: "Ines/Tove grabbed coffee at Kaffeehaus")."""

    consolidate: bool = True
    """Merge near-duplicate *facts* (LLM-extracted or ``add_memory``) when rows get their vectors.

    Dialogue turns (``turn:*`` rows) are records, not facts: they are never
    near-duplicate merged (on LoCoMo that merged ~5% of turns, lost recall and
    cost one vector query per row at ingest).  Exact duplicates are always merged.
    """

    # ------------------------------------------------------ index upkeep
    index_upkeep_rows: int | None = 5_000
    """Every this many vectors the vectorizer stored, one background ``DBMS_VECTOR.REBUILD_INDEX`` check
    (OceanBase/seekdb; ``index_upkeep.IndexUpkeep``): the server rebuilds the HNSW index when the rows
    added since its last build exceed ``index_upkeep_delta_rate`` of the table, else returns at once.
    The same check gathers the table's optimizer statistics when the server has none or counts them
    stale (without them a big user's ANN search ran as an exact scan for its first ~30 executions).
    One at a time per process, bounded by ``index_upkeep_timeout_s``; ``None`` turns it off (the server
    then rebuilds on its own once a day and analyses the table on its own schedule)."""

    index_upkeep_delta_rate: float = 0.2
    """The server's ``delta_rate_threshold``: the fraction of new rows from which a check rebuilds."""

    index_upkeep_timeout_s: float = 900.0
    """Statement timeout of one rebuild (a full rebuild took 26 s at 29k rows, 64-122 s at 88-100k on 2 cores)."""

    # ----------------------------------------------------------- vectorizer
    queue_size: int = 1024
    """Memory ids waiting for embedding in process; beyond it rows stay ``pending`` and a sweep finds them."""

    batch_size: int = 32
    """Texts per embedding call."""

    batch_wait_s: float = 0.02
    """How long the worker waits to fill a batch after the first id arrives."""

    max_attempts: int = 4
    """Embedding calls per batch (one round) before the round counts as failed for its rows."""

    retry_base_s: float = 0.2
    """First retry delay; doubles per attempt."""

    max_row_attempts: int = 5
    """Failed rounds after which a row is marked ``failed`` and left alone (no sweep retries it);
    ``service.retry_failed_embeddings()`` puts such rows back.  Rounds are ``retry_interval_s`` apart,
    so the default rides out a few minutes of embedder outage but never loops on a row that cannot be embedded."""

    retry_interval_s: float = 60.0
    """How long a row whose round failed waits before the sweep gives it the next round."""

    claim_lease_s: float = 600.0
    """How long a vectorizer's claim on the rows it embeds holds.  Two processes never embed the same
    row; a claim older than this belongs to a process that died, and another vectorizer takes it over.
    Keep it above one round (``max_attempts`` calls plus their retry delays)."""

    close_timeout_s: float = 30.0
    """How long ``close()`` waits for queued rows to be embedded; what is left stays ``pending`` for the
    next process's sweep, so close returns in time even when the embedder hangs."""

    sweep_interval_s: float = 60.0
    """How often the worker looks for ``pending`` rows no queue entry covers and for expired claims."""

    background_start: bool = True
    """On first use, start loading the embedding model and the worker that embeds rows other
    processes left ``pending``/``failed``.  ``False`` leaves both to the first write, search or
    ``flush()``: the CLI's read and maintenance commands (``stats``, ``memory delete``) must not
    load a model or spend minutes embedding a backlog."""

    model_wait_s: float = 30.0
    """How long a search waits for an embedding model that is still loading (MiniLM: 8-15 s on a
    small CPU, started in the background on first use); past it the search runs without the
    semantic signal (full-text, recency, ... only) and logs a warning."""

    def __post_init__(self) -> None:
        for name, choices in (("context_mode", ("best", "gap")), ("fulltext_statistics", ("variables", "inline"))):
            if getattr(self, name) not in choices:
                raise ConfigurationError(f"{name} must be {' or '.join(map(repr, choices))}, got {getattr(self, name)!r}")
        for name, least, optional in (("context_full_chars", 1, True), ("fulltext_overfetch", 1, True),
                                      ("ann_pool", 1, True), ("fulltext_overfetch_rows", 0, False),
                                      ("ann_owner_min_rows", 0, False),
                                      ("max_hits_per_session", 1, True)):
            value = getattr(self, name)
            if optional and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigurationError(
                    f"{name} must be {'None or ' if optional else ''}an integer >= {least}, got {value!r}")
        share = self.ann_owner_share
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1):
            raise ConfigurationError(f"ann_owner_share must be None or a number in (0, 1], got {share!r}")

    def vector_pool(self, approximate: bool, top_k: int = 1) -> int:
        """Depth of the vector candidate list: ``ann_pool`` (at least ``top_k``, so that the list alone can
        fill a search) from the HNSW index, else ``candidate_pool``."""
        if approximate and self.ann_pool is not None:
            return max(self.ann_pool, top_k)
        return self.candidate_pool

    @property
    def frequency_norm(self) -> float:
        """``ln(1 + frequency_norm_count)``, the divisor of the frequency signal."""
        return math.log1p(max(self.frequency_norm_count, 1))
