"""Sync calls into an async saver or store: each runs on the event loop that owns its connections.

aiomysql connections belong to the loop that opened them, so every call of a
saver (or store) runs on one loop, its *home*: the loop of its first async
call, or, when a sync method comes first (``graph.invoke``), a private loop
in a daemon thread.  A sync method called from a thread without a running
loop waits for the home loop's answer; one called on the home loop itself
would deadlock and raises instead, naming the async method to use (as
LangGraph's ``AsyncPostgresSaver`` does).  An async call from another loop is
handed to the home loop and awaited.

:class:`HomeLifecycle` is the opening and closing both the saver and the store
offer on top of that (``from_url``, ``from_conn_string``, ``aclose`` /
``close``, ``async with`` / ``with``), written once.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Self, TypeVar

from ..errors import ConfigurationError

__all__ = ["Home", "HomeLifecycle"]

T = TypeVar("T")


class Home:
    """The loop a saver's or store's I/O runs on."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _alive(self) -> bool:
        return self.loop is not None and not self.loop.is_closed()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Runs ``work()`` on the home loop (adopting the current one if there is none yet) and returns its result."""
        current = asyncio.get_running_loop()
        with self._lock:
            if not self._alive():
                self.loop = current
        if self.loop is current:
            return await work()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_call(work), self.loop))  # type: ignore[arg-type]

    def run_sync(self, work: Callable[[], Awaitable[T]], name: str) -> T:
        """Runs ``work()`` on the home loop from synchronous code and waits for it."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        with self._lock:
            if not self._alive() or not self.loop.is_running():  # type: ignore[union-attr]
                self._start_private()
        if running is self.loop:
            raise ConfigurationError(
                f"the synchronous {name}() was called on the event loop this object runs on, where it would "
                f"deadlock: await a{name}() instead"
            )
        return asyncio.run_coroutine_threadsafe(_call(work), self.loop).result()  # type: ignore[arg-type]

    def _start_private(self) -> None:
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        self._thread = threading.Thread(target=serve, name="adk-oceanbase-langgraph", daemon=True)
        self._thread.start()
        started.wait()
        self.loop = loop

    def stop(self) -> None:
        """Stops the private loop, if one was started (after the owner released its connections on it)."""
        if self._thread is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            self.loop.close()
            self._thread, self.loop = None, None


async def _call(work: Callable[[], Awaitable[Any]]) -> Any:
    return await work()


class HomeLifecycle:
    """Opening and closing for an object whose I/O runs on its :class:`Home` (the saver and the store).

    The class sets ``self._home`` and defines ``_close()``, the coroutine that
    releases what it owns (run on the home loop, after the work in flight).
    """

    _home: Home

    async def _close(self) -> None:  # pragma: no cover - every user defines it
        raise NotImplementedError

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Self:
        """One on ``url`` (nothing connects until first use)."""
        return cls(url, **kwargs)  # type: ignore[call-arg]

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, url: str, **kwargs: Any) -> AsyncIterator[Self]:
        """``async with Cls.from_conn_string(url) as obj``: closed on exit (LangGraph's savers' idiom)."""
        obj = cls(url, **kwargs)  # type: ignore[call-arg]
        try:
            yield obj
        finally:
            await obj.aclose()

    async def aclose(self) -> None:
        """Releases the engine and embedded seekdb if this object created them (after the work in flight)."""
        await self._home.run(self._close)

    def close(self) -> None:
        """:meth:`aclose` from synchronous code; also stops the private loop a sync first call started."""
        self._home.run_sync(self._close, "close")
        self._home.stop()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
