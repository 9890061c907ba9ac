"""LongMemEval (``--longmemeval PATH``): session- and turn-level retrieval per question type.

LongMemEval (Wu et al., 2024; github.com/xiaowu0162/LongMemEval, MIT) is read
from the path given on the command line and never copied into the
repository.  ``longmemeval_s`` gives every question its own haystack of ~50
chat sessions (~500 turns); ``longmemeval_oracle`` only the evidence sessions.

Mapping (one question = one user, ``scope`` = ``question_id``):

* every haystack turn, user and assistant alike, is one memory; its id is
  ``"<session id>:<turn index>"``, its author the turn's ``role``, its time
  the session's ``haystack_dates`` entry (``"2023/05/20 (Sat) 02:21"``, taken
  as UTC) plus the turn index in seconds, so turns keep their order.  ``ours``
  receives each session as one ADK session through ``add_events_to_memory``,
  as LoCoMo's sessions are;
* the question is asked at its ``question_date`` (the replay clock of ``ours``);
* turn-level evidence: the turns with ``has_answer: true``; session-level
  evidence: ``answer_session_ids``.  A session is retrieved at rank r when one
  of its turns is; the ranked session list is the ranked turns' sessions,
  first occurrence kept (``session_ranking``).
* questions whose id ends in ``_abs`` are abstention questions (the asked
  fact is not in the haystack): scored with ``_metrics.abstention_metrics``
  against an empty relevant set, as the LoCoMo / knowledge-update abstention
  sets are.

Systems: every ``--systems`` entry as on LoCoMo (``benchmarks._systems.build_system``), the tuned
baselines' weights chosen on the tune questions.  ``ours-abstain``, the
diagnostic ``ours-relevance`` (semantic + full text only) and ``ours-previous``
(the ranking defaults before the latest change, ``retrieval.PREVIOUS_DEFAULTS``)
are search-time settings, measured on ``ours``' rows without a second ingest
(``OursSystem.use_settings``).  Ours' own settings are replayed on the tune half
only (``_lme_replay.py``).

Selection (``select_questions``): strata are the six question types plus
``abstention``; inside a stratum questions are ordered by the SHA-256 of their
id, and the first ``per_type`` are taken.  Split: even positions of that order
are *tune*, odd ones *test*, so a question's split does not depend on how many
are run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from benchmarks._metrics import abstention_metrics, dedupe, ndcg_at_k, recall_at_k

__all__ = [
    "ABSTENTION",
    "QUESTION_TYPES",
    "LmeQuestion",
    "LmeTurn",
    "lme_text",
    "load_longmemeval",
    "paired_bootstrap",
    "parse_lme_date",
    "question_metrics",
    "select_questions",
    "session_ranking",
    "split_of",
    "stratum",
]

QUESTION_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                  "multi-session", "knowledge-update", "temporal-reasoning")
ABSTENTION = "abstention"
KS = (5, 10)
BASELINES = ("adk-inmemory", "dense", "bm25", "fusion", "bm25-care", "fusion-tuned", "dense-recency")
"""The systems ``ours`` is compared with per group (``paired``: the one with the best mean there)."""
PER_QUESTION_METRICS = ("turn_nDCG@10", "turn_R@10", "clean")
"""What every system's result keeps per question (``per_question``), for paired comparisons."""


@dataclass(frozen=True)
class LmeTurn:
    turn_id: str  # "<session id>:<turn index>"
    session_id: str
    role: str
    content: str
    time: datetime  # UTC
    has_answer: bool


@dataclass
class LmeQuestion:
    question_id: str
    question_type: str
    question: str
    asked_at: datetime
    answer_sessions: tuple[str, ...]
    turns: list[LmeTurn]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def evidence_turns(self) -> tuple[str, ...]:
        return tuple(t.turn_id for t in self.turns if t.has_answer)


def parse_lme_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` -> that moment, taken as UTC."""
    day, _, rest = text.strip().partition(" (")
    clock = rest.partition(") ")[2] or "00:00"
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def lme_text(role: str, when: datetime, content: str) -> str:
    """The text every system ranks: the memory service's embedding layout (``"20 May 2023, user: ..."``).

    The same function the service embeds with (``memory.extraction.embedding_text``, content
    stripped and clipped as ``add_events_to_memory`` stores it), so the shared
    embedding cache serves ``ours`` and the baselines the same vectors.
    """
    from adk_oceanbase.memory.extraction import clip, embedding_text
    from adk_oceanbase.memory.settings import MemorySettings

    body = clip(content.strip(), MemorySettings().max_content_chars)
    return embedding_text(role, when.replace(tzinfo=None), body)


def stratum(question_id: str, question_type: str) -> str:
    return ABSTENTION if question_id.endswith("_abs") else question_type


def _order_key(question_id: str) -> str:
    return hashlib.sha256(question_id.encode("utf-8")).hexdigest()


def split_of(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{question_id: "tune" | "test"}`` from ``(question_id, question_type)`` pairs of the whole file."""
    by_stratum: dict[str, list[str]] = {}
    for qid, qtype in items:
        by_stratum.setdefault(stratum(qid, qtype), []).append(qid)
    out: dict[str, str] = {}
    for ids in by_stratum.values():
        for i, qid in enumerate(sorted(ids, key=_order_key)):
            out[qid] = "tune" if i % 2 == 0 else "test"
    return out


def select_questions(items: Iterable[tuple[str, str]], per_type: int | None,
                     strata: Iterable[str] | None = None) -> list[str]:
    """The first ``per_type`` question ids of every stratum in hash order (all when ``None``/0),
    interleaved round-robin across strata (so a prefix of the list is balanced too); only the
    ``strata`` named, when given (``"abstention"`` and/or question types)."""
    keep = set(strata) if strata else None
    by_stratum: dict[str, list[str]] = {}
    for qid, qtype in items:
        s = stratum(qid, qtype)
        if keep is None or s in keep:
            by_stratum.setdefault(s, []).append(qid)
    ordered = {s: sorted(ids, key=_order_key)[: per_type or None] for s, ids in sorted(by_stratum.items())}
    out: list[str] = []
    for i in range(max((len(v) for v in ordered.values()), default=0)):
        out.extend(v[i] for v in ordered.values() if i < len(v))
    return out


def _question(item: dict[str, Any]) -> LmeQuestion:
    turns: list[LmeTurn] = []
    for sid, date, session in zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"],
                                  strict=True):
        start = parse_lme_date(date)
        for i, t in enumerate(session):
            turns.append(LmeTurn(f"{sid}:{i}", sid, str(t["role"]), str(t["content"]),
                                 start + timedelta(seconds=i), bool(t.get("has_answer", False))))
    return LmeQuestion(str(item["question_id"]), str(item["question_type"]), str(item["question"]),
                       parse_lme_date(item["question_date"]), tuple(item.get("answer_session_ids") or ()), turns)


def load_longmemeval(path: str | Path, per_type: int | None = None, strata: Iterable[str] | None = None,
                     split_from: str | Path | None = None) -> tuple[list[LmeQuestion], dict[str, str], dict]:
    """Questions chosen by ``select_questions`` (in that order), every question's split, and load stats.

    ``split_from``: another LongMemEval file whose split the questions keep (those it lacks keep this
    file's).  Why: the split is by position in a stratum's hash order, so a file missing one question
    (this sandbox's ``longmemeval_s`` lacks one temporal-reasoning question) splits the questions after
    it the other way; the oracle set, read with the s file as ``split_from``, tunes and tests on the
    same questions as the s set, so choosing on one half never reads the other half of either."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    pairs = [(str(q["question_id"]), str(q["question_type"])) for q in data]
    known = set(QUESTION_TYPES) | {ABSTENTION}
    if strata and set(strata) - known:
        raise ValueError(f"unknown LongMemEval strata: {', '.join(sorted(set(strata) - known))}")
    wanted = select_questions(pairs, per_type, strata)
    by_id = {str(q["question_id"]): q for q in data}
    questions = [_question(by_id[qid]) for qid in wanted]
    per_stratum: dict[str, int] = {}
    for q in questions:
        s = stratum(q.question_id, q.question_type)
        per_stratum[s] = per_stratum.get(s, 0) + 1
    stats = {"file_questions": len(data), "questions": len(questions), "per_stratum": per_stratum,
             "turns": sum(len(q.turns) for q in questions),
             "evidence_turns": sum(len(q.evidence_turns) for q in questions)}
    splits = split_of(pairs)
    if split_from is not None:
        reference = json.loads(Path(split_from).read_text(encoding="utf-8"))
        splits.update(split_of((str(q["question_id"]), str(q["question_type"])) for q in reference))
        splits = {qid: splits[qid] for qid, _ in pairs}
    stats["split_from"] = str(split_from) if split_from is not None else None
    return questions, splits, stats


# ------------------------------------------------------------------ metrics
def session_ranking(ranked_turns: Sequence[str]) -> list[str]:
    """Sessions in the order their first turn appears in ``ranked_turns`` (ids ``"<session>:<i>"``)."""
    return dedupe(t.rsplit(":", 1)[0] for t in ranked_turns)


def question_metrics(q: LmeQuestion, ranked_turns: Sequence[str]) -> dict[str, float]:
    """Turn- and session-level metrics of one answered question (abstention metrics for ``_abs``).

    ``ranked_turns`` is what the system returned (at most top-k turn ids).
    Turn level: ``turn_R@k`` (share of evidence turns in the top k),
    ``turn_any@k`` (1 when at least one is), ``turn_nDCG@10``.  Session level:
    ``sess_R@k`` / ``sess_any@k`` / ``sess_nDCG@10`` over ``session_ranking``.
    """
    ranked = dedupe(ranked_turns)
    out = abstention_metrics(ranked, q.evidence_turns if not q.abstention else ())
    if q.abstention:
        return out
    turns, sessions = q.evidence_turns, q.answer_sessions
    for k in KS:  # a session is retrieved at k when one of its turns is in the top k turns
        for level, got, rel in (("turn", ranked[:k], turns), ("sess", session_ranking(ranked[:k]), sessions)):
            if rel:
                out[f"{level}_R@{k}"] = recall_at_k(got, rel, len(got))
                out[f"{level}_any@{k}"] = float(bool(set(rel) & set(got)))
    if turns:
        out["turn_nDCG@10"] = ndcg_at_k(ranked, turns, 10)
    if sessions:
        out["sess_nDCG@10"] = ndcg_at_k(session_ranking(ranked[:10]), sessions, 10)
    return out


# ------------------------------------------------------------------ running
def build_docs(questions: Sequence[LmeQuestion], embedder: Any) -> dict[str, list[Any]]:
    """``{question_id: [Doc, ...]}``: every haystack turn of every question, vectors from the shared cache."""
    from benchmarks._baselines import Doc

    docs: dict[str, list[Any]] = {}
    for q in questions:
        texts = [lme_text(t.role, t.time, t.content) for t in q.turns]
        vecs = embedder.embed(texts)
        docs[q.question_id] = [Doc(t.turn_id, text, t.content, t.role, t.time, v, session=t.session_id)
                               for t, text, v in zip(q.turns, texts, vecs)]
    return docs


def tuning_dataset(questions: Sequence[LmeQuestion], docs: dict[str, list[Any]], q_vecs: dict[str, Any]) -> Any:
    """The tune questions with evidence as a ``_dataset.Dataset`` (headline groups = the six types),
    the shape ``_baseline_tuning`` takes; relevant = evidence turns."""
    from benchmarks._dataset import Dataset, EvalQuery

    tuned = [q for q in questions if not q.abstention]
    queries = [EvalQuery(q.question_id, q.question, q.evidence_turns, q.question_type, q_vecs[q.question_id])
               for q in tuned]
    return Dataset("longmemeval:tune", {q.question_id: docs[q.question_id] for q in tuned}, queries, {},
                   QUESTION_TYPES, {q.question_id: q.asked_at for q in tuned})


def question_rows(q: LmeQuestion, split: str, ranked: Sequence[str]) -> list[tuple[str, dict[str, float]]]:
    """``(group, metrics)`` rows of one question: ``<split>:<stratum>``, plus ``<split>:overall`` for
    questions with evidence (every type, ``_abs`` left out)."""
    m = question_metrics(q, ranked)
    rows = [(f"{split}:{stratum(q.question_id, q.question_type)}", m)]
    if not q.abstention:
        rows.append((f"{split}:overall", m))
    return rows


async def evaluate_lme(system: Any, questions: Sequence[LmeQuestion], docs: dict[str, list[Any]],
                       q_vecs: dict[str, Any], splits: dict[str, str], top_k: int,
                       indexed: bool = False) -> dict[str, Any]:
    """Indexes every question's haystack into ``system`` (unless ``indexed``), asks every question once."""
    import time

    from benchmarks._metrics import aggregate, summarise_latencies

    index_s = 0.0
    if not indexed:
        if hasattr(system, "set_clock"):
            system.set_clock({q.question_id: q.asked_at for q in questions})
        t0 = time.perf_counter()
        for q in questions:
            await system.index(q.question_id, docs[q.question_id])
        if hasattr(system, "ready"):
            await system.ready()
        index_s = time.perf_counter() - t0
    rows: list[tuple[str, dict[str, float]]] = []
    lat: list[float] = []
    per_question: dict[str, dict[str, float]] = {}
    for q in questions:
        start = time.perf_counter()
        ranked = await system.search(q.question_id, q.question, q_vecs[q.question_id], top_k)
        lat.append(time.perf_counter() - start)
        q_rows = question_rows(q, splits[q.question_id], ranked[:top_k])
        rows.extend(q_rows)
        per_question[q.question_id] = {"group": q_rows[0][0], **{m: q_rows[0][1][m] for m in PER_QUESTION_METRICS
                                                                   if m in q_rows[0][1]}}
    return {"metrics": aggregate(rows), "latency": summarise_latencies(lat), "index_seconds": index_s,
            "per_question": per_question}


def ours_vs_best_baseline(systems: dict[str, Any], metric: str = "turn_nDCG@10") -> dict[str, dict[str, Any]]:
    """Per group with evidence: ``ours`` minus the baseline with the best mean there, with
    :func:`paired_bootstrap`'s interval."""
    if "ours" not in systems:
        return {}
    out = {}
    for group, m in systems["ours"]["metrics"].items():
        if group.endswith(ABSTENTION):
            continue
        present = [b for b in BASELINES if b in systems and group in systems[b]["metrics"]]
        if not present:
            continue
        best = max(present, key=lambda b: systems[b]["metrics"][group][metric])
        out[group] = {"baseline": best, **paired_bootstrap(systems["ours"]["per_question"],
                                                            systems[best]["per_question"], group, metric)}
    return out


def paired_bootstrap(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], group: str,
                     metric: str = "turn_nDCG@10", resamples: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Mean of ``a - b`` over the questions of ``group`` (``"test:knowledge-update"``; ``"<split>:overall"``
    = every question of the split with evidence) and its 95% percentile interval over ``resamples``
    resamples of those questions (paired: both systems on the same resampled questions).

    Why: a question type has 8-12 s-set questions per half here; one question moves a type's nDCG@10 by up
    to 0.12, so "ours is behind on type X" needs its interval beside it."""
    import numpy as np

    split, _, stratum_ = group.partition(":")
    ids = sorted(q for q, r in a.items() if q in b and metric in r and (
        r["group"] == group or (stratum_ == "overall" and r["group"].startswith(split + ":")
                                and not r["group"].endswith(ABSTENTION))))
    if not ids:
        return {"n": 0, "mean": float("nan"), "low": float("nan"), "high": float("nan")}
    diff = np.array([a[q][metric] - b[q][metric] for q in ids])
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"n": len(ids), "mean": float(diff.mean()), "low": float(low), "high": float(high)}


async def run_longmemeval(args: Any) -> dict[str, Any]:
    """``--longmemeval PATH``: every system on the selected questions; metrics per split and stratum."""
    from benchmarks._baseline_tuning import tune_dense_recency, tune_fusion
    from benchmarks._common import environment, seekdb_or_url
    from benchmarks._embed_cache import CachedEmbedder
    from benchmarks._systems import ABSTAIN_VARIANT, GATE_VARIANT, PACKAGES, PREVIOUS_DEFAULTS, build_system

    env = environment(PACKAGES)  # first: the commit and a clean tree as the run starts
    embedder = CachedEmbedder(Path(args.cache_dir) if args.cache_dir else None)
    strata = [t.strip() for t in (args.lme_types or "").split(",") if t.strip()]
    questions, splits, stats = load_longmemeval(args.longmemeval, args.lme_questions or None, strata or None,
                                                getattr(args, "lme_split_from", None))
    stats["per_split_stratum"] = {}
    for q in questions:
        key = f"{splits[q.question_id]}:{stratum(q.question_id, q.question_type)}"
        stats["per_split_stratum"][key] = stats["per_split_stratum"].get(key, 0) + 1
    docs = build_docs(questions, embedder)
    q_vecs = dict(zip((q.question_id for q in questions), embedder.embed([q.question for q in questions])))
    out: dict[str, Any] = {"environment": env, "args": vars(args), "longmemeval": stats,
                           "embedding": {"model": embedder.model_name, "texts_embedded_this_run": embedder.model_texts,
                                         "model_seconds_this_run": embedder.model_seconds},
                           "baseline_tuning": {}, "systems": {}}
    embedder.save()
    tune = tuning_dataset([q for q in questions if splits[q.question_id] == "tune"], docs, q_vecs)
    if tune.queries:
        out["baseline_tuning"]["fusion"] = {**await tune_fusion(tune), "metric": "LongMemEval tune turn R@10"}
        recency = await tune_dense_recency(tune)
        out["baseline_tuning"]["dense_recency"] = {**recency, "metric": "LongMemEval tune turn R@1"}
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    needs_db = any(s.startswith("ours") for s in systems)
    with seekdb_or_url(args.url if needs_db else "unused", memory_budget="2G") as server:
        url = server.url("bench_lme", scheme="oceanbase") if server else args.url
        ours = None
        variants = {"ours-gate": GATE_VARIANT, "ours-abstain": ABSTAIN_VARIANT, "ours-previous": PREVIOUS_DEFAULTS}
        if "ours" in systems:  # diagnostics, on ours' rows: which signals cost or earn recall here; the old defaults
            systems = systems + [s for s in ("ours-relevance", "ours-previous") if s not in systems]
            variants["ours-relevance"] = RELEVANCE_ONLY
        for name in systems:
            if name in variants and ours is not None:  # search-time settings only: reuse ours' rows
                ours.use_settings(variants[name])
                res = await evaluate_lme(ours, questions, docs, q_vecs, splits, args.top_k, indexed=True)
                res["settings"] = ours.describe()
                out["systems"][name] = res
                continue
            system = build_system(name, args, embedder, url, out["baseline_tuning"])
            try:
                out["systems"][name] = await evaluate_lme(system, questions, docs, q_vecs, splits, args.top_k)
                if hasattr(system, "describe"):
                    out["systems"][name]["settings"] = system.describe()
            finally:
                if name == "ours":
                    ours = system  # closed after its search-time variants
                else:
                    await system.close()
        if ours is not None:
            await ours.close()
    out["paired"] = ours_vs_best_baseline(out["systems"])
    out["embedding"]["texts_embedded_by_systems"] = embedder.model_texts - out["embedding"]["texts_embedded_this_run"]
    embedder.save()
    return out


RELEVANCE_ONLY = {"recency": 0.0, "frequency": 0.0, "importance": 0.0, "context": 0.0, "version": 0.0}
"""``ours-relevance`` (diagnostic, not a candidate default): ours' rows ranked by the semantic and
full-text halves alone, as ``--histories``' ``relevance_only`` mode."""

METRIC_COLS = ["turn_R@5", "turn_R@10", "turn_any@5", "turn_any@10", "turn_nDCG@10",
               "sess_R@5", "sess_R@10", "sess_nDCG@10"]
ABSTAIN_COLS = ["clean", "empty", "returned", "precision"]


def print_lme_tables(results: dict[str, Any]) -> None:
    """One table per ``<split>:<stratum>`` group, every system a row."""
    from benchmarks._report import format_table

    by_system = results["systems"]
    groups = sorted({g for res in by_system.values() for g in res["metrics"]},
                    key=lambda g: (g.split(":")[0] != "test", g.split(":")[1] != "overall", g))
    for g in groups:
        rows = [{"system": s, **res["metrics"][g], "p50_ms": res["latency"]["p50_ms"]}
                for s, res in by_system.items() if g in res["metrics"]]
        cols = ABSTAIN_COLS if g.endswith(ABSTENTION) else METRIC_COLS + ["returned", "p50_ms"]
        n = rows[0]["n"] if rows else 0
        print()
        print(format_table(f"== longmemeval {g} (n={n:.0f})", rows, cols))
    paired = results.get("paired") or {}
    if paired:
        print("\n== ours - best baseline, turn nDCG@10 (paired bootstrap over the group's questions, 95% interval)")
        for g in groups:
            if g in paired:
                p = paired[g]
                print(f"{g:38s} n={p['n']:3d}  {p['mean']:+.3f}  [{p['low']:+.3f}, {p['high']:+.3f}]  vs {p['baseline']}")
