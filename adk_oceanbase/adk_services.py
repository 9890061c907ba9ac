"""Registers our URL schemes with ADK's service registry, for ``adk web`` / ``adk api_server``.

ADK picks services by URL scheme.  Put this in your agents directory's
``services.py``::

    from adk_oceanbase.adk_services import register
    register()

then ``adk web --session_service_uri seekdb:///path/to/dir agents/`` (or
``oceanbase://user:pw@host:2881/db``) and ``--memory_service_uri`` with the
same forms.  ``mysql+aiomysql://`` stays ADK's own DatabaseSessionService
unless you register ``ob+mysql`` style aliases yourself.

ADK calls a factory as ``factory(uri, agents_dir=..., **session_db_kwargs)``.
``agents_dir`` is ADK's and dropped; keywords naming a :class:`Config` field
(``pool_size=4``) tune the connection like ``?pool_size=4`` in the URL would;
any other keyword must be a parameter of the service, else a
``ConfigurationError`` names it.
"""

from __future__ import annotations

import inspect
from typing import Any

from .config import TUNABLE_FIELDS, Config
from .errors import ConfigurationError

__all__ = ["SCHEMES", "register"]

SCHEMES = ("seekdb", "oceanbase")


def _build(service_cls: type, uri: str, kwargs: dict[str, Any]) -> Any:
    kwargs.pop("agents_dir", None)
    tuning = {k: kwargs.pop(k) for k in list(kwargs) if k in TUNABLE_FIELDS}
    accepted = set(inspect.signature(service_cls.__init__).parameters) - {"self", "url", "config"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ConfigurationError(
            f"{service_cls.__name__} does not take {', '.join(map(repr, unknown))}; "
            f"valid: {', '.join(sorted(accepted | set(TUNABLE_FIELDS)))}"
        )
    return service_cls(config=Config.from_url(uri, **tuning), **kwargs)


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
