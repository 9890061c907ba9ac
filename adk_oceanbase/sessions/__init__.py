"""The session half: ``OceanBaseSessionService`` and its SQL and codecs."""

from .service import OceanBaseSessionService, SessionPage

__all__ = ["OceanBaseSessionService", "SessionPage"]
