"""Sessions of tool calls for the procedural tests: ADK events built by hand, no model."""

from __future__ import annotations

import itertools
import time
from typing import Any, Mapping, Sequence

import numpy as np
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.session import Session
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.memory.embedding import HashEmbedder
from adk_oceanbase.procedural import ProceduralSettings, ProcedureStore

PROC_TABLES = ("procedure_runs", "procedure_stats", "procedure_scenarios")
_ids = itertools.count(1)


def call_events(inv: str, tools: Sequence[str | tuple[str, dict, Any]], *, t0: float | None = None) -> list[Event]:
    """One model step per tool: a function_call event and its function_response event.

    A tool is a name (answered ``{"ok": True}``) or ``(name, args, response)``.
    """
    out = []
    t = t0 or time.time()
    for step in tools:
        name, args, response = (step, {}, {"ok": True}) if isinstance(step, str) else step
        cid = f"c{next(_ids)}"
        t += 0.001
        out.append(Event(invocation_id=inv, author="agent", timestamp=t, content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(id=cid, name=name, args=args))])))
        t += 0.001
        out.append(Event(invocation_id=inv, author="agent", timestamp=t, content=types.Content(
            role="user", parts=[types.Part(function_response=types.FunctionResponse(id=cid, name=name, response=response))])))
    return out


def user_says(inv: str, text_: str, t: float | None = None) -> Event:
    return Event(invocation_id=inv, author="user", timestamp=t or time.time(),
                 content=types.Content(role="user", parts=[types.Part(text=text_)]))


def outcome(inv: str, value: Any, *, key: str = "procedure_outcome", via: str = "state") -> Event:
    if via == "state":
        return Event(invocation_id=inv, author="agent", actions=EventActions(state_delta={key: value}),
                     content=types.Content(role="model", parts=[types.Part(text="done")]))
    return Event(invocation_id=inv, author="agent", custom_metadata={key: value},
                 content=types.Content(role="model", parts=[types.Part(text="done")]))


def run(inv: str, request: str, tools: Sequence[Any], result: Any = None) -> list[Event]:
    events = [user_says(inv, request), *call_events(inv, tools)]
    if result is not None:
        events.append(outcome(inv, result))
    return events


def session(events: Sequence[Event], *, app: str = "shop", user: str = "u1", sid: str | None = None) -> Session:
    return Session(id=sid or f"s{next(_ids)}", app_name=app, user_id=user, events=list(events))


async def clear(db) -> None:
    async with db.engine.begin() as conn:
        for table in PROC_TABLES:
            await conn.execute(text(f"DELETE FROM {table}"))


def store(db, **settings: Any) -> ProcedureStore:
    return ProcedureStore(database=db, embedder=HashEmbedder(), settings=ProceduralSettings(**settings))


async def rows(db, sql: str, **params: Any) -> list[Any]:
    async with db.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).all()


class FixedEmbedder:
    """Each known text to a set vector (unit length): requests at the cosines a test chooses."""

    def __init__(self, vectors: Mapping[str, Sequence[float]], model_name: str = "fixed-3"):
        self.vectors, self.model_name = vectors, model_name
        self.dim = len(next(iter(vectors.values())))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.array([self.vectors[t] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def fixed_store(db, vectors: Mapping[str, Sequence[float]], model_name: str = "fixed-3", **settings: Any) -> ProcedureStore:
    """A store whose embedder maps each known text to its vector in ``vectors``; ``audit=`` goes to the store."""
    audit = settings.pop("audit", None)
    return ProcedureStore(database=db, embedder=FixedEmbedder(vectors, model_name), settings=ProceduralSettings(**settings),
                          audit=audit)
