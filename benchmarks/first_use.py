"""First use of a new embedded directory: time to the first ``create_session``, and the directory's size.

Issue #24: the first ``create_session`` on a new seekdb directory took 16.5 s
(2.9 s on an existing one) and a new directory was 160-550 MB.  In one run,
on new directories under one temporary folder, this compares (``--repeats``
times each, interleaved):

* ``one_step``: what a user gets: ``OceanBaseSessionService(url=seekdb://NEW)``
  and ``create_session`` (engine start, the schema created at head in one
  step and stamped, the insert);
* ``chain``: the same, but the schema made revision by revision (``upgrade``
  to 0001, then to head: what every first use did before);
* ``existing``: ``create_session`` in a new process on the ``one_step``
  directory once closed (the engine restarts on existing files);

with the phases of each (engine start, setup, insert); then the directory's
size (``store/`` and ``log/``) after first use and after each of ``--reopens``
later processes, with ``seekdb_log_mb`` at its default and at 0 (the engine's
own logging defaults).

Usage::

    python benchmarks/first_use.py              # 3 repeats
    python benchmarks/first_use.py --repeats 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import environment, print_environment, summarize, write_json  # noqa: E402

from adk_oceanbase import Config, OceanBaseSessionService  # noqa: E402
from adk_oceanbase import migrations  # noqa: E402
from adk_oceanbase.engine import Database  # noqa: E402


def _mb(path: Path) -> float:
    if not path.exists():
        return 0.0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


async def _first_use(url: str, *, chain: bool, **overrides: Any) -> dict[str, float]:
    """Seconds from nothing to the first stored session, by phase."""
    t0 = time.perf_counter()
    db = Database(Config.from_url(url, **overrides))
    await db.start()
    t1 = time.perf_counter()
    if chain:
        await migrations.upgrade(db, "0001")
        await migrations.upgrade(db)
    svc = OceanBaseSessionService(database=db)
    await svc.create_session(app_name="bench", user_id="u")
    t2 = time.perf_counter()
    await db.close()
    return {"start_s": t1 - t0, "setup_and_insert_s": t2 - t1, "total_s": t2 - t0}


_EXISTING = """
import asyncio, sys, time
from adk_oceanbase import Config, OceanBaseSessionService
async def main():
    t0 = time.perf_counter()
    svc = OceanBaseSessionService(config=Config.from_url(sys.argv[1], seekdb_log_mb=int(sys.argv[2])))
    await svc.create_session(app_name="bench", user_id="u")
    print(time.perf_counter() - t0)
    await svc.close()
asyncio.run(main())
"""


async def _existing(url: str, seekdb_log_mb: int = 64) -> float:
    """A new process's first ``create_session`` on the directory (in this process a closed seekdb may still be up)."""
    root = str(Path(__file__).resolve().parent.parent)
    out = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", _EXISTING, url, str(seekdb_log_mb)],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": root},
    )
    return float(out.stdout.strip().splitlines()[-1])


async def run(repeats: int, reopens: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="adk_ob_first_use_"))
    samples: dict[str, list[float]] = {"one_step": [], "chain": [], "existing": []}
    phases: dict[str, list[dict[str, float]]] = {"one_step": [], "chain": []}
    sizes: dict[str, list[dict[str, float]]] = {"now": [], "log_mb_0": [], "before": []}
    try:
        for i in range(repeats):
            for mode in ("chain", "one_step") if i % 2 else ("one_step", "chain"):
                where = root / f"{mode}_{i}"
                got = await _first_use(f"seekdb://{where}", chain=mode == "chain")
                phases[mode].append(got)
                samples[mode].append(got["total_s"])
                if mode == "one_step":
                    samples["existing"].append(await _existing(f"seekdb://{where}"))
                shutil.rmtree(where, ignore_errors=True)
            print(f"  repeat {i + 1}/{repeats}: one_step {samples['one_step'][-1]:.2f} s, chain {samples['chain'][-1]:.2f} s, "
                  f"existing {samples['existing'][-1]:.2f} s", flush=True)
        # the directory's size after first use, then after each of `reopens` later processes: now (one
        # step, seekdb_log_mb=64), the engine's logging (seekdb_log_mb=0), and before (chain, engine logging)
        for label, log_mb, chain in (("now", 64, False), ("log_mb_0", 0, False), ("before", 0, True)):
            where = root / label
            await _first_use(f"seekdb://{where}", chain=chain, seekdb_log_mb=log_mb)
            sizes[label].append({"store_mb": _mb(where / "store"), "log_mb": _mb(where / "log")})
            for _ in range(reopens):
                await _existing(f"seekdb://{where}", log_mb)
                sizes[label].append({"store_mb": _mb(where / "store"), "log_mb": _mb(where / "log")})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"samples_s": samples, "phases": phases, "sizes": sizes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reopens", type=int, default=5, help="later processes opening the directory, for its size")
    parser.add_argument("--out", default="benchmarks/results/first_use.json")
    args = parser.parse_args()
    env = environment(["adk-oceanbase", "pylibseekdb", "sqlalchemy", "alembic"])
    print_environment(env)
    result = asyncio.run(run(args.repeats, args.reopens))
    print("== first create_session on a new directory (seconds, median [min-max])")
    for mode, values in result["samples_s"].items():
        s = summarize(values)
        print(f"  {mode:9s} {s['p50_ms'] / 1000:6.2f}  [{min(values):.2f}-{max(values):.2f}]  n={len(values)}")
    for mode, rows in result["phases"].items():
        start = sorted(r["start_s"] for r in rows)[len(rows) // 2]
        rest = sorted(r["setup_and_insert_s"] for r in rows)[len(rows) // 2]
        print(f"  {mode:9s} engine start {start:.2f} s, setup + insert {rest:.2f} s (medians)")
    print("== directory size after first use, then after each later process (MB)")
    for mode, rows in result["sizes"].items():
        print(f"  {mode:15s} " + ", ".join(f"store {r['store_mb']:.0f} + log {r['log_mb']:.0f}" for r in rows))
    write_json(args.out, {"environment": env, **result})


if __name__ == "__main__":
    main()
