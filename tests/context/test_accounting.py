"""Accounting views (issue #30): model usage and tool calls as columns, cost per app/user/day, tool failure rates."""

from __future__ import annotations

from datetime import datetime, timezone

from google.adk.events.event import Event
from google.genai import types
from sqlalchemy import insert, text

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.gateway import connection, transaction
from adk_oceanbase.schema import model_prices

APP = "acct_app"
T0 = 1_740_000_000.0  # 2025-02-19 21:20 UTC


def answer(ts: float, model: str, prompt: int, completion: int, cached: int = 0) -> Event:
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=completion, cached_content_token_count=cached or None,
        total_token_count=prompt + completion)
    return Event(author="agent", invocation_id="inv", timestamp=ts, model_version=model, usage_metadata=usage,
                 content=types.Content(role="model", parts=[types.Part(text="ok")]))


def call(ts: float, name: str, call_id: str) -> Event:
    return Event(author="agent", invocation_id="inv", timestamp=ts,
                 content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))]))


def result(ts: float, name: str, call_id: str, response: dict) -> Event:
    part = types.Part(function_response=types.FunctionResponse(id=call_id, name=name, response=response))
    return Event(author="agent", invocation_id="inv", timestamp=ts, content=types.Content(role="user", parts=[part]))


async def rows(db, sql: str) -> list[dict]:
    async with connection(db) as conn:
        return [dict(r._mapping) for r in (await conn.execute(text(sql))).all()]


async def test_usage_cost_and_tool_failures_are_queryable(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id="u1")
    t = await svc.create_session(app_name=APP, user_id="u2")
    await svc.append_event(s, answer(T0, "gemini-x", 1000, 200, cached=400))
    await svc.append_event(s, answer(T0 + 10, "gemini-x", 3000, 100))
    await svc.append_event(t, answer(T0 + 20, "unpriced", 50, 5))
    await svc.append_event(s, call(T0 + 30, "lookup", "c1"))
    await svc.append_event(s, result(T0 + 31.5, "lookup", "c1", {"result": "fine"}))
    await svc.append_event(s, call(T0 + 40, "lookup", "c2"))
    await svc.append_event(s, result(T0 + 40.25, "lookup", "c2", {"error": "upstream down", "error_type": "TimeoutError"}))
    await svc.append_event(s, call(T0 + 50, "book", "c3"))
    await svc.append_event(s, result(T0 + 52, "book", "c3", {"error": "no seats"}))
    async with transaction(engine_db) as conn:
        await conn.execute(insert(model_prices).values(model="gemini-x", prompt_usd_per_mtok=1.0, completion_usd_per_mtok=4.0, cached_usd_per_mtok=0.25))

    usage = await rows(engine_db, f"SELECT user_id, model, prompt_tokens, completion_tokens, cached_tokens FROM v_model_usage WHERE app_name = '{APP}' ORDER BY event_time")
    assert [(r["user_id"], r["model"], r["prompt_tokens"], r["completion_tokens"], r["cached_tokens"]) for r in usage] == [
        ("u1", "gemini-x", 1000, 200, 400), ("u1", "gemini-x", 3000, 100, 0), ("u2", "unpriced", 50, 5, 0)]

    cost = await rows(engine_db, f"SELECT user_id, day, model, responses, prompt_tokens, completion_tokens, cost_usd FROM v_cost_daily WHERE app_name = '{APP}' ORDER BY user_id")
    day = datetime.fromtimestamp(T0, tz=timezone.utc).date()
    assert [(r["user_id"], r["day"], r["model"], r["responses"], int(r["prompt_tokens"]), int(r["completion_tokens"])) for r in cost] == [
        ("u1", day, "gemini-x", 2, 4000, 300), ("u2", day, "unpriced", 1, 50, 5)]
    # (4000 - 400) x 1.0 + 400 x 0.25 + 300 x 4.0 per million
    assert abs(float(cost[0]["cost_usd"]) - (3600 + 100 + 1200) / 1e6) < 1e-12 and cost[1]["cost_usd"] is None

    tools = await rows(engine_db, f"SELECT tool_name, call_id, status, error_class, duration_ms FROM v_tool_results WHERE app_name = '{APP}' ORDER BY seq")
    assert [(r["tool_name"], r["call_id"], r["status"], r["error_class"], round(float(r["duration_ms"]))) for r in tools] == [
        ("lookup", "c1", "success", None, 1500), ("lookup", "c2", "error", "TimeoutError", 250), ("book", "c3", "error", "error", 2000)]

    rates = await rows(engine_db, f"SELECT tool_name, calls, failures, failure_rate FROM v_tool_failure_rate WHERE app_name = '{APP}' ORDER BY tool_name")
    assert [(r["tool_name"], r["calls"], int(r["failures"]), float(r["failure_rate"])) for r in rates] == [("book", 1, 1, 1.0), ("lookup", 2, 1, 0.5)]
