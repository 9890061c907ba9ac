"""Agno's database on this store: ``OceanBaseAgnoDb`` (Agno's ``BaseDb``) and ``AsyncOceanBaseAgnoDb`` (``AsyncBaseDb``).

Needs the ``agno`` extra (``pip install 'adk-oceanbase[agno]'``).  Sessions,
runs, metrics, evals, knowledge, learnings, traces and spans live in the
``agno_ob_*`` tables of the Alembic chain; user memories are rows of
``agent_memories``, shared with the ADK memory service of the same app and
user and searched for relevance by its hybrid retrieval
(``search_user_memories``).
"""

try:
    import agno.db.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("adk_oceanbase.agno needs Agno: pip install 'adk-oceanbase[agno]'") from exc

from .db import AsyncOceanBaseAgnoDb, OceanBaseAgnoDb

__all__ = ["AsyncOceanBaseAgnoDb", "OceanBaseAgnoDb"]
