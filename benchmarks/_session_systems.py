"""The session services under test for ``sessions.py``: ADK's ``DatabaseSessionService`` and ours, and what the model would see.

Shared by ``sessions.py`` (an entry script): it sits below it, next to ``_session_workload.py``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from _common import ensure_database  # script-style import: the entry script put benchmarks/ on sys.path
from _session_workload import AGENT, build_url, fresh
from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService
from google.genai import types


# =========================================================================== what the model sees
def token_estimate(contents: list[types.Content]) -> tuple[int, str]:
    """Tokens of the contents ADK would hand the model (our estimator when importable, else chars/4)."""
    try:
        from adk_oceanbase.tokens import EstimatingTokenCounter

        counter, name = EstimatingTokenCounter().count, "adk_oceanbase.tokens.EstimatingTokenCounter"
    except Exception:  # package not importable: keep the benchmark usable for the baseline alone
        counter, name = (lambda s: (len(s) + 3) // 4), "chars/4"
    total = 0
    for content in contents:
        for part in content.parts or []:
            if part.text:
                total += counter(part.text)
            if part.function_call:
                total += counter(json.dumps(part.function_call.model_dump(mode="json", exclude_none=True)))
            if part.function_response:
                total += counter(json.dumps(part.function_response.model_dump(mode="json", exclude_none=True)))
    return total, name


def model_contents(events: list[Event]) -> list[types.Content]:
    """What ADK's content processor builds from these events (applies compaction the way the Runner does)."""
    from google.adk.flows.llm_flows.contents import _get_contents

    return _get_contents(None, events, AGENT)


# =========================================================================== systems
@dataclass
class System:
    """One session service under test and how to reach it."""

    name: str
    svc: Any

    async def append_timed(self, session: Any, events: list[Event], lat: list[float] | None) -> None:
        for tmpl in events:
            ev = fresh(tmpl)
            t0 = time.perf_counter()
            await self.svc.append_event(session, ev)
            if lat is not None:
                lat.append(time.perf_counter() - t0)


def ours_pool_settings() -> dict[str, Any]:
    """Our engine's pool settings (``adk_oceanbase.config.Config`` defaults, ``engine.py``) as engine kwargs.

    ``DatabaseSessionService`` forwards extra keyword arguments to
    ``create_async_engine``, so ADK can run with the same pool (issue #12):
    size, overflow, recycle, timeout, and no pre-ping (ADK's default is
    ``pool_pre_ping=True``: one more round trip on every checkout).  Our
    ``pool_reset_on_return=None`` is left out: ADK's read sessions end
    without COMMIT and rely on the pool's reset.
    """
    try:
        from adk_oceanbase.config import Config

        cfg = Config()
        sizes = {"pool_size": cfg.pool_size, "max_overflow": cfg.max_overflow,
                 "pool_recycle": cfg.pool_recycle, "pool_timeout": cfg.pool_timeout}
    except Exception:  # package not importable: the documented defaults
        sizes = {"pool_size": 10, "max_overflow": 20, "pool_recycle": 3600, "pool_timeout": 30.0}
    return {**sizes, "pool_pre_ping": False}


async def make_adk(host: str, port: int, user: str, pw: str | None, db: str, *, name: str = "adk",
                   engine_kwargs: dict[str, Any] | None = None) -> System:
    ensure_database(host, port, user, pw, db, fresh=True)
    svc = DatabaseSessionService(build_url("mysql+aiomysql", host, port, user, pw, db), **(engine_kwargs or {}))
    await svc.prepare_tables()
    return System(name, svc)


async def make_ours(host: str, port: int, user: str, pw: str | None, db: str) -> System | None:
    try:
        from adk_oceanbase import OceanBaseSessionService
    except ImportError as exc:
        print(f"!! ours skipped: adk_oceanbase.OceanBaseSessionService not importable ({exc})")
        return None
    ensure_database(host, port, user, pw, db, fresh=True)
    svc = OceanBaseSessionService(build_url("oceanbase", host, port, user, pw, db))
    await svc.setup()
    return System("ours", svc)
