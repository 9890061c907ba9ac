"""The session half: ``OceanBaseSessionService``, the ``SessionStore`` below it, and their SQL and codecs."""

from .service import OceanBaseSessionService, SessionPage
from .store import SessionStore

__all__ = ["OceanBaseSessionService", "SessionPage", "SessionStore"]
