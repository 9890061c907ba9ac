"""What the split check (``ProceduralSettings.split_p``) adds to ``extract_session``: one scenario of N runs.

    python benchmarks/procedural_split_cost.py [--runs 150] [--extractions 20] [--url ...]

After a run is filed, the store reads its scenario's newest ``split_window``
(200) runs, request vectors included (2 kB each), under the scope's lock,
and groups them into wording clusters.  This fills two apps on one server
with the same N runs of one task (four wordings, four tool paths: nothing to
split, so only the check's cost shows), then times ``extract_session`` of
new runs of that task, alternating between the app with the check
(``split_p`` 0.01) and the app without it (``None``).  The embedder maps a
request to a fixed vector near its wording's centre in microseconds, so the
time is the store's.  Read the ratio: the machine is shared.

A throw-away seekdb server is started unless ``--url`` names a database.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import ensure_database, environment, print_environment, seekdb_or_url, write_json  # noqa: E402

from adk_oceanbase import Config, Database  # noqa: E402
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore  # noqa: E402

WORDINGS = 4
PATHS = [["lookup"], ["lookup", "refund"], ["search", "lookup", "refund"], ["ticket"]]
_CENTRE = np.random.default_rng(0).normal(size=384)


class WordingEmbedder:
    """``"wording W #n"`` -> a unit vector at ~0.9 of wording W's centre, which is ~0.7 from the task's."""

    model_name, dim = "split-cost-384", 384

    def embed(self, texts):
        out = []
        for t in texts:
            w, n = t.split(" #")
            seed = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
            wording = np.random.default_rng(int(w.split()[-1]) + 1).normal(size=384)
            v = 1.4 * _CENTRE / np.linalg.norm(_CENTRE) + wording / np.linalg.norm(wording)
            noise = np.random.default_rng(seed).normal(size=384)
            v = v / np.linalg.norm(v) + 0.45 * noise / np.linalg.norm(noise)
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)


def _session(app: str, k: int):
    """Run ``k`` as an ADK session: the request, one function call and response per tool, the outcome."""
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.session import Session
    from google.genai import types

    inv, t = "i", 1_700_000_000.0 + k
    events = [Event(invocation_id=inv, author="user", timestamp=t,
                    content=types.Content(role="user", parts=[types.Part(text=f"wording {k % WORDINGS} #{k}")]))]
    for n, tool in enumerate(PATHS[(k // WORDINGS) % len(PATHS)]):
        cid = f"c{k}-{n}"
        events.append(Event(invocation_id=inv, author="agent", timestamp=t + 0.001 * (2 * n + 1), content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(id=cid, name=tool, args={}))])))
        events.append(Event(invocation_id=inv, author="agent", timestamp=t + 0.001 * (2 * n + 2), content=types.Content(
            role="user", parts=[types.Part(function_response=types.FunctionResponse(id=cid, name=tool, response={"ok": True}))])))
    events.append(Event(invocation_id=inv, author="agent", actions=EventActions(state_delta={"procedure_outcome": k % 5 != 0}),
                        content=types.Content(role="model", parts=[types.Part(text="done")])))
    return Session(id=f"s{k}", app_name=app, user_id=f"u{k % 7}", events=events)


async def main(args: argparse.Namespace) -> None:
    with seekdb_or_url(args.url) as server:
        url = args.url
        if server is not None:
            ensure_database("127.0.0.1", server.port, "root", None, "procsplitcost", fresh=True)
            url = f"oceanbase://root@127.0.0.1:{server.port}/procsplitcost"
        env = environment(["sqlalchemy", "pylibseekdb"], {"runs": args.runs, "extractions": args.extractions})
        print_environment(env)
        db = Database(Config.from_url(url))
        from adk_oceanbase import migrations

        await migrations.upgrade(db)
        emb = WordingEmbedder()
        stores = {p: ProcedureStore(database=db, embedder=emb, settings=ProceduralSettings(split_p=p)) for p in (None, 0.01)}
        apps = {None: "cost_off", 0.01: "cost_on"}
        for p, store in stores.items():
            for k in range(args.runs):
                await store.extract_session(_session(apps[p], k))
        times: dict = {None: [], 0.01: []}
        for i in range(args.extractions):
            for p in ((None, 0.01) if i % 2 == 0 else (0.01, None)):
                s = _session(apps[p], args.runs + i)
                t = time.perf_counter()
                await stores[p].extract_session(s)
                times[p].append((time.perf_counter() - t) * 1000)
        off, on = statistics.median(times[None]), statistics.median(times[0.01])
        from sqlalchemy import text

        async with db.engine.connect() as conn:
            got = (await conn.execute(text("SELECT app_name, COUNT(DISTINCT scenario_id) FROM procedure_runs "
                                           "WHERE app_name LIKE 'cost_%' GROUP BY app_name ORDER BY app_name"))).all()
        result = {"runs": args.runs, "extract_ms_off": round(off, 1), "extract_ms_on": round(on, 1),
                  "on_over_off": round(on / off, 2), "scenarios": {r[0]: int(r[1]) for r in got}, "environment": env}
        print(result)
        if args.out:
            write_json(args.out, result)
        for store in stores.values():
            await store.close()
        await db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--extractions", type=int, default=20)
    parser.add_argument("--url", default=None)
    parser.add_argument("--out", default=None)
    asyncio.run(main(parser.parse_args()))
