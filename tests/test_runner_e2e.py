"""End to end through a real ADK Runner: custom agent, LlmAgent with tools, resume elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from google.adk.agents.llm_agent import LlmAgent
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_oceanbase import Config, OceanBaseSessionService
from adk_oceanbase.demo import APP, FACTS, TURNS, ConciergeAgent, run_demo

from .fakes import ScriptedLlm, call_reply, has_function_response, last_user_text, text_reply


async def run_turn(runner: Runner, user: str, sid: str, text: str) -> list:
    msg = types.Content(role="user", parts=[types.Part(text=text)])
    return [e async for e in runner.run_async(user_id=user, session_id=sid, new_message=msg)]


async def test_custom_agent_conversation_persists_and_resumes(engine_db, engine_migrated_url):
    svc = OceanBaseSessionService(database=engine_db)
    runner = Runner(app_name=APP, agent=ConciergeAgent(name="concierge"), session_service=svc)
    s = await svc.create_session(app_name=APP, user_id="u1")
    for turn in TURNS:
        await run_turn(runner, "u1", s.id, turn)
    # a second, independent service (own engine and pool) resumes the session
    other = OceanBaseSessionService(config=Config.from_url(engine_migrated_url))  # owns its engine
    try:
        resumed = await other.get_session(app_name=APP, user_id="u1", session_id=s.id)
        assert len(resumed.events) == 2 * len(TURNS)
        assert resumed.state["user:name"] == "Lin" and resumed.state["turns"] == len(TURNS)
        assert not any(k.startswith("temp:") for k in resumed.state)
        assert resumed.events[-1].content.parts[0].text.startswith("You are Lin")
        # and can continue the conversation through its own runner
        runner2 = Runner(app_name=APP, agent=ConciergeAgent(name="concierge"), session_service=other)
        await run_turn(runner2, "u1", s.id, "My name is Mei")
        assert (await svc.get_session(app_name=APP, user_id="u1", session_id=s.id)).state["user:name"] == "Mei"
    finally:
        await other.close()


def remember(fact: str, tool_context: ToolContext) -> dict:
    """Stores a fact about the user."""
    facts = list(tool_context.state.get("user:facts", []))
    facts.append(fact)
    tool_context.state["user:facts"] = facts
    return {"stored": fact, "count": len(facts)}


def script(request):
    if has_function_response(request):
        return text_reply("Saved it.")
    said = last_user_text(request)
    if said.lower().startswith("remember"):
        return call_reply("remember", fact=said.split(" ", 1)[1])
    return text_reply(f"I heard: {said}")


async def test_llm_agent_with_tool_calls_round_trips_through_runner(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    model = ScriptedLlm(script=script)
    agent = LlmAgent(name="assistant", model=model, tools=[remember], instruction="Be brief.")
    runner = Runner(app_name="llm_app", agent=agent, session_service=svc)
    s = await svc.create_session(app_name="llm_app", user_id="u1")
    await run_turn(runner, "u1", s.id, "remember I am allergic to peanuts")
    await run_turn(runner, "u1", s.id, "hello")
    stored = await svc.get_session(app_name="llm_app", user_id="u1", session_id=s.id)
    kinds = [
        "call" if e.get_function_calls() else "resp" if e.get_function_responses() else e.author for e in stored.events
    ]
    assert kinds == ["user", "call", "resp", "assistant", "user", "assistant"]
    assert stored.state["user:facts"] == ["I am allergic to peanuts"]
    # the model saw the whole persisted history on the second turn, tool call included
    second = model.requests[-1]
    seen = [p.function_call.name for c in second.contents for p in c.parts or [] if p.function_call]
    assert seen == ["remember"]
    assert stored.events[-1].content.parts[0].text == "I heard: hello"


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from google.adk.runners import Runner
    from google.genai import types
    from adk_oceanbase import OceanBaseSessionService
    from adk_oceanbase.demo import APP, ConciergeAgent

    async def main(url):
        async with OceanBaseSessionService(url) as svc:
            runner = Runner(app_name=APP, agent=ConciergeAgent(name="concierge"), session_service=svc)
            s = await svc.create_session(app_name=APP, user_id="proc", session_id="cross-process")
            for text in ["My name is Ada", "I like compilers"]:
                msg = types.Content(role="user", parts=[types.Part(text=text)])
                async for _ in runner.run_async(user_id="proc", session_id=s.id, new_message=msg):
                    pass
            await runner.close()

    asyncio.run(main(sys.argv[1]))
    """
)


def seekdb_processes(db_dir: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "seekdb" in line and str(db_dir) in line]


async def test_embedded_seekdb_resumes_in_a_new_process_and_leaves_no_orphan(tmp_path):
    db_dir = tmp_path / "embedded"
    url = f"seekdb://{db_dir}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([sys.executable, "-c", WRITER, url], check=True, env=env, timeout=180)
    deadline = time.monotonic() + 20
    while seekdb_processes(db_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert seekdb_processes(db_dir) == [], "the writer's seekdb child outlived it"
    async with OceanBaseSessionService(url) as svc:
        s = await svc.get_session(app_name=APP, user_id="proc", session_id="cross-process")
        assert [e.content.parts[0].text for e in s.events][:2] == ["My name is Ada", "Nice to meet you, Ada."]
        assert s.state["user:likes"] == ["compilers"]


async def test_demo_runs_resumes_and_recalls(tmp_path):
    from adk_oceanbase.memory import HashEmbedder

    lines: list[str] = []
    summary = await run_demo(f"seekdb://{tmp_path / 'demo'}", out=lines.append, embedder=HashEmbedder())
    assert summary["events"] == 2 * len(TURNS)
    assert summary["state"]["user:name"] == "Lin"
    assert any("resumed session" in line for line in lines)
    assert "nurse in Lisbon" in summary["recall"]
    assert summary["current_fact"] in {text for text, _ in FACTS}  # MiniLM picks the newer: test_memory_versions
