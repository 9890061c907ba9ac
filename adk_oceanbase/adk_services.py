"""Registers our URL schemes with ADK's service registry, for ``adk web`` / ``adk api_server``.

ADK 2.13 picks services by URL scheme and learns new schemes only from the
agents directory: ``services.yaml`` (``cls(uri=..., agents_dir=...)``) or
``services.py`` (code that registers factories); it reads no package entry
points.  ``adk-oceanbase adk-init AGENTS_DIR`` writes the ``services.py``::

    from adk_oceanbase.adk_services import register
    register()

then ``adk web --session_service_uri seekdb:///path/to/dir AGENTS_DIR`` (or
``oceanbase://user:pw@host:2881/db``) and ``--memory_service_uri`` with the
same forms.  ``mysql+aiomysql://`` stays ADK's own DatabaseSessionService
unless you register ``ob+mysql`` style aliases yourself.

ADK calls a factory as ``factory(uri, agents_dir=..., **session_db_kwargs)``,
the keywords a ``DatabaseSessionService`` would hand to SQLAlchemy's
``create_async_engine``.  ``agents_dir`` is ADK's and dropped; ``pool_size``,
``max_overflow``, ``pool_recycle`` and ``pool_timeout`` (any :class:`Config`
field) tune the connection as ``?pool_size=4`` would; ``connect_args`` entries
that are driver options (``charset``, ``ssl_ca``, ...) go to the driver;
``echo=True`` logs SQL at INFO; :data:`IGNORED_ENGINE_KEYWORDS` are accepted
with no effect, each for the reason given; any other keyword must be a
parameter of the service, else a ``ConfigurationError`` names it.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from pathlib import Path
from typing import Any

from .config import DRIVER_OPTIONS, TUNABLE_FIELDS, Config
from .errors import ConfigurationError

__all__ = ["IGNORED_ENGINE_KEYWORDS", "SCHEMES", "SeekdbUrlNotRegistered", "register", "write_services_py"]

logger = logging.getLogger(__name__)

SCHEMES = ("seekdb", "oceanbase")

IGNORED_ENGINE_KEYWORDS = {
    "pool_pre_ping": "a pooled connection the server closed is replaced at checkout without a ping",
    "pool_use_lifo": "the pool's order does not change which connection is fresh here",
    "future": "SQLAlchemy 2 engines are always 'future' ones",
    "hide_parameters": "parameters are never logged",
    "logging_name": "logs go to the adk_oceanbase loggers",
    "pool_logging_name": "logs go to the adk_oceanbase loggers",
    "echo_pool": "pool events are logged by sqlalchemy.pool at DEBUG",
    "query_cache_size": "statements are compiled once per shape regardless",
}
"""``create_async_engine`` keywords ADK users pass via ``session_db_kwargs`` that need nothing from us."""

_SERVICES_PY = '''\
# Written by `adk-oceanbase adk-init`: ADK loads this file from the agents directory
# and learns the seekdb:// and oceanbase:// schemes for --session_service_uri / --memory_service_uri.
from adk_oceanbase.adk_services import register

register()
'''


def _build(service_cls: type, uri: str, kwargs: dict[str, Any]) -> Any:
    kwargs.pop("agents_dir", None)
    for name in [k for k in kwargs if k in IGNORED_ENGINE_KEYWORDS]:
        logger.info("session_db_kwargs %s=%r accepted with no effect: %s", name, kwargs.pop(name), IGNORED_ENGINE_KEYWORDS[name])
    if kwargs.pop("echo", False):
        logging.getLogger("sqlalchemy.engine.Engine").setLevel(logging.INFO)  # what echo=True shows
    connect_args = dict(kwargs.pop("connect_args", None) or {})
    unknown_driver = sorted(set(connect_args) - DRIVER_OPTIONS)
    if unknown_driver:
        raise ConfigurationError(
            f"connect_args {', '.join(map(repr, unknown_driver))} cannot be passed on; "
            f"valid: {', '.join(sorted(DRIVER_OPTIONS))}"
        )
    tuning = {k: kwargs.pop(k) for k in list(kwargs) if k in TUNABLE_FIELDS}
    accepted = set(inspect.signature(service_cls.__init__).parameters) - {"self", "url", "uri", "config", "agents_dir"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        valid = accepted | set(TUNABLE_FIELDS) | set(IGNORED_ENGINE_KEYWORDS) | {"echo", "connect_args"}
        raise ConfigurationError(
            f"{service_cls.__name__} does not take {', '.join(map(repr, unknown))}; valid: {', '.join(sorted(valid))}"
        )
    config = Config.from_url(uri, **tuning)
    if connect_args:
        config = dataclasses.replace(config, query={**config.query, **{k: str(v) for k, v in connect_args.items()}})
    return service_cls(config=config, **kwargs)


def _session_factory(uri: str, **kwargs: Any):
    from .sessions import OceanBaseSessionService

    return _build(OceanBaseSessionService, uri, kwargs)


def _memory_factory(uri: str, **kwargs: Any):
    from .memory import OceanBaseMemoryService

    return _build(OceanBaseMemoryService, uri, kwargs)


def register(registry: Any = None) -> None:
    """Registers ``seekdb://`` and ``oceanbase://`` for session and memory services. Idempotent."""
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()
    for scheme in SCHEMES:
        registry.register_session_service(scheme, _session_factory)
        registry.register_memory_service(scheme, _memory_factory)


def write_services_py(agents_dir: str | Path) -> str:
    """Makes ``AGENTS_DIR/services.py`` register our schemes; returns what it did, in words.

    A new file gets the two lines; an existing one that does not mention
    ``adk_oceanbase`` gets them appended (ADK runs it top to bottom, so the
    user's own registrations stay); one that does is left alone.
    """
    root = Path(agents_dir)
    if not root.is_dir():
        raise ConfigurationError(f"{root} is not a directory: pass the agents directory you give to `adk web`")
    target = root / "services.py"
    if not target.exists():
        target.write_text(_SERVICES_PY, encoding="utf-8")
        return f"wrote {target}"
    current = target.read_text(encoding="utf-8")
    if "adk_oceanbase" in current:
        return f"{target} already registers adk_oceanbase; left as it is"
    target.write_text(current + ("" if current.endswith("\n") or not current else "\n") + "\n" + _SERVICES_PY, encoding="utf-8")
    return f"added the adk_oceanbase registration to {target}"


class SeekdbUrlNotRegistered:
    """SQLAlchemy's ``seekdb`` dialect entry point: says how to register the scheme instead of "Can't load plugin".

    Without ``services.py`` ADK hands an unknown scheme to its
    ``DatabaseSessionService``, i.e. to SQLAlchemy, which looks the scheme up
    among ``sqlalchemy.dialects`` entry points.  ``seekdb`` is ours alone, so
    the package declares this class there (``pyproject.toml``); SQLAlchemy
    calls ``get_dialect_cls`` and gets the error naming the fix.
    ``oceanbase`` is not declared: another package may own that dialect name.
    """

    @classmethod
    def get_dialect_cls(cls, url: Any) -> type:
        raise ConfigurationError(
            f"{url.render_as_string(hide_password=True)} is an adk-oceanbase URL, not a SQLAlchemy one: ADK was not told "
            "about the seekdb:// scheme. Run `adk-oceanbase adk-init AGENTS_DIR` (writes AGENTS_DIR/services.py) and "
            "start adk web / adk api_server again; in Python, use adk_oceanbase.OceanBaseSessionService(url)"
        )

    get_async_dialect_cls = get_dialect_cls  # what create_async_engine asks for
