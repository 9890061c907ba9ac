"""A real graph on OceanBaseSaver + OceanBaseStore: tool node, interrupt, resume after a process restart,
time travel, and a Store read by a node; on seekdb and MariaDB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.graph")

from langgraph.types import Command  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseSaver, OceanBaseStore  # noqa: E402

from . import graph_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


async def test_graph_survives_a_restart_and_travels_back_in_time(engine_migrated_url) -> None:
    thread = f"graph-{os.getpid()}-{engine_migrated_url[-6:]}"
    # 1. another process runs the graph until the interrupt, then exits
    proc = subprocess.run(
        [sys.executable, "-m", "tests.langgraph.graph_app", engine_migrated_url, thread],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    asked = json.loads(proc.stdout.strip().splitlines()[-1])
    assert asked == {"question": "send the result?", "result": "5"}  # the tool node ran: 2 + 3

    # 2. this process resumes the same thread from the database
    saver = OceanBaseSaver(engine_migrated_url)
    store = OceanBaseStore(engine_migrated_url, user_of=lambda ns: ns[1] if len(ns) > 1 else None)
    try:
        app = graph_app.build().compile(checkpointer=saver, store=store)
        cfg = graph_app.config(thread)
        paused = await app.aget_state(cfg)
        assert paused.next == ("approve",)
        done = await app.ainvoke(Command(resume="yes"), cfg)
        assert done["steps"] == ["plan:terse", "agent", "approve:yes", "finish"]
        assert done["decision"] == "yes" and done["messages"][-1].content == "result 5"

        # 3. time travel: back to the checkpoint before the agent ran, with the Store changed meanwhile
        history = [s async for s in app.aget_state_history(cfg)]
        before_agent = next(s for s in history if s.next == ("agent",))
        assert before_agent.values["steps"] == ["plan:terse"]
        forked = await app.aupdate_state(before_agent.config, {"steps": ["edited"]})
        replayed = await app.ainvoke(None, forked)
        assert "__interrupt__" in replayed
        resumed = await app.ainvoke(Command(resume="no"), cfg)  # the thread's newest checkpoint: the fork's
        assert resumed["steps"] == ["plan:terse", "edited", "agent", "approve:no", "finish"]
        # the original branch is untouched
        latest_original = await app.aget_state(done_config(history))
        assert latest_original.values["decision"] == "yes"
    finally:
        await store.aclose()
        await saver.aclose()


def done_config(history):
    return history[0].config
