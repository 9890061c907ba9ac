"""Registers our URL schemes with ADK's service registry, for ``adk web`` / ``adk api_server``.

ADK picks services by URL scheme.  Put this in your agents directory's
``services.py``::

    from adk_oceanbase.adk_services import register
    register()

then ``adk web --session_service_uri seekdb:///path/to/dir agents/`` (or
``oceanbase://user:pw@host:2881/db``) and ``--memory_service_uri`` with the
same forms.  ``mysql+aiomysql://`` stays ADK's own DatabaseSessionService
unless you register ``ob+mysql`` style aliases yourself.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMES", "register"]

SCHEMES = ("seekdb", "oceanbase")


def _session_factory(uri: str, **kwargs: Any):
    from .sessions import OceanBaseSessionService

    kwargs.pop("agents_dir", None)
    return OceanBaseSessionService(uri, **kwargs)


def _memory_factory(uri: str, **kwargs: Any):
    from .memory import OceanBaseMemoryService

    kwargs.pop("agents_dir", None)
    return OceanBaseMemoryService(uri, **kwargs)


def register(registry: Any = None) -> None:
    """Registers ``seekdb://`` and ``oceanbase://`` for session and memory services. Idempotent."""
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()
    for scheme in SCHEMES:
        registry.register_session_service(scheme, _session_factory)
        registry.register_memory_service(scheme, _memory_factory)
