"""``adk-oceanbase demo``: a multi-turn conversation through a real ADK Runner, a resume, a recall.

Offline and key-free: the agent is a small rule-based ``BaseAgent`` (no LLM)
that keeps user facts in ``user:`` state, counts turns in session state and
keeps a scratch value in ``temp:`` state (never stored).

1. The conversation runs through ``Runner(session_service=..., memory_service=...)``
   and the session is added to memory (embedded in the background, MiniLM).
2. Everything is closed (stopping embedded seekdb); brand-new services reopen
   the same database and print the resumed session.
3. A *new* session asks about the first one: the agent answers from the
   memory service's hybrid search, printed with its per-signal scores.
4. A fact that changed (``add_memory``, last year vs last month): the question
   is worded like the old fact; the version signal lets the newer one win.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import fields
from datetime import datetime, timedelta, timezone
from typing import AsyncGenerator, Callable

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.runners import Runner
from google.genai import types

from .config import Config
from .engine import Database
from .memory import HashEmbedder, OceanBaseMemoryService, ScoreWeights, default_embedder
from .sessions import OceanBaseSessionService

SIGNALS = tuple(f.name for f in fields(ScoreWeights))
"""The weighted signals, as the score lines name them: every field of ``ScoreWeights``, so none is left out."""

APP = "adk_oceanbase_demo"
USER = "demo-user"
TURNS = [
    "Hi! My name is Lin.",
    "I like hiking and green tea.",
    "我也喜欢龙井茶 🍵",
    "My sister Mei is a nurse in Lisbon.",
    "What do you know about me?",
]
RECALL = "Where does my sister work?"
FACTS = [("Lin lives in Hangzhou.", 300), ("Lin moved to Singapore for a new job.", 25)]  # (text, days ago)
LEXICAL_ONLY = (
    "sentence-transformers is not installed, so the semantic and fact-version signals stay 0 and a changed fact "
    "is not recognised as a newer version; pip install 'adk-oceanbase[embeddings]' for MiniLM"
)
FACT_QUESTION = "Which city does Lin live in?"

_NAME = re.compile(r"my name is (\w+)", re.I)
_LIKE = re.compile(r"(?:i like|我也喜欢|我喜欢)\s*(.+?)[.!。 🍵]*$", re.I)


class ConciergeAgent(BaseAgent):
    """Remembers the user's name and likes in ``user:`` state; answers from state."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        text = ""
        if ctx.user_content and ctx.user_content.parts:
            text = " ".join(p.text or "" for p in ctx.user_content.parts)
        state = ctx.session.state
        delta: dict = {"turns": int(state.get("turns", 0)) + 1, "temp:last_input_chars": len(text)}
        reply: str
        if text.rstrip().endswith("?") and "know about me" not in text and ctx.memory_service is not None:
            found = await ctx.memory_service.search_memory(app_name=ctx.app_name, user_id=ctx.user_id, query=text)
            best = found.memories[0] if found.memories else None
            reply = f"From an earlier conversation: \"{best.content.parts[0].text}\"" if best else "I don't remember."
        elif m := _NAME.search(text):
            delta["user:name"] = m.group(1)
            reply = f"Nice to meet you, {m.group(1)}."
        elif m := _LIKE.search(text):
            likes = list(state.get("user:likes", [])) + [m.group(1).strip()]
            delta["user:likes"] = likes
            reply = f"Noted: you like {m.group(1).strip()}."
        elif "know about me" in text:
            name = state.get("user:name", "friend")
            likes = ", ".join(state.get("user:likes", [])) or "nothing yet"
            reply = f"You are {name}; you like {likes}."
        else:
            reply = "Got it."
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            branch=ctx.branch,
            content=types.Content(role="model", parts=[types.Part(text=reply)]),
            actions=EventActions(state_delta=delta),
        )


async def run_demo(url: str | None = None, *, out: Callable[[str], None] = print, embedder=None) -> dict:
    """Runs the conversation, closes everything, reopens, prints the resumed session, recalls from memory.

    Returns a small summary (used by the tests). ``embedder`` defaults to MiniLM (offline).
    """
    config = Config.from_url(url) if url else Config.from_env()
    out(f"database: {config.redacted_url()}")
    started = time.perf_counter()
    embedder = embedder or default_embedder()  # one model for both halves: it loads once
    if hasattr(embedder, "start_loading"):
        embedder.start_loading()
        out(f"embedding model {embedder.model_name}: loading in the background")
    elif isinstance(embedder, HashEmbedder):
        out(f"embedding: {embedder.model_name}, lexical only ({LEXICAL_ONLY})")
    db = Database(config)  # one engine and one seekdb process for both services
    svc = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=embedder)
    try:
        runner = Runner(app_name=APP, agent=ConciergeAgent(name="concierge"), session_service=svc, memory_service=memory)
        session = await svc.create_session(app_name=APP, user_id=USER, state={"app:demo_version": 1})
        out(f"started in {time.perf_counter() - started:.1f}s; session {session.id}\n")
        await _converse(runner, session.id, TURNS, out)
        await runner.close()
        stored = await svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
        await memory.add_session_to_memory(stored)
        await _model_status(embedder, out)
        await memory.flush()  # wait for the background embedding before closing
    finally:
        await memory.close()
        await svc.close()
        await db.close()

    out("\nclosed everything; reopening the database with new services ...\n")
    db = Database(config)
    svc = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=embedder)
    try:
        resumed = await svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
        assert resumed is not None, "the session did not survive a restart"
        out(f"resumed session {resumed.id}: {len(resumed.events)} events")
        for ev in resumed.events:
            txt = ev.content.parts[0].text if ev.content and ev.content.parts else ""
            out(f"  [{time.strftime('%H:%M:%S', time.gmtime(ev.timestamp))}] {ev.author:>9}: {txt}")
        out("merged state (temp: keys are never stored):")
        for key in sorted(resumed.state):
            out(f"  {key} = {resumed.state[key]!r}")

        out("\na new session asks about the first one (answered from the memory service):\n")
        runner = Runner(app_name=APP, agent=ConciergeAgent(name="concierge"), session_service=svc, memory_service=memory)
        fresh = await svc.create_session(app_name=APP, user_id=USER)
        replies = await _converse(runner, fresh.id, [RECALL], out)
        await runner.close()
        hits = await memory.search(APP, USER, RECALL, top_k=3, bump_access=False)
        out(f"\ntop memories for that question (score = the weighted sum of {', '.join(SIGNALS)}; "
            "context = relevance of the turns next to it):")
        _print_hits(hits, out)

        out("\nfacts that change (add_memory): " + "; ".join(f"{t!r} {d} days ago" for t, d in FACTS))
        now = datetime.now(timezone.utc)
        await memory.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(id=f"demo-fact-{i}", author="user", timestamp=(now - timedelta(days=days)).isoformat(),
                        content=types.Content(parts=[types.Part(text=txt)]))
            for i, (txt, days) in enumerate(FACTS)
        ])
        await memory.flush()
        only_facts = {"since": now - timedelta(days=400), "until": now - timedelta(days=1)}  # not today's turns
        plain = await memory.search(APP, USER, FACT_QUESTION, top_k=2, filters=only_facts, weights={"version": 0},
                                    bump_access=False)
        current = await memory.search(APP, USER, FACT_QUESTION, top_k=2, filters=only_facts, bump_access=False)
        out(f"  {FACT_QUESTION!r} without the version signal (full-text sees 'live' only in the old fact):")
        _print_hits(plain, out)
        out("  with it (version = the full-text match the newer version shares; recency then decides):")
        _print_hits(current, out)
        if not current or current[0].memory_id != f"demo-fact-{len(FACTS) - 1}":
            # The version signal links a new fact to the one it replaces by meaning (cosine
            # of the two texts); hashed words see no link between "lives in" and "moved to".
            why = LEXICAL_ONLY if isinstance(embedder, HashEmbedder) else f"the model {embedder.model_name} saw no link"
            out(f"  the older fact still wins here: {why}")
        page = await svc.list_sessions_page(app_name=APP, user_id=USER, limit=5)
        out(f"\n{len(page.sessions)} most recent demo session(s) for {USER} (newest first):")
        for s in page.sessions:
            out(f"  {s.id}  turns={s.state.get('turns', 0)}")
        return {
            "session_id": resumed.id,
            "events": len(resumed.events),
            "state": dict(resumed.state),
            "recall": replies[-1] if replies else "",
            "current_fact": current[0].entry.content.parts[0].text if current else "",
        }
    finally:
        await memory.close()
        await svc.close()
        await db.close()


async def _model_status(embedder, out: Callable[[str], None]) -> None:
    """Says when the memory step waits for the model (8-15 s on a small CPU) and how long it took."""
    if not hasattr(embedder, "wait_loaded"):
        return
    if not embedder.loaded:
        out(f"\nembedding model {embedder.model_name}: still loading; the memory step waits for it ...")
    await asyncio.to_thread(embedder.wait_loaded)
    out(f"embedding model {embedder.model_name}: {embedder.status}")


async def _converse(runner: Runner, session_id: str, turns: list[str], out: Callable[[str], None]) -> list[str]:
    replies = []
    for turn in turns:
        out(f"  user > {turn}")
        msg = types.Content(role="user", parts=[types.Part(text=turn)])
        async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=msg):
            if event.content and event.content.parts and event.author != "user":
                out(f"  agent> {event.content.parts[0].text}")
                replies.append(event.content.parts[0].text)
    return replies


def _print_hits(hits, out: Callable[[str], None]) -> None:
    for h in hits:
        values = " ".join(f"{name}={getattr(h.signals, name):.2f}" for name in SIGNALS)
        out(f"  {h.score:.3f}  {values}  {h.entry.content.parts[0].text}")
