"""What the OpenTelemetry wrapper costs: nothing measurable without a provider, a little with one.

Two measurements, in one process:

1. the wrapper alone, around a method that does nothing (ns per call): bare,
   wrapped with no provider configured, wrapped with the SDK recording;
2. ``append_event`` p50 on a seekdb server, samples interleaved event by
   event: the undecorated method (``__wrapped__``), the decorated one with no
   provider, and the decorated one with an SDK tracer and meter provider
   (in-memory exporter and reader) -- the last only if ``opentelemetry-sdk``
   is installed.

Usage::

    python benchmarks/telemetry.py                 # starts its own seekdb server
    python benchmarks/telemetry.py --events 500 --url oceanbase://root@127.0.0.1:2881/
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's adk_oceanbase, as in sessions.py

from _common import ensure_database, environment, percentile, print_environment, seekdb_or_url  # noqa: E402


class _Config:
    flavor = "seekdb"
    database = "bench"


class _Bare:
    config = _Config()

    async def append_event(self, session: Any, event: Any) -> Any:
        return event


def _wrapped_class() -> type:
    from adk_oceanbase.telemetry import traced

    class Wrapped(_Bare):
        append_event = traced(_Bare.append_event)

    return Wrapped


async def wrapper_ns(calls: int) -> dict[str, float]:
    """Median of 5 runs of ``calls`` awaits, in ns per call."""
    bare, wrapped = _Bare(), _wrapped_class()()

    async def run(obj: Any) -> float:
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            await obj.append_event(None, None)
        return (time.perf_counter_ns() - t0) / calls

    out: dict[str, list[float]] = {"bare": [], "traced": []}
    for _ in range(5):
        out["bare"].append(await run(bare))
        out["traced"].append(await run(wrapped))
    return {k: sorted(v)[2] for k, v in out.items()}


def _sdk_providers() -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return tp, MeterProvider(metric_readers=[InMemoryMetricReader()])


async def append_p50(url: str, events: int) -> dict[str, float]:
    from google.adk.events.event import Event
    from google.genai import types

    from adk_oceanbase import OceanBaseSessionService, telemetry

    svc = OceanBaseSessionService(url)
    bare = OceanBaseSessionService.append_event.__wrapped__
    modes = ["bare", "traced, no provider"]
    sdk = importlib.util.find_spec("opentelemetry.sdk") is not None
    if sdk:
        modes.append("traced, SDK recording")
        providers = _sdk_providers()
    sessions = {m: await svc.create_session(app_name="bench", user_id="u") for m in modes}
    samples: dict[str, list[float]] = {m: [] for m in modes}
    gc.collect()
    for i in range(events):
        for m in modes if i % 2 == 0 else reversed(modes):
            event = Event(
                author="user", invocation_id=f"inv-{i}",
                content=types.Content(role="user", parts=[types.Part(text=f"message {i} " * 8)]),
            )
            if m == "traced, SDK recording":
                telemetry.set_providers(tracer_provider=providers[0], meter_provider=providers[1])
            else:
                telemetry.set_providers()
            t0 = time.perf_counter()
            if m == "bare":
                await bare(svc, sessions[m], event)
            else:
                await svc.append_event(sessions[m], event)
            samples[m].append(time.perf_counter() - t0)
    telemetry.set_providers()
    await svc.close()
    return {m: percentile(s, 50) * 1000 for m, s in samples.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", help="server URL (oceanbase://user@host:port/); default: start our own seekdb")
    p.add_argument("--events", type=int, default=2000, help="appends per mode")
    p.add_argument("--calls", type=int, default=200_000, help="calls per run of the bare-wrapper measurement")
    args = p.parse_args(argv)
    print_environment(environment(["adk-oceanbase", "google-adk", "opentelemetry-api", "opentelemetry-sdk", "pylibseekdb"]))
    ns = asyncio.run(wrapper_ns(args.calls))
    print(f"\nwrapper alone, no provider: bare {ns['bare']:.0f} ns/call, traced {ns['traced']:.0f} ns/call "
          f"(+{ns['traced'] - ns['bare']:.0f} ns)")
    with seekdb_or_url(args.url) as server:
        if server is not None:
            host, port = server.host, server.port
            url = f"oceanbase://root@{host}:{port}/telemetry_bench"
        else:
            url = args.url.rstrip("/") + "/telemetry_bench"
            host, port = url.split("@")[1].split("/")[0].split(":")
            port = int(port)
        ensure_database(host, port, "root", None, "telemetry_bench", fresh=True)
        p50 = asyncio.run(append_p50(url, args.events))
    base = p50["bare"]
    print(f"\nappend_event p50 over {args.events} appends per mode (interleaved):")
    for mode, ms in p50.items():
        print(f"  {mode:<24} {ms:7.3f} ms  ({(ms / base - 1) * 100:+.1f}% vs bare)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
