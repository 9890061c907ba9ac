"""Datasets of one split (``benchmarks/_split.py``) and how one query is scored.

LoCoMo of a split: its conversations, their questions (categories 1-5) and
the ``abstain:swapped`` questions; knowledge-update of a split: one scope per
seed, each with its recall history and its abstention questions.  The
``Dataset`` / ``EvalQuery`` classes are ``benchmarks.retrieval``'s.
"""

from __future__ import annotations

from typing import Any, Sequence

from benchmarks._metrics import abstention_metrics, query_metrics
from benchmarks._split import SPLITS, ku_abstention_questions, swapped_abstention_questions

__all__ = ["ABSTAIN_PREFIX", "knowledge_update_split", "locomo_split", "query_rows"]

ABSTAIN_PREFIX = "abstain:"


def query_rows(group: str, relevant: Sequence[str], ranked: Sequence[str], headline: Sequence[str]) -> list[tuple[str, dict]]:
    """``(group, metrics)`` rows of one answered query, as ``_metrics.aggregate`` takes them.

    Every query gets the abstention metrics (``clean``, ``empty``, ``returned``,
    ``precision``); queries with a relevant set also the ranking metrics.
    Headline groups also count under ``overall``, abstention groups under
    ``abstain:all``.
    """
    m = abstention_metrics(ranked, relevant)
    if relevant:
        m.update(query_metrics(ranked, relevant))
    rows = [(group, m)]
    if group in headline:
        rows.append(("overall", m))
    if group.startswith(ABSTAIN_PREFIX):
        rows.append((ABSTAIN_PREFIX + "all", m))
    return rows


def locomo_split(path: str, split: str, embedder: Any) -> tuple[Any, dict]:
    """The LoCoMo dataset of ``split`` ("tune" / "test"), named ``locomo:<split>``."""
    from benchmarks._locomo import CATEGORY_NAMES, conversation_docs, load_locomo
    from benchmarks._dataset import Dataset, EvalQuery

    every, stats = load_locomo(path)
    convs = [every[i] for i in SPLITS[split].conversations]
    abstain = swapped_abstention_questions(convs)
    docs, now = conversation_docs(convs, embedder)
    asked = [(c.sample_id, q.question, q.evidence, f"{q.category}:{CATEGORY_NAMES[q.category]}")
             for c in convs for q in c.queries]
    asked += [(sid, question, (), ABSTAIN_PREFIX + "swapped") for sid, question in abstain]
    q_vecs = embedder.embed([a[1] for a in asked])
    queries = [EvalQuery(sid, question, tuple(rel), group, v) for (sid, question, rel, group), v in zip(asked, q_vecs)]
    headline = tuple(f"{k}:{CATEGORY_NAMES[k]}" for k in (1, 2, 3, 4))
    info = {"conversations": [c.sample_id for c in convs], "questions": len(queries),
            "abstain_swapped": len(abstain), "evidence_repairs": stats.evidence_repaired}
    return Dataset(f"locomo:{split}", docs, queries, {}, headline, now), info


def knowledge_update_split(split: str, embedder: Any) -> tuple[Any, dict]:
    """The knowledge-update dataset of ``split``: one scope (user) per seed, named ``knowledge_update:<split>``,
    asked at ``_synthetic.KU_CLOCK``."""
    from benchmarks._synthetic import KU_CLOCK, dated_texts, make_knowledge_update_set
    from benchmarks._baselines import Doc
    from benchmarks._dataset import Dataset, EvalQuery

    docs: dict[str, list] = {}
    queries: list = []
    warmups: dict[str, list] = {}
    for seed in SPLITS[split].seeds:
        ku = make_knowledge_update_set(seed)
        scope = f"ku-seed{seed}"
        dated = dated_texts(ku)
        vecs = embedder.embed([t for _, _, t in dated])
        docs[scope] = [Doc(m.memory_id, t, m.text, None, when, v) for (m, when, t), v in zip(dated, vecs)]
        asked = [(q.question, (q.relevant,), q.signal) for q in ku.queries]
        asked += [(question, (), group) for question, group in ku_abstention_questions(ku, seed)]
        q_vecs = embedder.embed([a[0] for a in asked])
        queries += [EvalQuery(scope, question, rel, group, v) for (question, rel, group), v in zip(asked, q_vecs)]
        w_vecs = embedder.embed(ku.warmups) if ku.warmups else []
        warmups[scope] = list(zip(ku.warmups, w_vecs))
    ds = Dataset(f"knowledge_update:{split}", docs, queries, warmups, ("recency", "frequency"),
                 {scope: KU_CLOCK for scope in docs})
    return ds, {"seeds": list(SPLITS[split].seeds), "questions": len(queries)}
