"""Extraction from ADK events (pure): paths, shapes, failures, outcome signals, interleaving.  No database."""

from __future__ import annotations

from google.adk.events.event import Event
from google.genai import types

from adk_oceanbase.procedural import arg_shape, extract_invocations
from adk_oceanbase.procedural.extraction import MAX_STEPS, path_hash

from .helpers import call_events, outcome, run, user_says


def test_one_invocation_gives_its_path_iterations_and_state_outcome():
    [inv] = extract_invocations(run("i1", "refund order 12", ["find_order", "refund"], True))
    assert inv.tools == ["find_order", "refund"]
    assert (inv.iterations, inv.tool_errors, inv.retries) == (2, 0, 0)
    assert (inv.outcome, inv.outcome_source, inv.request) == (True, "state", "refund order 12")


def test_events_without_any_outcome_signal_stay_unknown():
    [inv] = extract_invocations(run("i1", "refund order 12", ["find_order", "refund"]))
    assert inv.outcome is None and inv.outcome_source == "none"


def test_custom_metadata_and_dict_signals_carry_reason_and_label():
    events = [user_says("i1", "x"), *call_events("i1", ["a"]),
              outcome("i1", {"success": False, "reason": "card declined", "scenario": "refund"}, via="metadata")]
    [inv] = extract_invocations(events)
    assert (inv.outcome, inv.outcome_source, inv.reason, inv.scenario_label) == (False, "metadata", "card declined", "refund")


def test_a_judge_decides_only_when_no_event_did():
    seen = []

    def judge(inv):
        seen.append(inv.invocation_id)
        return (False, "judged") if inv.tool_errors else True

    events = [*run("i1", "a", ["t"]), *run("i2", "b", [("t", {}, {"error": "boom"})]), *run("i3", "c", ["t"], False)]
    invs = {i.invocation_id: i for i in extract_invocations(events, judge=judge)}
    assert seen == ["i1", "i2"]
    assert (invs["i1"].outcome, invs["i2"].outcome, invs["i2"].reason, invs["i3"].outcome_source) == (True, False, "judged", "state")


def test_tool_errors_retries_and_failed_tool():
    tools = [("search", {"q": "x"}, {"error": "timeout"}), ("search", {"q": "x"}, {"status": "error", "message": "503"}),
             ("search", {"q": "x"}, {"hits": 3}), ("answer", {}, {"ok": True})]
    [inv] = extract_invocations(run("i1", "find x", tools, True))
    assert inv.tools == ["search", "answer"]  # the retries fold into one step of the path
    assert (inv.tool_errors, inv.retries, inv.failed_tool, len(inv.steps)) == (2, 2, "search", 4)
    assert inv.failure_reason() == "503"


def test_model_errors_count_as_exceptions():
    events = [*run("i1", "x", ["a"]), Event(invocation_id="i1", author="agent", error_code="500", error_message="model down")]
    [inv] = extract_invocations(events)
    assert inv.exceptions == 1 and inv.failure_reason() == "exception"


def test_interleaved_invocations_stay_apart():
    a, b = run("A", "refund 1", ["find", "refund"], True), run("B", "track 2", ["track"], False)
    mixed = [x for pair in zip(a, b) for x in pair] + a[len(b):]
    invs = {i.invocation_id: i for i in extract_invocations(mixed)}
    assert invs["A"].tools == ["find", "refund"] and invs["A"].outcome is True
    assert invs["B"].tools == ["track"] and invs["B"].outcome is False
    assert (invs["A"].request, invs["B"].request) == ("refund 1", "track 2")


def test_responses_without_ids_pair_by_name_in_order():
    events = [user_says("i", "x")]
    for name in ("a", "b"):
        events.append(Event(invocation_id="i", author="agent", content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args={}))])))
    events.append(Event(invocation_id="i", author="agent", content=types.Content(role="user", parts=[
        types.Part(function_response=types.FunctionResponse(name="b", response={"error": "nope"})),
        types.Part(function_response=types.FunctionResponse(name="a", response={"ok": 1}))])))
    [inv] = extract_invocations(events)
    assert [(s.tool, s.error) for s in inv.steps] == [("a", None), ("b", "nope")]


def test_giant_arguments_are_reduced_to_their_shape():
    assert arg_shape({"blob": "x" * 5_000_000, "nested": {"k": ["v"] * 100_000}, "n": 1.5}) == {
        "blob": "str", "n": "number", "nested": "object"}
    giant = {"blob": "x" * 5_000_000, **{f"a{i:03}": i for i in range(100)}}
    shape = arg_shape(giant)
    assert len(shape) == 33 and shape["..."] == "69 more" and len(repr(shape)) < 1000
    [inv] = extract_invocations(run("i", "x", [("upload", giant, {"ok": True})], True))
    assert len(repr(inv.shapes())) < 1000


def test_a_runaway_loop_is_bounded():
    [inv] = extract_invocations(run("i", "x", ["poll"] * 500, True))
    assert len(inv.steps) == MAX_STEPS and inv.tools == ["poll"]


def test_invocations_without_tools_or_ids_are_skipped():
    events = [user_says("i1", "hi"), outcome("i1", True), Event(author="agent", invocation_id="")]
    assert extract_invocations(events) == []


def test_path_hash_depends_on_order():
    assert path_hash(["a", "b"]) != path_hash(["b", "a"])
