"""What every retrieval mode evaluates on: the ``Dataset`` shape, its two builders, and ``--ours`` parsing.

At the bottom of the retrieval benchmark, below ``retrieval.py`` (the entry script) and the modes it
dispatches to (``_tune``, ``_grid``, ``_gate_replay``, ``_histories``, ``_longmemeval``), so that none of
them has to import the entry script back (issue 25: ``benchmarks/`` was an import circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from benchmarks._baselines import Doc
from benchmarks._embed_cache import CachedEmbedder
from benchmarks._locomo import CATEGORY_NAMES, conversation_docs, load_locomo
from benchmarks._synthetic import KU_CLOCK, dated_texts, make_knowledge_update_set


@dataclass(frozen=True)
class EvalQuery:
    scope: str
    question: str
    relevant: tuple[str, ...]
    group: str
    vector: np.ndarray


@dataclass
class Dataset:
    name: str
    docs: dict[str, list[Doc]]  # scope -> memories
    queries: list[EvalQuery]
    warmups: dict[str, list[tuple[str, np.ndarray]]]  # scope -> recall history
    headline_groups: tuple[str, ...]
    now: dict[str, datetime]  # scope -> the moment its questions are asked (for recency)


# ---------------------------------------------------------------- datasets
def locomo_dataset(path: str, conversations: int | None, embedder: CachedEmbedder):
    convs, stats = load_locomo(path, conversations)
    queries: list[EvalQuery] = []
    docs, asked_at = conversation_docs(convs, embedder)
    q_vecs = embedder.embed([q.question for c in convs for q in c.queries])
    qi = 0
    for c in convs:
        for q in c.queries:
            group = f"{q.category}:{CATEGORY_NAMES[q.category]}"
            queries.append(EvalQuery(c.sample_id, q.question, q.evidence, group, q_vecs[qi]))
            qi += 1
    headline = tuple(f"{k}:{CATEGORY_NAMES[k]}" for k in (1, 2, 3, 4))
    return Dataset("locomo", docs, queries, {}, headline, asked_at), stats.as_dict()


def knowledge_update_dataset(seed: int, embedder: CachedEmbedder) -> Dataset:
    """The knowledge-update set of ``seed``, asked at ``KU_CLOCK`` (a fixed day: its dates are in the texts)."""
    ku = make_knowledge_update_set(seed)
    scope = f"ku-seed{seed}"
    texts = dated_texts(ku)
    vecs = embedder.embed([t for _, _, t in texts])
    docs = [Doc(m.memory_id, text, m.text, None, when, v) for (m, when, text), v in zip(texts, vecs)]
    q_vecs = embedder.embed([q.question for q in ku.queries])
    w_vecs = embedder.embed(ku.warmups) if ku.warmups else []
    queries = [EvalQuery(scope, q.question, (q.relevant,), q.signal, v) for q, v in zip(ku.queries, q_vecs)]
    return Dataset(
        "knowledge_update", {scope: docs}, queries, {scope: list(zip(ku.warmups, w_vecs))},
        ("recency", "frequency"), {scope: KU_CLOCK},
    )


def parse_overrides(spec: str | None) -> dict[str, float]:
    """``"semantic=0.7,fulltext=0.3,recency=0.1,half_life_days=30,pool=100"`` -> dict."""
    out: dict[str, float] = {}
    for part in filter(None, (spec or "").split(",")):
        k, _, v = part.partition("=")
        out[k.strip()] = float(v)
    return out
