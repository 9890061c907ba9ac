"""Serving through a real ADK Runner (scripted model, no network): the advice block, the tool, the budget."""

from __future__ import annotations

import json
from typing import AsyncGenerator

from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from adk_oceanbase.memory.embedding import HashEmbedder
from adk_oceanbase.procedural import ProcedureAdvice, ProcedureStore, format_advice, recall_procedures_tool
from adk_oceanbase.procedural.recall import Procedure, Recall
from adk_oceanbase.procedural.serving import HEADER
from adk_oceanbase.sessions import OceanBaseSessionService
from adk_oceanbase.tokens import EstimatingTokenCounter

from .helpers import store

APP = "shop"


def find_order(order_id: str) -> dict:
    """Finds an order."""
    return {"order": order_id, "paid": 20}


def refund(order_id: str, amount: float) -> dict:
    """Refunds an order."""
    return {"refunded": amount}


class ScriptLlm(BaseLlm):
    """Calls the scripted tools in turn, one per model step, then answers; keeps every system instruction."""

    model: str = "procedural-script"
    plan: list[tuple[str, dict]] = []
    instructions: list[str] = []
    tool_answers: list[dict] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.instructions.append(str(llm_request.config.system_instruction or ""))
        answered = [p.function_response for c in llm_request.contents for p in c.parts or [] if p.function_response]
        self.tool_answers[:] = [a.response for a in answered]
        if len(answered) < len(self.plan):
            name, args = self.plan[len(answered)]
            part = types.Part(function_call=types.FunctionCall(name=name, args=args))
        else:
            part = types.Part(text="done")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def turn(runner: Runner, sessions: OceanBaseSessionService, user: str, text: str):
    s = await sessions.create_session(app_name=APP, user_id=user)
    async for _ in runner.run_async(user_id=user, session_id=s.id,
                                    new_message=types.Content(role="user", parts=[types.Part(text=text)])):
        pass
    return await sessions.get_session(app_name=APP, user_id=user, session_id=s.id)


async def test_a_runner_learns_a_path_and_the_next_session_gets_the_advice_and_the_tool(pdb):
    ps = store(pdb, similarity=0.5)  # HashEmbedder: these wordings meet at 0.55-0.8 (MiniLM: benchmarks/procedural.py)
    sessions = OceanBaseSessionService(database=pdb)
    advice = ProcedureAdvice(ps, budget_tokens=300)
    llm = ScriptLlm(plan=[("find_order", {"order_id": "12"}), ("refund", {"order_id": "12", "amount": 20})])
    agent = LlmAgent(name="shop_agent", model=llm, tools=[find_order, refund, recall_procedures_tool(ps)],
                     before_model_callback=advice.before_model_callback)
    runner = Runner(app_name=APP, agent=agent, session_service=sessions)
    for i, text in enumerate(["refund order 12 please", "please refund my order 12", "I want a refund for order 12"]):
        done = await turn(runner, sessions, f"user{i}", text)
        inv = next(e.invocation_id for e in done.events if e.author == "user")
        await ps.extract_session(done)
        await ps.record_outcome(done, inv, True)
    assert all(HEADER not in s for s in llm.instructions[:1])  # nothing known before the first run
    llm.instructions.clear()
    llm.plan = [("recall_procedures", {"task": "refund order 12"})]
    await turn(runner, sessions, "newcomer", "refund order 12 please")
    block = llm.instructions[0]
    assert HEADER in block and "find_order(order_id: str) -> refund(amount: number, order_id: str)" in block
    assert "advice, not fact" in block
    [answer] = llm.tool_answers
    assert answer["procedures"][0]["tools"] == ["find_order", "refund"] and answer["procedures"][0]["samples"] == 3


def _proc(i: int, rate: float = 0.9) -> Procedure:
    return Procedure(scenario_id="s", path_hash=f"h{i}", tools=[f"tool_{i}", "verify"],
                     steps=[{"tool": f"tool_{i}", "args": {"q": "str"}}, {"tool": "verify", "args": {}}],
                     successes=9, failures=1, unknowns=0, success_rate=rate, recent_success_rate=rate, recent_samples=10, evidence=8.5,
                     confidence=0.6 - i / 100, median_iterations=2.0, mean_tool_calls=2.0, last_seen=None,
                     failure_reasons=[{"tool": "verify", "reason": "mismatch", "count": 1}])


def test_the_block_stays_within_its_token_budget_best_first():
    recall = Recall(scenario_id="s", similarity=1.0, procedures=[_proc(i) for i in range(5)], avoid=[_proc(9, 0.1)])
    counter = EstimatingTokenCounter()
    full = format_advice(recall, budget_tokens=10_000)
    assert full.count("Suggested path") == 5 and full.count("Avoid") == 1
    # the header costs ~34 tokens, a suggested path ~68, an avoid line ~27 (EstimatingTokenCounter)
    for budget, kept in ((110, ["tool_0"]), (180, ["tool_0", "tool_1"]), (200, ["tool_0", "tool_1", "tool_9"])):
        block = format_advice(recall, budget_tokens=budget)
        assert counter.count(block) <= budget and block.startswith(HEADER)
        assert [t for t in ("tool_0", "tool_1", "tool_2", "tool_9") if t in block] == kept  # best first
    assert "tool_9" in format_advice(recall, budget_tokens=70)  # a shorter line still fits where a long one did not
    assert format_advice(recall, budget_tokens=40) == ""  # not even one line fits: no empty header


async def test_a_failing_store_leaves_the_block_out_instead_of_failing_the_turn(fresh_url):
    broken = ProcedureStore(fresh_url, auto_setup=False, embedder=HashEmbedder())  # no tables: every recall raises SchemaMissingError
    try:
        assert await ProcedureAdvice(broken).block(APP, "u", "refund order 12") == ""
    finally:
        await broken.close()
