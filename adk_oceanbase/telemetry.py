"""OpenTelemetry spans and metrics for every public service call; free when no provider is configured.

Only the OpenTelemetry *API* is used (``opentelemetry-api``, which ADK itself
depends on): the application chooses the SDK and exporters, as with ADK's own
spans, and ours nest under ADK's ``invoke_agent`` / ``call_llm`` spans.

* A span per call, ``adk_oceanbase.<method>`` (kind CLIENT), with
  ``db.system`` (the dialect's: ``oceanbase`` for OceanBase and seekdb, else ``mysql``),
  ``db.name``, ``db.operation.name``, ``adk.app_name``, rows returned or
  written where the result already holds them, and ``error.type`` plus an
  ERROR status on failure.
* Histograms ``adk_oceanbase.append_event.duration`` and
  ``adk_oceanbase.search.duration`` (seconds), and an observable gauge
  ``adk_oceanbase.vectorizer.queue_depth`` (memory rows waiting in this
  process's embedding queues, per database).

Cost without a provider: the call runs bare, no span, attribute or clock
read beyond one ``time.monotonic()``; the global providers are looked up at
most once a second (the API's getters cost ~1.1 us each), so a provider
configured after the first call is picked up within a second.  Once both are
real, the tracer and instruments are cached for good (OpenTelemetry lets a
global provider be set only once).  Measured (``benchmarks/telemetry.py``, 2
vCPU): +0.4-0.55 us per call, almost all of it the wrapper's own coroutine
frame, against ~1 ms for ``append_event`` (p50 1.004 vs 0.999 ms bare over
2,000 interleaved appends, within noise); with the SDK recording, +10%.
"""

from __future__ import annotations

import functools
import time
import weakref
from typing import Any, Awaitable, Callable, Iterable, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, MeterProvider, NoOpMeterProvider, Observation
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, SpanKind, Status, StatusCode, TracerProvider

# The API exports no public name for the placeholder that get_meter_provider()
# returns before set_meter_provider() (its tracing twin, ProxyTracerProvider, is public).
from opentelemetry.metrics._internal import _ProxyMeterProvider

from .dialects import dialect_for_config

__all__ = ["current_meter", "current_tracer", "set_providers", "traced"]

_SCOPE = "adk_oceanbase"
_UNSET_TRACING = (ProxyTracerProvider, NoOpTracerProvider)
_UNSET_METRICS = (_ProxyMeterProvider, NoOpMeterProvider)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def _rows(result: Any) -> int | None:
    """Rows a read returned, from what the result already holds (no extra work)."""
    if result is None:
        return 0
    for attr in ("events", "sessions", "memories"):
        items = getattr(result, attr, None)
        if isinstance(items, list):
            return len(items)
    if isinstance(result, list):
        return len(result)
    return None


# What each method reports about rows: returned (reads) or written (appends).
_RETURNED = {"get_session", "list_sessions", "list_sessions_page", "search", "search_memory"}
_WRITTEN = {"append_event": lambda event: 0 if getattr(event, "partial", False) else 1}


class _Instruments:
    """The tracer and metric instruments of one configured provider pair."""

    def __init__(self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None):
        from . import __version__

        self.tracer = tracer_provider.get_tracer(_SCOPE, __version__) if tracer_provider else None
        self.latency: dict[str, Any] = {}
        self.meter = None
        if meter_provider is None:
            return
        self.meter = meter = meter_provider.get_meter(_SCOPE, __version__)
        for op, what in (("append_event", "append_event"), ("search", "memory search")):
            self.latency[op] = meter.create_histogram(
                f"{_SCOPE}.{op}.duration", unit="s", description=f"Duration of {what} calls"
            )
        meter.create_observable_gauge(
            f"{_SCOPE}.vectorizer.queue_depth",
            callbacks=[_observe_queues],
            unit="{memory}",
            description="Memory rows queued for embedding, per database",
        )


# While a provider is missing, the globals are looked at again at most this often:
# the API's getters cost ~1.1 us each (measured), more than the rest of the no-provider path.
_RECHECK_S = 1.0


class _State:
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    active: _Instruments | None = None
    complete = False
    """Both providers are real: nothing left to discover, no more checks."""
    recheck_at = 0.0
    built: dict[tuple[Any, Any], _Instruments] = {}
    memory_services: "weakref.WeakSet[Any]" = weakref.WeakSet()


def set_providers(*, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None) -> None:
    """Reports to these providers instead of the global ones (``None``: back to the globals).

    Like the ``tracer_provider=`` argument of OpenTelemetry's instrumentations;
    the default, the globals set with ``trace.set_tracer_provider`` /
    ``metrics.set_meter_provider``, needs no call at all.
    """
    _State.tracer_provider, _State.meter_provider = tracer_provider, meter_provider
    _State.complete, _State.recheck_at = False, 0.0


def _instruments() -> _Instruments | None:
    """The instruments of the configured providers, or ``None`` when neither is configured.

    A provider configured after the first call is picked up within ``_RECHECK_S``.
    """
    if not _State.complete:
        now = time.monotonic()
        if now >= _State.recheck_at:
            _State.recheck_at = now + _RECHECK_S
            _resolve()
    return _State.active


def _resolve() -> None:
    tp = _State.tracer_provider or trace.get_tracer_provider()
    mp = _State.meter_provider or metrics.get_meter_provider()
    real = (None if isinstance(tp, _UNSET_TRACING) else tp, None if isinstance(mp, _UNSET_METRICS) else mp)
    if real == (None, None):
        _State.active = None
    else:
        if real not in _State.built:
            _State.built[real] = _Instruments(*real)
        _State.active = _State.built[real]
    _State.complete = None not in real


def current_meter() -> Any | None:
    """The meter of the configured provider, or ``None`` when none is: for the instruments other modules own.

    Same discovery as :func:`traced` (``set_providers`` or the globals, looked up at most once a second).
    """
    ins = _instruments()
    return ins.meter if ins is not None else None


def current_tracer() -> Any | None:
    """The tracer of the configured provider, or ``None`` when none is."""
    ins = _instruments()
    return ins.tracer if ins is not None else None


def _observe_queues(options: CallbackOptions) -> Iterable[Observation]:
    """Rows queued per database, summed over this process's memory services that have been called."""
    depth: dict[str, int] = {}
    for service in list(_State.memory_services):
        name = service.config.database
        depth[name] = depth.get(name, 0) + service.vectorizer.queue_depth
    return [Observation(n, {"db.name": name}) for name, n in depth.items()]


def _app_name(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    app = kwargs.get("app_name")
    if app is None and args:
        app = args[0] if isinstance(args[0], str) else getattr(args[0], "app_name", None)
    return app if isinstance(app, str) else None


def traced(method: F) -> F:
    """Wraps a public async service method in a span and its latency histogram (if it has one)."""
    op = method.__name__
    span_name = f"{_SCOPE}.{op}"
    written = _WRITTEN.get(op)

    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        ins = _instruments()
        if ins is None:
            return await method(self, *args, **kwargs)
        config = self.config
        attrs: dict[str, Any] = {
            "db.system": dialect_for_config(config).db_system,
            "db.name": config.database,
            "db.operation.name": op,
        }
        app = _app_name(args, kwargs)
        if app is not None:
            attrs["adk.app_name"] = app
        if hasattr(self, "vectorizer"):
            _State.memory_services.add(self)
        histogram = ins.latency.get(op)
        span = ins.tracer.start_span(span_name, kind=SpanKind.CLIENT, attributes=attrs) if ins.tracer else None
        started = time.perf_counter()
        error: str | None = None
        try:
            if span is None:
                result = await method(self, *args, **kwargs)
            else:
                with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                    result = await method(self, *args, **kwargs)
        except BaseException as exc:
            error = type(exc).__qualname__
            if span is not None:
                span.set_attribute("error.type", error)
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, error))
            raise
        else:
            if span is not None:
                if op in _RETURNED and (n := _rows(result)) is not None:
                    span.set_attribute("db.response.returned_rows", n)
                elif written is not None:
                    span.set_attribute(f"{_SCOPE}.rows_written", written(result))
            return result
        finally:
            if span is not None:
                span.end()
            if histogram is not None:
                labels = {"db.system": attrs["db.system"]}
                if error is not None:
                    labels["error.type"] = error
                histogram.record(time.perf_counter() - started, labels)

    return call  # type: ignore[return-value]
