"""LangGraph on the same database as the ADK services: a checkpointer and a long-term Store (issue 26).

Needs the ``langgraph`` extra (``pip install 'adk-oceanbase[langgraph]'``).
Importing this package connects to nothing.
"""

from __future__ import annotations

from .saver import OceanBaseSaver
from .store import OceanBaseStore

__all__ = ["OceanBaseSaver", "OceanBaseStore"]
