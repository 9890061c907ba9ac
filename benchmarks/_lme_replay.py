"""LongMemEval's tune half in ``--gate-replay``: ours' candidates captured once, re-ranked in numpy per setting.

Why: a LongMemEval question is ~500 long turns; ingesting the tune half into
seekdb takes minutes, ranking it again under another setting milliseconds.
``capture_lme`` ingests the tune questions with evidence (``_abs`` ones are
left out: they measure abstention, not ranking) exactly as ``--longmemeval``
does, runs each question once on the numpy path (the same ``ft`` CTE as the
one-statement search, then ``scoring.rank_rows``) and keeps the prefiltered
rows; ``replay_lme`` re-ranks them with ``rank_rows`` under a setting and
scores them with ``_longmemeval.question_metrics`` (turn and session level,
per question type).  Only the tune half is ever captured: the test half is
the headline of ``--longmemeval`` runs and is not looked at while choosing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace
from collections import defaultdict
from typing import Any

from benchmarks._capture import captured_search, numpy_path, rank_captured, spying
from benchmarks._common import seekdb_or_url
from benchmarks._embed_cache import CachedEmbedder
from benchmarks._longmemeval import QUESTION_TYPES, build_docs, load_longmemeval, question_metrics
from benchmarks._metrics import aggregate
from benchmarks._ours import OursSystem

__all__ = ["above_evidence", "capture_lme", "replay_lme", "with_author_cues", "LME_METRICS"]

LME_METRICS = ("turn_R@5", "turn_R@10", "turn_nDCG@10", "sess_R@5", "sess_R@10", "sess_nDCG@10")


async def capture_lme(args: argparse.Namespace) -> dict[str, Any]:
    """The LongMemEval tune half (``--lme-questions`` per type, hash order): rows and arguments per question."""
    embedder = CachedEmbedder(Path(args.cache_dir) if args.cache_dir else None)
    questions, splits, stats = load_longmemeval(args.longmemeval, args.lme_questions or None, QUESTION_TYPES,
                                                getattr(args, "lme_split_from", None))
    tune = [q for q in questions if splits[q.question_id] == "tune" and not q.abstention]
    docs = build_docs(tune, embedder)
    q_vecs = dict(zip((q.question_id for q in tune), embedder.embed([q.question for q in tune])))
    embedder.save()
    out: dict[str, Any] = {"file": str(args.longmemeval), "per_type": args.lme_questions, "queries": []}
    with seekdb_or_url(args.url, memory_budget="2G") as server:
        url = server.url("bench_lme_replay", scheme="oceanbase") if server else args.url
        ours = OursSystem(url, embedder)
        try:
            ours.set_clock({q.question_id: q.asked_at for q in tune})
            for q in tune:
                await ours.index(q.question_id, docs[q.question_id])
            await ours.ready()
            numpy_path(ours)
            with spying() as seen:
                for q in tune:
                    rows, kw = await captured_search(ours, seen, q.question_id, q.question,
                                                     q_vecs[q.question_id], args.top_k)
                    out["queries"].append({"question_id": q.question_id, "group": q.question_type,
                                           "relevant": list(q.evidence_turns),
                                           "sessions": list(q.answer_sessions), "rows": rows, "kw": kw})
        finally:
            await ours.close()
    out["questions"] = len(out["queries"])
    return out


def with_author_cues(captured: dict[str, Any]) -> dict[str, Any]:
    """``captured`` with each question's author cue (``memory.asker``) in its ranking arguments.

    Captures made before the author signal lack it; the question's text comes from the captured file."""
    from adk_oceanbase.memory.asker import author_cue

    if all("author_cue" in q["kw"] for q in captured["queries"]):
        return captured
    text = {x["question_id"]: x["question"] for x in json.loads(Path(captured["file"]).read_text())}
    return dict(captured, queries=[dict(q, kw=dict(q["kw"], author_cue=author_cue(text[q["question_id"]])))
                                   for q in captured["queries"]])


def replay_lme(captured: dict[str, Any], settings: Any, top_k: int) -> dict[str, Any]:
    """Metrics per question type and ``overall`` of one setting over the captured tune questions."""
    rows = []
    for q in with_author_cues(captured)["queries"]:
        ranked = rank_captured(q, settings, top_k)[:top_k]
        stand_in = SimpleNamespace(abstention=False, evidence_turns=tuple(q["relevant"]),
                                   answer_sessions=tuple(q["sessions"]))
        m = question_metrics(stand_in, ranked)
        rows += [(q["group"], m), ("overall", m)]
    return aggregate(rows)


def above_evidence(captured: dict[str, Any], settings: Any) -> dict[str, dict[str, float]]:
    """Per question type (means over its tune questions): where the first evidence turn ranks, how many
    turns above it come from the evidence's own sessions and from others, how much each weighted signal
    of those turns exceeds the evidence turn's (``d_*``, mean over the turns above it), and how many
    sessions the top 10 hold.  The diagnosis behind ``MemorySettings.context_full_chars``."""
    from adk_oceanbase.memory.scoring import rank_rows

    w = settings.weights
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for q in with_author_cues(captured)["queries"]:
        rows = [SimpleNamespace(**r) for r in q["rows"]]
        kw = dict(q["kw"], settings=settings, weights=w, top_k=len(rows))
        ranked = rank_rows(rows, **kw)
        rel = set(q["relevant"])
        turns = [set(json.loads(r.event_ids) if r.event_ids else [r.memory_id]) for r, _ in ranked]
        first = next((i for i, t in enumerate(turns) if t & rel), None)
        if first is None:
            continue
        own_sessions = {t.split(":")[0] for t in rel}
        ev = ranked[first][1]
        a = acc[q["group"]]
        a["n"] += 1
        a["first_rank"] += first + 1
        a["sessions_top10"] += len({r.session_id for r, _ in ranked[:10]})
        for r, s in ranked[:first]:
            a["same_session" if r.session_id in own_sessions else "other_sessions"] += 1
            a["d_semantic"] += w.semantic * (s.semantic - ev.semantic)
            a["d_fulltext"] += w.fulltext * (s.fulltext - ev.fulltext)
            a["d_context"] += w.context * (s.context - ev.context)
            a["d_recency"] += w.recency * (s.recency - ev.recency)
    out = {}
    for group, a in sorted(acc.items()):
        n, above = a["n"], a["same_session"] + a["other_sessions"]
        out[group] = {"questions": n, "first_rank": a["first_rank"] / n, "sessions_top10": a["sessions_top10"] / n,
                      "same_session": a["same_session"] / n, "other_sessions": a["other_sessions"] / n,
                      **{k: a[k] / above if above else 0.0 for k in ("d_semantic", "d_fulltext", "d_context", "d_recency")}}
    return out

