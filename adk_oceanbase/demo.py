"""``adk-oceanbase demo``: a multi-turn conversation through a real ADK Runner, then a resume.

Offline and key-free: the agent is a small rule-based ``BaseAgent`` (no LLM)
that keeps user facts in ``user:`` state, counts turns in session state and
keeps a scratch value in ``temp:`` state (never stored).  After the
conversation the service is closed (stopping embedded seekdb), a brand-new
service reopens the same database, and the resumed session is printed.
"""

from __future__ import annotations

import re
import time
from typing import AsyncGenerator, Callable

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.genai import types

from .config import Config
from .sessions import OceanBaseSessionService

APP = "adk_oceanbase_demo"
USER = "demo-user"
TURNS = [
    "Hi! My name is Lin.",
    "I like hiking and green tea.",
    "我也喜欢龙井茶 🍵",
    "What do you know about me?",
]

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
        if m := _NAME.search(text):
            delta["user:name"] = m.group(1)
            reply = f"Nice to meet you, {m.group(1)}."
        elif m := _LIKE.search(text):
            likes = list(state.get("user:likes", [])) + [m.group(1).strip()]
            delta["user:likes"] = likes
            reply = f"Noted: you like {m.group(1).strip()}."
        else:
            name = state.get("user:name", "friend")
            likes = ", ".join(state.get("user:likes", [])) or "nothing yet"
            reply = f"You are {name}; you like {likes}."
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            branch=ctx.branch,
            content=types.Content(role="model", parts=[types.Part(text=reply)]),
            actions=EventActions(state_delta=delta),
        )


async def run_demo(url: str | None = None, *, out: Callable[[str], None] = print) -> dict:
    """Runs the conversation, closes everything, reopens and prints the resumed session.

    Returns a small summary (used by the tests).
    """
    config = Config.from_url(url) if url else Config.from_env()
    out(f"database: {config.redacted_url()}")
    started = time.perf_counter()
    svc = OceanBaseSessionService(config=config)
    try:
        agent = ConciergeAgent(name="concierge")
        runner = Runner(app_name=APP, agent=agent, session_service=svc)
        session = await svc.create_session(app_name=APP, user_id=USER, state={"app:demo_version": 1})
        out(f"started in {time.perf_counter() - started:.1f}s; session {session.id}\n")
        for turn in TURNS:
            out(f"  user > {turn}")
            msg = types.Content(role="user", parts=[types.Part(text=turn)])
            async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=msg):
                if event.content and event.content.parts and event.author != "user":
                    out(f"  agent> {event.content.parts[0].text}")
        await runner.close()
    finally:
        await svc.close()

    out("\nclosed the service; reopening the database with a new service ...\n")
    async with OceanBaseSessionService(config=config) as again:
        resumed = await again.get_session(app_name=APP, user_id=USER, session_id=session.id)
        assert resumed is not None, "the session did not survive a restart"
        out(f"resumed session {resumed.id}: {len(resumed.events)} events")
        for ev in resumed.events:
            txt = ev.content.parts[0].text if ev.content and ev.content.parts else ""
            out(f"  [{time.strftime('%H:%M:%S', time.gmtime(ev.timestamp))}] {ev.author:>9}: {txt}")
        out("merged state (temp: keys are never stored):")
        for key in sorted(resumed.state):
            out(f"  {key} = {resumed.state[key]!r}")
        page = await again.list_sessions_page(app_name=APP, user_id=USER, limit=5)
        out(f"\n{len(page.sessions)} most recent demo session(s) for {USER} (newest first):")
        for s in page.sessions:
            out(f"  {s.id}  turns={s.state.get('turns', 0)}")
        return {"session_id": resumed.id, "events": len(resumed.events), "state": dict(resumed.state)}
