"""Retrieval benchmark: LoCoMo and a synthetic knowledge-update set, every system side by side.

Usage (from the repository root, venv active)::

    HF_HUB_OFFLINE=1 python benchmarks/retrieval.py --locomo ../shared/datasets/locomo10.json \\
        --conversations 10 --out /tmp/retrieval.json
    python benchmarks/retrieval.py --scale 100000 --out /tmp/scale.json       # ANN vs exact at scale
    python benchmarks/retrieval.py --histories --locomo ...                     # long histories, app grown to 100k
    python benchmarks/retrieval.py --locomo ... --grid                          # small tuning grid for ours
    python benchmarks/retrieval.py --locomo ... --tune-grid default             # ours' settings, tune split only
    python benchmarks/retrieval.py --longmemeval PATH/longmemeval_s_cleaned.json --lme-questions 10  # per type

Split (``--split``, default ``both``; ``benchmarks/_split.py``)
    Every default of ours and every tuned baseline weight is chosen on the
    *tune* split (LoCoMo conversations 1-5, knowledge-update seeds 0-3); the
    headline is the *test* split (conversations 6-10, seeds 10-19).  Each split
    adds abstention questions (answer in no memory of the asked user) and
    every query is also scored for what was returned besides the relevant
    memories (``clean``, ``empty``, ``returned``, ``precision``;
    ``_metrics.abstention_metrics``).  ``--split none`` is the old mode: the
    first ``--conversations`` and ``--seed``.

Data
    *LoCoMo* (``--locomo PATH``; CC BY-NC 4.0: read from its path, never
    copied into the repository): every dialogue turn becomes one memory whose
    text carries date and speaker (``"[08 May 2023] Caroline: ..."``, plus the
    image caption when the turn shared a photo; the same layout the memory
    service embeds); each conversation is its own user.  A question's relevant set is its evidence turns (malformed ids
    repaired or dropped, counted in ``locomo_stats``).  Categories 1-4
    (multi-hop, temporal, open-domain, single-hop) are the headline;
    5 (adversarial) is reported separately.  Memories keep LoCoMo's own dates
    (13% of the questions name a year); questions are asked, for recency, one
    day after the conversation's last turn: ``ours`` runs on a replay clock
    (see ``benchmarks/_ours.py``), as if the user had just talked to the agent.

    *Knowledge-update set* (generated from ``--seed``; see
    ``benchmarks/_synthetic.py``): facts that change over time, where the
    newest version is the answer (recency), and parallel facts one of which was
    recalled often by earlier searches (frequency; the recall history is run
    through every system before evaluation).  One relevant memory per question.

    *LongMemEval* (``--longmemeval PATH``, MIT; read from its path, never
    copied): one user per question, every haystack turn a memory; turn- and
    session-level recall / nDCG per question type, ``--lme-questions N`` per
    type chosen by hash, tune/test halves by hash; see ``benchmarks/_longmemeval.py``.

Systems (``--systems``, comma separated; all by default)
    ``adk-inmemory`` ADK ``InMemoryMemoryService`` (word overlap, fed ADK Events);
    ``dense`` exact cosine in numpy on MiniLM; ``bm25`` rank-bm25 Okapi;
    ``fusion`` 0.7*cosine + 0.3*BM25/max (the first rounds' baselines, kept for continuity);
    ``bm25-care`` BM25 with ours' stemming, stopwords and author-name removal; ``fusion-tuned``
    cosine + BM25-care/max with the weight tuned on the tune split; ``dense-recency`` cosine +
    a recency bonus tuned on the knowledge-update tune seeds (``_baseline_tuning.py``); ``ours`` ``OceanBaseMemoryService.search``
    through SQL on seekdb (``--url``, or a server started from the pylibseekdb
    wheel on a free port).  All vector systems share one MiniLM embedding cache
    (``--cache-dir``), so they rank the same vectors.

Metrics
    recall@1/5/10, nDCG@10 and MRR per category and overall; search latency
    p50/p95 per query excluding the embedding model (query vectors come from
    the cache; the model's own per-query latency is measured separately as
    ``query_embedding``).  Output: a table on stdout and ``--out`` JSON with the
    environment (python, package versions, CPU, date, git commit).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._dataset import Dataset, knowledge_update_dataset, locomo_dataset
from benchmarks._embed_cache import CachedEmbedder
from benchmarks._metrics import aggregate, summarise_latencies
from benchmarks._common import environment, print_environment, seekdb_or_url, write_json
from benchmarks._report import format_table
from benchmarks._split_data import knowledge_update_split, locomo_split, query_rows
from benchmarks._systems import ALL_SYSTEMS, PACKAGES, build_system

logger = logging.getLogger("benchmarks.retrieval")

METRIC_COLS = ["R@1", "R@5", "R@10", "nDCG@10", "MRR"]


# ---------------------------------------------------------------- running
async def evaluate(system: Any, data: Dataset, top_k: int) -> dict[str, Any]:
    if hasattr(system, "set_clock"):
        system.set_clock(data.now)
    t0 = time.perf_counter()
    for scope, docs in data.docs.items():
        await system.index(scope, docs)
    if hasattr(system, "ready"):
        await system.ready()
    index_s = time.perf_counter() - t0
    for scope, history in data.warmups.items():
        for question, vec in history:
            await system.recall(scope, question, vec)
    rows: list[tuple[str, dict[str, float]]] = []
    lat: list[float] = []
    per_query = []
    for q in data.queries:
        start = time.perf_counter()
        ranked = await system.search(q.scope, q.question, q.vector, top_k)
        lat.append(time.perf_counter() - start)
        rows.extend(query_rows(q.group, q.relevant, ranked[:top_k], data.headline_groups))
        per_query.append(ranked[:top_k])
    return {
        "metrics": aggregate(rows),
        "latency": summarise_latencies(lat),
        "index_seconds": index_s,
    }


def measure_query_embedding(embedder: CachedEmbedder, questions: Sequence[str], n: int = 50) -> dict[str, float]:
    """Per-query latency of the model itself (batch of one, no cache): what a live search adds."""
    model = embedder._load_model()
    model.encode(["warm up"], show_progress_bar=False)
    lat = []
    for q in list(questions)[:n]:
        start = time.perf_counter()
        model.encode([q], normalize_embeddings=True, show_progress_bar=False)
        lat.append(time.perf_counter() - start)
    return summarise_latencies(lat)


ABSTAIN_COLS = ["clean", "empty", "returned", "precision"]


def table_columns(group: str, overall_cols: list[str]) -> list[str]:
    """What a group's table shows: ranking metrics, abstention metrics, or both (category 5)."""
    if group == "overall":
        return overall_cols
    if group.startswith("abstain:"):
        return ABSTAIN_COLS
    if group.startswith("5:"):
        return METRIC_COLS + ABSTAIN_COLS
    return METRIC_COLS


def print_tables(results: dict[str, Any]) -> None:
    cols = METRIC_COLS + ["returned", "p50_ms", "p95_ms"]
    for ds_name, by_system in results["datasets"].items():
        groups: list[str] = []
        for res in by_system.values():
            for g in res["metrics"]:
                if g not in groups:
                    groups.append(g)
        groups.sort(key=lambda g: (g != "overall", g))
        for g in groups:
            rows = []
            for sys_name, res in by_system.items():
                m = res["metrics"].get(g)
                if m is None:
                    continue
                lat = {k: v for k, v in res["latency"].items() if k != "n"}
                rows.append({"system": sys_name, **m, **lat})
            n = rows[0].get("n") if rows else 0
            label = "categories 1-4" if (g == "overall" and ds_name.startswith("locomo")) else g
            print()
            print(format_table(f"== {ds_name} / {label} (n={n:.0f})", rows, table_columns(g, cols)))


async def split_datasets(args: argparse.Namespace, embedder: CachedEmbedder, out: dict[str, Any]) -> list[Dataset]:
    """``--split``: the datasets of the tune and/or test split; baselines' weights tuned on tune."""
    from benchmarks._baseline_tuning import tune_dense_recency, tune_fusion

    built: dict[str, Dataset] = {}
    for split in ("tune", "test"):
        if args.locomo:
            built[f"locomo:{split}"], out["split_info"][f"locomo:{split}"] = locomo_split(args.locomo, split, embedder)
        if not args.no_ku:
            built[f"knowledge_update:{split}"], out["split_info"][f"knowledge_update:{split}"] = \
                knowledge_update_split(split, embedder)
    if "locomo:tune" in built:
        out["baseline_tuning"]["fusion"] = await tune_fusion(built["locomo:tune"])
    if "knowledge_update:tune" in built:
        out["baseline_tuning"]["dense_recency"] = await tune_dense_recency(built["knowledge_update:tune"])
    wanted = ("tune", "test") if args.split == "both" else (args.split,)
    return [ds for name, ds in built.items() if name.split(":")[1] in wanted]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    embedder = CachedEmbedder(Path(args.cache_dir) if args.cache_dir else None)
    datasets: list[Dataset] = []
    out: dict[str, Any] = {"environment": environment(PACKAGES), "args": vars(args), "datasets": {},
                           "split": args.split, "split_info": {}, "baseline_tuning": {}}
    if args.split != "none":
        datasets = await split_datasets(args, embedder, out)
    elif args.locomo:
        ds, stats = locomo_dataset(args.locomo, args.conversations, embedder)
        datasets.append(ds)
        out["locomo_stats"] = stats
    if args.split == "none" and not args.no_ku:
        datasets.append(knowledge_update_dataset(args.seed, embedder))
    out["embedding"] = {
        "model": embedder.model_name,
        "texts_embedded_this_run": embedder.model_texts,
        "model_seconds_this_run": embedder.model_seconds,
    }
    embedder.save()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    needs_db = any(s.startswith("ours") for s in systems)
    with seekdb_or_url(args.url if needs_db else "unused", memory_budget="2G") as server:
        server_url = server.url("bench_retrieval", scheme="oceanbase") if server else args.url
        for ds in datasets:
            out["datasets"][ds.name] = {}
            for name in systems:
                system = build_system(name, args, embedder, server_url, out["baseline_tuning"])
                logger.info("%s on %s", name, ds.name)
                try:
                    out["datasets"][ds.name][name] = await evaluate(system, ds, args.top_k)
                finally:
                    await system.close()
                if hasattr(system, "describe"):
                    out["datasets"][ds.name][name]["settings"] = system.describe()
    questions = [q.question for ds in datasets for q in ds.queries]
    if questions and not args.skip_embed_latency:
        out["query_embedding"] = measure_query_embedding(embedder, questions)
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--locomo", help="path to locomo10.json (never copied into the repo)")
    p.add_argument("--conversations", type=int, default=None, help="first N LoCoMo conversations (default all)")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic sets (--split none)")
    p.add_argument("--split", choices=("tune", "test", "both", "none"), default="both",
                   help="tune: LoCoMo conversations 1-5 + knowledge-update seeds 0-3; test: conversations 6-10 + "
                   "seeds 10-19 (the headline); both (default); none: the first --conversations and --seed")
    p.add_argument("--out", help="write results JSON here")
    p.add_argument("--url", help="seekdb/OceanBase URL for 'ours' (oceanbase://root@127.0.0.1:PORT/db); "
                   "default: start a temporary server from the pylibseekdb wheel")
    p.add_argument("--systems", default=",".join(ALL_SYSTEMS), help="comma list of " + ", ".join(ALL_SYSTEMS))
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--ours", default="", help="overrides for ours: semantic=,fulltext=,recency=,frequency=,"
                   "importance=,context=,version=,half_life_days=,pool=,ef_search=,exact=1,window=,"
                   "vsim=,vband=,vpool=,gsim=,glex=,gmargin=,gfill=,gnb= (gate; -1 = off), scap= (max_hits_per_session; -1 = off)")
    p.add_argument("--grid", action="store_true", help="run the small tuning grid for ours instead")
    p.add_argument("--tune-grid", default=None, help="ours' settings on the tune split only: 'default' "
                   "(benchmarks/_tune.py) or ';'-separated --ours override strings")
    p.add_argument("--gate-replay", default=None, help="the relevance gate's settings on the tune split, re-ranked "
                   "in numpy from candidates captured once (benchmarks/_gate_replay.py): 'default' or ';'-separated "
                   "--ours override strings")
    p.add_argument("--replay-cache", help="--gate-replay: pickle of the captured candidates (read if present, else written)")
    p.add_argument("--lme-replay-cache", help="--gate-replay with --longmemeval: pickle of LongMemEval's captured tune "
                   "half (read if present, else written)")
    p.add_argument("--no-ku", action="store_true", help="skip the knowledge-update set")
    p.add_argument("--scale", type=int, default=0, help="scale mode: N synthetic memories in one app, ANN vs exact")
    p.add_argument("--scale-queries", type=int, default=200, help="scale mode: queries for the SQL runs")
    p.add_argument("--scale-layouts", default="users,single", help="scale mode: users (1,000 x N/1,000) and/or single (1 x N)")
    p.add_argument("--scale-service-queries", type=int, default=20, help="scale mode: queries through the service")
    p.add_argument("--scale-text", default="synthetic",
                   help="scale mode: synthetic sentences (every query word in ~12%% of rows) or locomo (LoCoMo's "
                        "turns cycled, its questions as queries; needs --locomo)")
    p.add_argument("--scale-memory", default="4G", help="scale mode: memory_budget of the started seekdb (1M rows: 10G)")
    p.add_argument("--ef-search", default="64", help="scale mode: comma list of ob_hnsw_ef_search values")
    p.add_argument("--histories", action="store_true",
                   help="histories mode: LoCoMo users (~300-700 turns) in an app grown to 100k rows (_histories.py)")
    p.add_argument("--histories-phases", default="measured,x10,100000,rebuilt",
                   help="histories mode: app sizes measured in turn: measured, x10 (10x more other users' rows), "
                        "N rows, rebuilt (the same after a forced index rebuild)")
    p.add_argument("--histories-queries", type=int, default=300, help="histories mode: questions per phase (0 = all)")
    p.add_argument("--histories-memory", default="4G", help="histories mode: memory_budget of the started seekdb")
    p.add_argument("--longmemeval", help="LongMemEval mode: path to longmemeval_s(_cleaned) or _oracle JSON "
                   "(never copied into the repo; benchmarks/_longmemeval.py)")
    p.add_argument("--lme-questions", type=int, default=3,
                   help="LongMemEval mode: questions per type (six types + abstention), chosen by hash; 0 = all. "
                   "Default 3 (21 questions, ~10k turns: ~20 min on 2 vCPUs with a cold embedding cache)")
    p.add_argument("--lme-types", default="", help="LongMemEval mode: only these strata (comma list of question "
                   "types and/or 'abstention'); default all")
    p.add_argument("--lme-split-from", help="LongMemEval mode: take the tune/test split from this LongMemEval file "
                   "(the s file when running the oracle file: both sets then split the same questions the same way)")
    p.add_argument("--cache-dir", help="embedding cache directory (default: <tmp>/adk_oceanbase_bench_cache)")
    p.add_argument("--skip-embed-latency", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    if args.gate_replay:  # with --longmemeval too: the LongMemEval tune half joins the replay
        from benchmarks._gate_replay import run_gate_replay

        results = asyncio.run(run_gate_replay(args))
    elif args.longmemeval:
        from benchmarks._longmemeval import print_lme_tables, run_longmemeval

        results = asyncio.run(run_longmemeval(args))
        print_environment(results["environment"])
        print_lme_tables(results)
    elif args.histories:
        from benchmarks._histories import run_histories

        results = asyncio.run(run_histories(args))
    elif args.scale:
        from benchmarks._scale import run_scale

        results = asyncio.run(run_scale(args))
    elif args.tune_grid:
        from benchmarks._tune import run_tune_grid

        results = asyncio.run(run_tune_grid(args))
    elif args.grid:
        from benchmarks._grid import run_grid

        results = asyncio.run(run_grid(args))
    else:
        if not args.locomo and args.no_ku:
            raise SystemExit("nothing to run: give --locomo and/or drop --no-ku")
        results = asyncio.run(run(args))
        print_environment(results["environment"])
        print_tables(results)
        if "query_embedding" in results:
            qe = results["query_embedding"]
            print(f"\nquery embedding (MiniLM, CPU, batch 1): p50 {qe['p50_ms']:.1f} ms, p95 {qe['p95_ms']:.1f} ms")
    if args.out:
        write_json(args.out, results)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
