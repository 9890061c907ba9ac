"""Session-service benchmark: ADK's ``DatabaseSessionService`` vs ``OceanBaseSessionService``.

Both services run against the SAME seekdb/OceanBase server, in one process and
one run, on identical seeded events, phase by phase (samples interleaved), each
in its own freshly created database.  ADK runs twice: with its defaults, and
with our engine's pool settings (``adk_tuned``: same pool size, no pre-ping).  Prints the environment, a table of
numbers with ratios (ours/ADK), the targets from issues #2, #4 and #11, and writes
everything to a JSON file.

Usage::

    python benchmarks/sessions.py                 # full run, starts its own seekdb server
    python benchmarks/sessions.py --quick         # smoke run (small sizes, ~1 min)
    python benchmarks/sessions.py --url mysql+aiomysql://root@127.0.0.1:2881/ --only adk

The baseline needs one patch to set up its tables on seekdb/OceanBase (see
:func:`patch_adk_table_setup`); it is printed on every run and touches no query
path.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import inspect
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
# This checkout's adk_oceanbase, not whichever one is installed: a script's sys.path[0] is its
# own folder, so without this the import finds the installed (editable) package of another tree.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from _common import (  # noqa: E402  (script-style import of the sibling module)
    Timer,
    environment,
    print_environment,
    seekdb_or_url,
    summarize,
    time_async_paired,
    time_async_repeated,
    write_json,
)
from _session_report import Result, check_targets, print_report  # noqa: E402
from _session_systems import (  # noqa: E402,F401  (re-exported: sessions.X keeps working)
    System, make_adk, make_ours, model_contents, ours_pool_settings, token_estimate,
)
from _session_workload import (  # noqa: E402,F401  (re-exported: sessions.X keeps working)
    AGENT, APP, BASELINE_PATCH, PACKAGES, Workload, build_url, fresh, patch_adk_table_setup, split_url,
)
from google.adk.events import Event, EventActions  # noqa: E402
from google.adk.events.event_actions import EventCompaction  # noqa: E402
from google.adk.sessions import DatabaseSessionService  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.genai import types  # noqa: E402


# =========================================================================== phases
# Every phase runs all systems sample by sample, alternating their order, so that load from
# other processes on a shared machine lands on both services alike (measured here: a full run
# under another agent's test suite moved single-system phases by 2-3x).
Systems = list[System]


def _order(systems: Systems, i: int) -> Systems:
    return systems if i % 2 == 0 else systems[::-1]


async def _paired(systems: Systems, fn: Callable[[System], Awaitable[Any]], **kw: Any) -> dict[str, list[float]]:
    return await time_async_paired({s.name: (lambda s=s: fn(s)) for s in systems}, **kw)


async def phase_sessions(systems: Systems, seed: int, n: int, page: int) -> dict[str, Result]:
    """create_session latency over ``n`` creates, then list all ``n`` and (ours) a page of ``page``."""
    user = "u-list"
    wl = Workload(seed, "sessions")
    states = [wl.initial_state(i) for i in range(n)]
    lat: dict[str, list[float]] = {s.name: [] for s in systems}
    for i in range(n):
        for s in _order(systems, i):
            t0 = time.perf_counter()
            await s.svc.create_session(app_name=APP, user_id=user, state=dict(states[i]), session_id=f"s-{i:05d}")
            lat[s.name].append(time.perf_counter() - t0)
    out: dict[str, Result] = {s.name: {"create_session": summarize(lat[s.name])} for s in systems}

    async def _list(s: System) -> None:
        resp = await s.svc.list_sessions(app_name=APP, user_id=user)
        assert len(resp.sessions) == n, len(resp.sessions)

    for name, xs in (await _paired(systems, _list, min_reps=5, max_reps=30, budget_s=5)).items():
        out[name][f"list_sessions_{n}"] = summarize(xs)
    for s in systems:
        if hasattr(s.svc, "list_sessions_page"):
            out[s.name].update(await _page_timings(s.svc, user, n, page))
    return out


def _page_parts(resp: Any) -> tuple[list[Any], Any]:
    """Sessions and next cursor from whatever shape ``list_sessions_page`` returns."""
    if isinstance(resp, tuple):
        return list(resp[0]), resp[1] if len(resp) > 1 else None
    sessions = getattr(resp, "sessions", None)
    cursor = getattr(resp, "next_cursor", getattr(resp, "cursor", None))
    return list(sessions if sessions is not None else resp), cursor


async def _page_timings(svc: Any, user: str, n: int, page: int) -> Result:
    async def _first() -> Any:
        return await svc.list_sessions_page(app_name=APP, user_id=user, limit=page, cursor=None)

    sessions, cursor = _page_parts(await _first())
    assert len(sessions) == min(page, n), len(sessions)
    out: Result = {f"list_sessions_page_{page}_of_{n}_first": summarize(await time_async_repeated(_first, min_reps=10, max_reps=100, budget_s=3))}
    # walk to the middle of the listing, then time that page (keyset paging should not get slower)
    seen = len(sessions)
    while cursor is not None and seen < n // 2:
        sessions, cursor = _page_parts(await svc.list_sessions_page(app_name=APP, user_id=user, limit=page, cursor=cursor))
        seen += len(sessions)
    if cursor is not None:
        mid = cursor

        async def _mid() -> Any:
            return await svc.list_sessions_page(app_name=APP, user_id=user, limit=page, cursor=mid)

        out[f"list_sessions_page_{page}_of_{n}_middle"] = summarize(await time_async_repeated(_mid, min_reps=10, max_reps=100, budget_s=3))
    return out


async def phase_growing(systems: Systems, events: list[Event], n_append: int, sizes: list[int]) -> dict[str, Result]:
    """One session per system grows to max(sizes), event by event, systems alternating. The first
    ``n_append`` appends are the append benchmark; at each size get_session full and last-20 are timed."""
    sess = {s.name: await s.svc.create_session(app_name=APP, user_id="u-grow", session_id="grow", state={"user:tier": "gold"})
            for s in systems}
    out: dict[str, Result] = {s.name: {} for s in systems}
    head: dict[str, list[float]] = {s.name: [] for s in systems}
    deep: dict[str, list[float]] = {s.name: [] for s in systems}
    done = 0
    for size in sorted(set(sizes) | {n_append}):
        for i in range(done, size):
            for s in _order(systems, i):
                await s.append_timed(sess[s.name], events[i:i + 1], head[s.name] if i < n_append else deep[s.name])
        done = size
        if size not in sizes:
            continue
        for label, cfg in (("full", None), ("last20", GetSessionConfig(num_recent_events=20))):
            async def _get(s: System, cfg: GetSessionConfig | None = cfg, want: int = size) -> None:
                got = await s.svc.get_session(app_name=APP, user_id="u-grow", session_id="grow", config=cfg)
                assert len(got.events) == (want if cfg is None else min(20, want)), len(got.events)

            budget = 8.0 if size >= 5000 else 4.0
            calls: dict[str, Callable[[], Awaitable[Any]]] = {s.name: (lambda s=s: _get(s)) for s in systems}
            ours = next((s for s in systems if s.name == "ours"), None)
            if label == "full" and size == max(sizes) and ours is not None:
                # interleaved with the loads it is the floor of (a separate run drifts with the machine)
                from adk_oceanbase.sessions import codec

                payloads = await stored_payloads(ours.svc, "u-grow", "grow")
                calls["validation_floor"] = lambda: asyncio.to_thread(codec.decode_events, payloads)
            for name, xs in (await time_async_paired(calls, min_reps=5, max_reps=50, budget_s=budget)).items():
                if name == "validation_floor":
                    out["ours"][f"validation_floor_{size}"] = {**summarize(xs), "events": len(payloads)}
                else:
                    out[name][f"get_session_{label}_{size}"] = summarize(xs)
    for s in systems:
        lat = head[s.name]
        out[s.name][f"append_event_{len(lat)}"] = {**summarize(lat), "events_per_s": len(lat) / sum(lat)}
        if deep[s.name]:
            d = deep[s.name]
            out[s.name][f"append_event_deep_{n_append}_to_{max(sizes)}"] = {**summarize(d), "events_per_s": len(d) / sum(d)}
    return out


async def stored_payloads(svc: Any, user: str, sid: str) -> list[str]:
    """Our stored event payloads of one session, for the validation floor.

    The floor is what turning them into ``Event`` objects costs by itself (JSON parse + pydantic
    validation in a worker thread, the garbage collector paused, as ``get_session`` does it).  Both
    services pay it on a full load: ADK's ``StorageEvent.to_event`` validates every stored
    ``event_data`` with ``Event.model_validate`` too; what a load costs above it is the service's own
    (reading rows, the ORM, building the session)."""
    from adk_oceanbase.sessions.queries import RAW_SELECT_LIVE_EVENTS

    async with svc._db.engine.connect() as conn:
        rows = (await conn.exec_driver_sql(RAW_SELECT_LIVE_EVENTS, {"app": APP, "user": user, "sid": sid})).all()
    return [r[1] for r in rows]


async def phase_writers(systems: Systems, seed: int, writers: int, per_writer: int, rounds: int = 3) -> dict[str, Result]:
    """``writers`` concurrent tasks, each appending ``per_writer`` events to its own session; the
    systems take turns for ``rounds`` rounds (fresh sessions each round), events/s over total wall time."""
    wl = Workload(seed, "writers")
    batches = [wl.take(per_writer) for _ in range(writers)]
    lat: dict[str, list[float]] = {s.name: [] for s in systems}
    wall: dict[str, float] = {s.name: 0.0 for s in systems}
    for r in range(rounds):
        for s in _order(systems, r):
            sessions = [await s.svc.create_session(app_name=APP, user_id=f"u-w{i}", session_id=f"w{r}-{i}") for i in range(writers)]
            gc.collect()
            with Timer() as t:
                await asyncio.gather(*(s.append_timed(sessions[i], batches[i], lat[s.name]) for i in range(writers)))
            wall[s.name] += t.elapsed
    total = writers * per_writer * rounds
    return {s.name: {f"concurrent_writers_{writers}": {**summarize(lat[s.name]), "events": total, "rounds": rounds,
                                                       "wall_s": wall[s.name], "events_per_s": total / wall[s.name]}}
            for s in systems}


async def phase_compaction(systems: Systems, size: int, keep: int, seed: int) -> dict[str, Result]:
    """Appends one ADK compaction event covering all but the last ``keep`` raw events of the
    ``size``-event session, then times the DEFAULT load and counts what reaches the model."""
    wl = Workload(seed, "compaction")
    summary, comp_id = wl._text(250, 400), wl._id()
    out: dict[str, Result] = {s.name: {} for s in systems}
    before: dict[str, int] = {}
    for s in systems:
        full = await s.svc.get_session(app_name=APP, user_id="u-grow", session_id="grow")
        raw = [e for e in full.events if not (e.actions and e.actions.compaction)]
        before[s.name], counter = token_estimate(model_contents(raw))
        comp = Event(
            id=comp_id, invocation_id="e-compaction", author=AGENT,
            actions=EventActions(compaction=EventCompaction(
                start_timestamp=raw[0].timestamp, end_timestamp=raw[-keep - 1].timestamp,
                compacted_content=types.Content(role="model", parts=[types.Part(text=summary)]))),
        )
        comp.timestamp = time.time()
        await s.svc.append_event(full, comp)
    loaded: dict[str, Any] = {}

    async def _load(s: System) -> None:
        loaded[s.name] = await s.svc.get_session(app_name=APP, user_id="u-grow", session_id="grow")

    for name, xs in (await _paired(systems, _load, min_reps=5, max_reps=50, budget_s=8)).items():
        contents = model_contents(loaded[name].events)
        tokens, counter = token_estimate(contents)
        out[name][f"compacted_default_load_{size}"] = {
            **summarize(xs),
            "events_loaded": len(loaded[name].events),
            "tokens_to_model_uncompacted": before[name],
            "tokens_to_model": tokens,
            "token_counter": counter,
            "contents_digest": hashlib.sha256(
                json.dumps([c.model_dump(mode="json", exclude_none=True) for c in contents], sort_keys=True).encode()
            ).hexdigest()[:16],
        }
    for s in systems:
        if "include_compacted" not in inspect.signature(s.svc.get_session).parameters:
            continue
        # ours: also time the explicit "skip what a summary covers" load, whatever the default is
        async def _load_excl(s: System = s) -> None:
            loaded["x"] = await s.svc.get_session(app_name=APP, user_id="u-grow", session_id="grow", include_compacted=False)

        excl = await time_async_repeated(_load_excl, min_reps=5, max_reps=50, budget_s=5)
        x_tokens, _ = token_estimate(model_contents(loaded["x"].events))
        out[s.name][f"compacted_load_include_compacted_false_{size}"] = {
            **summarize(excl), "events_loaded": len(loaded["x"].events), "tokens_to_model": x_tokens,
        }
    return out


async def phase_service_compaction(sys_: System, events: list[Event], keep: int) -> Result:
    """Ours only: compact a fresh copy of the session service-side (keep the newest ``keep`` events)."""
    from adk_oceanbase.compaction import KeepLastN

    svc = sys_.svc
    sess = await svc.create_session(app_name=APP, user_id="u-cmp", session_id="cmp")
    await sys_.append_timed(sess, events, None)
    t0 = time.perf_counter()
    await svc.compact_session(app_name=APP, user_id="u-cmp", session_id="cmp", policy=KeepLastN(keep_last=keep, min_batch=1))
    compact_s = time.perf_counter() - t0
    loaded: dict[str, Any] = {}

    async def _load() -> None:
        loaded["s"] = await svc.get_session(app_name=APP, user_id="u-cmp", session_id="cmp")

    samples = await time_async_repeated(_load, min_reps=5, max_reps=50, budget_s=5)
    tokens, counter = token_estimate(model_contents(loaded["s"].events))
    return {
        f"service_compacted_default_load_{len(events)}": {
            **summarize(samples), "compact_session_s": compact_s, "events_loaded": len(loaded["s"].events),
            "tokens_to_model": tokens, "token_counter": counter,
        }
    }


# =========================================================================== main
async def run(args: argparse.Namespace, host: str, port: int, user: str, pw: str | None) -> dict[str, Any]:
    systems: list[System] = []
    if args.only in ("adk", "both"):
        patch_adk_table_setup()
        print("baseline patched: " + BASELINE_PATCH)
        systems.append(await make_adk(host, port, user, pw, args.db_prefix + "_adk"))
        if args.adk_tuned:
            pool = ours_pool_settings()
            print("ADK with our pool settings (adk_tuned): DatabaseSessionService(url, **" + json.dumps(pool) + ")")
            systems.append(await make_adk(host, port, user, pw, args.db_prefix + "_adk_tuned", name="adk_tuned",
                                          engine_kwargs=pool))
    if args.only in ("ours", "both"):
        ours_sys = await make_ours(host, port, user, pw, args.db_prefix + "_ours")
        if ours_sys is not None:
            systems.append(ours_sys)
    results: dict[str, Result] = {s.name: {} for s in systems}
    max_size = max(args.sizes)
    grow_events = Workload(args.seed, "grow").take(max(max_size, args.events))
    gc.collect()
    gc.freeze()  # long-lived workload objects stay out of every later collection (both services alike)

    async def each(title: str, coro: Awaitable[dict[str, Result]]) -> None:
        with Timer() as t:
            res = await coro
        for name, r in res.items():
            results[name].update(r)
        print(f"  {title:<28} {'+'.join(s.name for s in systems):<9} done in {t.elapsed:6.1f} s")

    print("\n== phases (each service in its own fresh database on the same server; samples interleaved)")
    await each("create + list sessions", phase_sessions(systems, args.seed, args.sessions, args.page))
    await each("append + get_session", phase_growing(systems, grow_events, args.events, args.sizes))
    await each("concurrent writers", phase_writers(systems, args.seed, args.writers, args.writer_events))
    await each("compaction (ADK event)", phase_compaction(systems, max_size, args.compact_keep, args.seed))
    for s in systems:
        if s.name == "ours":
            with Timer() as t:
                results["ours"].update(await _guarded(phase_service_compaction(s, grow_events[:max_size], args.compact_keep)))
            print(f"  {'compaction (service)':<28} ours  done in {t.elapsed:6.1f} s")
    for s in systems:
        await s.svc.close()
    adk, ours, tuned = results.get("adk", {}), results.get("ours", {}), results.get("adk_tuned", {})
    comp_key = f"compacted_default_load_{max_size}"
    if comp_key in adk and comp_key in ours:
        same = adk[comp_key]["contents_digest"] == ours[comp_key]["contents_digest"]
        print(f"  model contents from ours' default load == from ADK's full load: {same}")
        ours[comp_key]["contents_equal_to_adk"] = same
    ratios = print_report(adk, ours, tuned)
    targets = check_targets(adk, ours, args, tuned) if ours else []
    out = {"adk": adk, "ours": ours, "ratios_ours_over_adk": ratios["adk"], "targets": targets}
    if tuned:
        out.update({"adk_tuned": tuned, "adk_tuned_engine_kwargs": ours_pool_settings(),
                    "ratios_ours_over_adk_tuned": ratios["adk_tuned"]})
    return out


async def _guarded(coro: Awaitable[Result]) -> Result:
    try:
        return await coro
    except Exception as exc:  # an unfinished feature must not lose the rest of the run
        return {"service_compaction": f"failed: {type(exc).__name__}: {exc}"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--url", help="server URL (mysql+aiomysql:// or oceanbase://user:pw@host:port/); default: start our own seekdb")
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    p.add_argument("--seed", type=int, default=20240607, help="workload seed (same events for both services)")
    p.add_argument("--out", default=None, help="JSON results path (default: benchmarks/results/sessions-<date>.json)")
    p.add_argument("--only", choices=("adk", "ours", "both"), default="both", help="which services to run")
    p.add_argument("--sessions", type=int, default=1000, help="sessions created, then listed")
    p.add_argument("--events", type=int, default=1000, help="append_event benchmark length (one session)")
    p.add_argument("--sizes", default="100,1000,5000", help="session sizes for get_session (comma list)")
    p.add_argument("--writers", type=int, default=16, help="concurrent writers, one session each")
    p.add_argument("--writer-events", type=int, default=50, help="events per concurrent writer")
    p.add_argument("--page", type=int, default=50, help="page size for list_sessions_page")
    p.add_argument("--compact-keep", type=int, default=20, help="raw events left uncovered by the compaction")
    p.add_argument("--adk-tuned", action=argparse.BooleanOptionalAction, default=True,
                   help="also run ADK with our pool settings (pool size, no pre-ping; issue #12)")
    p.add_argument("--db-prefix", default="adkbench", help="databases <prefix>_adk, <prefix>_adk_tuned and <prefix>_ours are DROPPED and recreated")
    args = p.parse_args(argv)
    if args.quick:
        args.sessions, args.events, args.sizes, args.writer_events = 200, 200, "50,200,500", 10
    args.sizes = [int(x) for x in str(args.sizes).split(",") if x.strip()]
    return args


def _package_path() -> str | None:
    """Where ``adk_oceanbase`` was imported from (the JSON's git commit describes only this checkout)."""
    try:
        import adk_oceanbase

        return str(Path(adk_oceanbase.__file__).resolve().parent)
    except ImportError:
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore", message="Unknown schema content")
    with seekdb_or_url(args.url) as server:
        if server is not None:
            host, port, user, pw = server.host, server.port, "root", None
            print(f"started seekdb on 127.0.0.1:{port} in {server.startup_s:.1f} s ({server.base_dir})")
        else:
            host, port, user, pw = split_url(args.url)
        import pymysql

        conn = pymysql.connect(host=host, port=port, user=user, password=pw or "")
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            server_version = cur.fetchone()[0]
        conn.close()
        env = environment(PACKAGES, {"server": server_version, "server_started_by_benchmark": server is not None,
                                     "adk_oceanbase_imported_from": _package_path()})
        print_environment(env)
        print("  args: " + json.dumps({k: v for k, v in vars(args).items() if k != "url"}))
        results = asyncio.run(run(args, host, port, user, pw))
    out = args.out or str(Path(__file__).resolve().parent / "results" / f"sessions-{env['date_utc'][:10]}{'-quick' if args.quick else ''}.json")
    write_json(out, {"benchmark": "sessions", "environment": env, "args": {k: v for k, v in vars(args).items() if k != "url"},
                     "baseline_patch": BASELINE_PATCH, **results})
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
