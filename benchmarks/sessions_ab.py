"""Before/after for a session-service change: ADK, ours at an older commit, and ours now, in one process.

``sessions.py`` compares ours with ADK; on a shared, busy machine its absolute
numbers move between runs by more than a change is worth, so a change is
measured here against the code it replaces, sample by sample interleaved on
one server: append latency (one session, the first ``--events`` appends) and a
full ``get_session`` of the grown session, wall and CPU time (CPU is the whole
process's, so it counts the decode thread; calls run one at a time).

The older commit is imported as a second package::

    git archive <commit> adk_oceanbase alembic | tar -x -C /tmp/ob-old
    mv /tmp/ob-old/adk_oceanbase /tmp/ob-old/adk_oceanbase_old
    mv /tmp/ob-old/alembic /tmp/ob-old/adk_oceanbase_old/_alembic
    python benchmarks/sessions_ab.py --old-path /tmp/ob-old --old-commit <commit>
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# This checkout's adk_oceanbase, not whichever one is installed: a script's sys.path[0] is its
# own folder, so without this the import finds the installed (editable) package of another tree.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import ensure_database, environment, print_environment, start_seekdb, write_json  # noqa: E402
from _session_workload import PACKAGES, Workload, build_url, fresh, patch_adk_table_setup  # noqa: E402


async def run(args: argparse.Namespace, port: int) -> dict[str, Any]:
    from google.adk.sessions import DatabaseSessionService

    from adk_oceanbase import OceanBaseSessionService as New
    from adk_oceanbase_old import OceanBaseSessionService as Old

    patch_adk_table_setup()
    url = lambda scheme, db: build_url(scheme, "127.0.0.1", port, "root", None, db)  # noqa: E731
    for name in ("adk", "old", "new"):
        ensure_database("127.0.0.1", port, "root", None, f"ab_{name}", fresh=True)
    svcs: dict[str, Any] = {"adk": DatabaseSessionService(url("mysql+aiomysql", "ab_adk"))}
    await svcs["adk"].prepare_tables()
    for name, cls in (("old", Old), ("new", New)):
        svcs[name] = cls(url("oceanbase", f"ab_{name}"))
        await svcs[name].setup()
    events = Workload(args.seed, "grow").take(max(args.events, args.size))
    sessions = {k: await s.create_session(app_name="ab", user_id="u", session_id="s") for k, s in svcs.items()}
    names = list(svcs)
    gc.collect()
    gc.freeze()
    append: dict[str, list[float]] = {k: [] for k in names}
    for i, template in enumerate(events):
        for k in names if i % 2 else names[::-1]:
            ev = fresh(template)
            t = time.perf_counter()
            await svcs[k].append_event(sessions[k], ev)
            if i < args.events:
                append[k].append(time.perf_counter() - t)
    loads: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    for i in range(args.reps):
        for k in names if i % 2 else names[::-1]:
            w, c = time.perf_counter(), time.process_time()
            got = await svcs[k].get_session(app_name="ab", user_id="u", session_id="s")
            loads[k].append((time.perf_counter() - w, time.process_time() - c))
            assert len(got.events) == len(events)
    for s in svcs.values():
        await s.close()
    out: dict[str, Any] = {}
    for k in names:
        lat = append[k]
        out[k] = {
            f"append_event_{len(lat)}": {"p50_ms": statistics.median(lat) * 1e3, "mean_ms": statistics.mean(lat) * 1e3,
                                         "events_per_s": len(lat) / sum(lat)},
            f"get_session_full_{len(events)}": {"p50_ms": statistics.median(x[0] for x in loads[k]) * 1e3,
                                                "cpu_p50_ms": statistics.median(x[1] for x in loads[k]) * 1e3,
                                                "n": len(loads[k])},
        }
    ratios = {}
    for k in ("old", "new"):
        for key, fields in out[k].items():
            for field in ("p50_ms", "events_per_s", "cpu_p50_ms"):
                if field in fields:
                    ratios[f"{k}/adk {key}.{field}"] = fields[field] / out["adk"][key][field]
    print("\n== results")
    for k in names:
        for key, fields in out[k].items():
            print(f"  {k:<4} {key:<26} " + "  ".join(f"{f} {v:,.2f}" for f, v in fields.items()))
    print("\n== ratios (over ADK)")
    for key, v in ratios.items():
        print(f"  {key:<52} {v:6.2f}")
    return {"systems": out, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old-path", required=True, help="folder holding the older commit as package adk_oceanbase_old")
    p.add_argument("--old-commit", required=True, help="that commit (recorded in the JSON)")
    p.add_argument("--events", type=int, default=1000, help="timed appends")
    p.add_argument("--size", type=int, default=5000, help="events in the session when get_session is timed")
    p.add_argument("--reps", type=int, default=9, help="get_session samples per system")
    p.add_argument("--seed", type=int, default=20240607)
    p.add_argument("--out", required=True, help="JSON results path")
    args = p.parse_args(argv)
    sys.path.append(args.old_path)
    warnings.filterwarnings("ignore", message="Unknown schema content")
    import adk_oceanbase

    env = environment(PACKAGES, {"old_commit": args.old_commit, "adk_oceanbase_imported_from": str(Path(adk_oceanbase.__file__).parent)})
    print_environment(env)
    server = start_seekdb()
    try:
        results = asyncio.run(run(args, server.port))
    finally:
        server.stop()
    write_json(args.out, {"benchmark": "sessions_ab", "environment": env, "args": vars(args), **results})
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
