"""A small deterministic LangGraph app (no LLM) used by the graph tests, in-process and in a subprocess.

plan (reads the user's preferences from the Store) -> agent (asks for a tool
call) -> tools (ToolNode) -> approve (interrupt: waits for a human) -> finish.

Run as a script: ``python -m tests.langgraph.graph_app URL THREAD``: runs the
graph until its interrupt on a fresh saver and store, prints the interrupt
value as JSON and exits (the "process" the test then restarts).
"""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore
from langgraph.types import interrupt

from adk_oceanbase.langgraph import OceanBaseSaver, OceanBaseStore

USER = "alice"


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


class State(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    steps: Annotated[list[str], operator.add]
    decision: str


async def plan(state: State, store: BaseStore) -> dict:
    prefs = await store.aget(("prefs", USER), "style")
    style = prefs.value["style"] if prefs else "plain"
    return {"steps": [f"plan:{style}"], "messages": [HumanMessage(content=f"add 2 and 3, answer {style}")]}


def agent(state: State) -> dict:
    call = {"name": "add", "args": {"a": 2, "b": 3}, "id": "call-1", "type": "tool_call"}
    return {"steps": ["agent"], "messages": [AIMessage(content="", tool_calls=[call])]}


def approve(state: State) -> dict:
    answer = interrupt({"question": "send the result?", "result": state["messages"][-1].content})
    return {"steps": [f"approve:{answer}"], "decision": answer}


def finish(state: State) -> dict:
    return {"steps": ["finish"], "messages": [AIMessage(content=f"result {state['messages'][-1].content}")]}


def build():
    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([add]))
    graph.add_node("approve", approve)
    graph.add_node("finish", finish)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "approve")
    graph.add_edge("approve", "finish")
    graph.add_edge("finish", END)
    return graph


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread, "user_id": USER}}


async def run_until_interrupt(url: str, thread: str) -> dict:
    async with OceanBaseSaver.from_conn_string(url) as saver:
        store = OceanBaseStore(url, user_of=lambda ns: ns[1] if len(ns) > 1 else None)
        try:
            await store.aput(("prefs", USER), "style", {"style": "terse"})
            app = build().compile(checkpointer=saver, store=store)
            out = await app.ainvoke({"messages": [], "steps": [], "decision": ""}, config(thread))
        finally:
            await store.aclose()
    return out["__interrupt__"][0].value


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run_until_interrupt(sys.argv[1], sys.argv[2]))))
