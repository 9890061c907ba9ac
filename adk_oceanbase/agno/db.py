"""Agno's ``AsyncBaseDb`` on this store, and a ``BaseDb`` facade for Agno's synchronous calls.

:class:`AsyncOceanBaseAgnoDb` is the implementation (async, like the ADK
services, on the same :class:`~adk_oceanbase.engine.Database`).
:class:`OceanBaseAgnoDb` is Agno's synchronous ``BaseDb`` (what ``Agent.run``
calls): each method runs the async one on a private event loop in a
background thread, because the engine's connections belong to one loop.
Agno picks the async path itself for an ``AsyncBaseDb`` (``Agent.arun``).
"""

from __future__ import annotations

import abc
import asyncio
import inspect
import threading
import uuid
from concurrent.futures import Future
from typing import Any, Coroutine, TypeVar

from agno.db.base import AsyncBaseDb, BaseDb
from sqlalchemy.ext.asyncio import AsyncEngine

from ..audit import AuditSettings
from ..config import Config
from ..engine import Database
from ..errors import ConfigurationError
from ..memory import Embedder, MemorySettings, OceanBaseMemoryService
from ..redaction import RedactionPolicy
from ..schema_agno import (
    agno_evals,
    agno_knowledge,
    agno_learnings,
    agno_metrics,
    agno_runs,
    agno_sessions,
    agno_spans,
    agno_traces,
    agno_versions,
)
from .core import DEFAULT_APP
from .memories import MemoriesMixin
from .records import RecordsMixin
from .runs import RunsMixin
from .sessions import SessionsMixin
from .traces import TracesMixin

__all__ = ["AsyncOceanBaseAgnoDb", "OceanBaseAgnoDb"]

T = TypeVar("T")

_TABLES = dict(
    session_table=agno_sessions.name, runs_table=agno_runs.name, memory_table="agent_memories",
    metrics_table=agno_metrics.name, eval_table=agno_evals.name, knowledge_table=agno_knowledge.name,
    traces_table=agno_traces.name, spans_table=agno_spans.name, versions_table=agno_versions.name,
    learnings_table=agno_learnings.name,
)


def _db_id(app_name: str, where: str) -> str:
    """A stable id per store and app (AgentOS tells databases apart by it), with no password in it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"adk-oceanbase:{where}#{app_name}"))


class AsyncOceanBaseAgnoDb(SessionsMixin, RunsMixin, MemoriesMixin, RecordsMixin, TracesMixin, AsyncBaseDb):
    """Agno's async database on OceanBase / seekdb / MySQL, sharing tables and memories with the ADK services.

    Args:
        url: ``seekdb:///dir``, ``oceanbase://...``, ``mysql+aiomysql://...``; default: the embedded seekdb of
            ``ADK_OCEANBASE_URL`` / ``~/.adk_oceanbase/seekdb``.
        app_name: the namespace of every row (``"agno"``): the ADK services see these memories under this app.
        config / database / engine: as for the ADK services (``database=`` shares one engine and seekdb process).
        memory: an :class:`OceanBaseMemoryService` to share (its database, embedder, settings); not closed here.
            Give it ``MemorySettings(consolidate=False)``: its vectorizer would otherwise merge near-duplicate
            memories, and a merged-away Agno memory vanishes from Agno's view.
        embedder / memory_settings: for the memory service made here (default MiniLM, like the ADK service);
            ``consolidate`` is always off there (Agno's databases never merge memories).
        redaction / audit: as for the ADK services.
        auto_setup: create the schema on first use of an empty database.
        id: Agno's database id; default derived from the URL (without password) and ``app_name``.

    Example:
        >>> from agno.agent import Agent
        >>> db = AsyncOceanBaseAgnoDb("seekdb:///var/lib/myagent")
        >>> agent = Agent(model=..., db=db, enable_user_memories=True)   # then: await agent.arun(...)
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        app_name: str = DEFAULT_APP,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        memory: OceanBaseMemoryService | None = None,
        embedder: Embedder | None = None,
        memory_settings: MemorySettings | None = None,
        redaction: RedactionPolicy | None = None,
        audit: AuditSettings | None = None,
        auto_setup: bool = True,
        id: str | None = None,
    ):
        self._init_core(url, app_name=app_name, config=config, database=database, engine=engine, memory=memory,
                        embedder=embedder, memory_settings=memory_settings, redaction=redaction, audit=audit,
                        auto_setup=auto_setup)
        AsyncBaseDb.__init__(self, id=id or _db_id(self.app_name, self._db.config.redacted_url()), **_TABLES)

    async def close(self) -> None:
        await self.aclose()

    async def __aenter__(self) -> "AsyncOceanBaseAgnoDb":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _LoopThread:
    """One event loop in a daemon thread, started on first use: the home of the async database's connections."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name="adk-oceanbase-agno", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._started()
        if threading.current_thread() is self._thread:
            coro.close()
            raise ConfigurationError("OceanBaseAgnoDb was called from its own loop: use AsyncOceanBaseAgnoDb in async code")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        return future.result()

    def stop(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()


class OceanBaseAgnoDb(BaseDb):
    """Agno's synchronous ``BaseDb`` over :class:`AsyncOceanBaseAgnoDb` (same arguments, same tables and memories).

    Example:
        >>> from agno.agent import Agent
        >>> from adk_oceanbase.agno import OceanBaseAgnoDb
        >>> db = OceanBaseAgnoDb()                      # embedded seekdb in ~/.adk_oceanbase/seekdb
        >>> agent = Agent(model=..., db=db, add_history_to_context=True, enable_user_memories=True)
        >>> agent.run("hi", user_id="u1", session_id="s1"); db.close()   # doctest: +SKIP
    """

    def __init__(self, url: str | None = None, **kwargs: Any):
        self.aio = AsyncOceanBaseAgnoDb(url, **kwargs)
        """The async database doing the work; use it directly in async code."""
        self._runner = _LoopThread()
        BaseDb.__init__(self, id=self.aio.id, **_TABLES)

    @property
    def app_name(self) -> str:
        return self.aio.app_name

    @property
    def database(self) -> Database:
        return self.aio.database

    @property
    def memory_service(self) -> OceanBaseMemoryService:
        return self.aio.memory_service

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine of :attr:`aio` (or of a service sharing its database) on the database's own loop."""
        return self._runner.run(coro)

    def close(self) -> None:
        """Closes the async database (its vectorizer, its engine and seekdb when it made them) and stops the loop."""
        try:
            self._runner.run(self.aio.aclose())
        finally:
            self._runner.stop()

    def __enter__(self) -> "OceanBaseAgnoDb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DELEGATED = (
    "table_exists", "get_latest_schema_version", "upsert_schema_version",
    "delete_session", "delete_sessions", "get_session", "get_sessions", "rename_session", "upsert_session",
    "upsert_sessions", "upsert_run", "get_run", "get_runs", "delete_run", "delete_runs",
    "clear_memories", "delete_user_memory", "delete_user_memories", "get_all_memory_topics", "get_user_memory",
    "get_user_memories", "get_user_memory_stats", "upsert_user_memory", "upsert_memories", "search_user_memories",
    "get_metrics", "calculate_metrics",
    "delete_knowledge_content", "get_knowledge_content", "get_knowledge_contents", "upsert_knowledge_content",
    "create_eval_run", "delete_eval_runs", "get_eval_run", "get_eval_runs", "rename_eval_run", "update_eval_run_user_id",
    "upsert_trace", "get_trace", "get_traces", "get_trace_stats", "create_span", "create_spans", "get_span", "get_spans",
    "get_learning", "upsert_learning", "delete_learning", "get_learnings",
)


def _delegate(name: str) -> Any:
    target = getattr(AsyncOceanBaseAgnoDb, name)

    def method(self: OceanBaseAgnoDb, *args: Any, **kwargs: Any) -> Any:
        return self._runner.run(getattr(self.aio, name)(*args, **kwargs))

    # not functools.wraps: its __wrapped__ would make the method look like a coroutine function to some callers
    method.__name__, method.__qualname__, method.__doc__ = name, f"OceanBaseAgnoDb.{name}", target.__doc__
    method.__signature__ = inspect.signature(target)  # type: ignore[attr-defined]
    return method


for _name in _DELEGATED:
    setattr(OceanBaseAgnoDb, _name, _delegate(_name))
abc.update_abstractmethods(OceanBaseAgnoDb)
