"""The built-in redaction rules and the event walker: pure code, no database."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_oceanbase.redaction import RedactionPolicy, Redactor, RuleRedactor, luhn_ok, prc_id_ok, redact_event, redact_value

R = RuleRedactor()

FOUND = [
    ("write to ann.lee+work@mail.example.co.uk today", "write to [REDACTED:EMAIL] today"),
    ("call +86 138 0013 8000 now", "call [REDACTED:PHONE] now"),
    ("call +1 (415) 555-0132.", "call [REDACTED:PHONE]."),
    ("UK office +44 20 7946 0958", "UK office [REDACTED:PHONE]"),
    ("我的手机是13800138000谢谢", "我的手机是[REDACTED:PHONE]谢谢"),
    ("邮箱是ann@example.com吗", "邮箱是[REDACTED:EMAIL]吗"),
    ("mobile 138-0013-8000", "mobile [REDACTED:PHONE]"),
    ("office (415) 555-0132 or 415.555.0133", "office [REDACTED:PHONE] or [REDACTED:PHONE]"),
    ("身份证 11010519491231002X 已登记", "身份证 [REDACTED:ID_CARD] 已登记"),
    ("card 4111 1111 1111 1111 exp 12/29", "card [REDACTED:BANK_CARD] exp 12/29"),
    ("card 5500-0000-0000-0004", "card [REDACTED:BANK_CARD]"),
    ("UnionPay 6222020200112233446", "UnionPay [REDACTED:BANK_CARD]"),
    ("server 192.168.10.254 is down", "server [REDACTED:IP] is down"),
    ("v6 2001:db8:85a3::8a2e:370:7334 and fe80::1", "v6 [REDACTED:IP] and [REDACTED:IP]"),
]

KEPT = [
    "meet at 10:30:00 on 2026-11-23",  # times and dates
    "order 4111111111111112 shipped",  # fails Luhn
    "ts 1732345678901 and 1732345678",  # epoch ms / s: issuer digit 1
    "id 110105194912310021",  # bad check digit
    "version 1.2.3.4.5 and 999.1.1.1",  # not an IPv4
    "costs $1,299.99, +5 3 4 = 12",  # prices, arithmetic
    "std::vector and :: in prose, ::1",  # C++ and a bare loopback
    "room 13800 floor 2",  # short numbers
    "no digits here at all",
]


@pytest.mark.parametrize("text,expected", FOUND)
def test_pii_is_replaced_by_its_placeholder(text, expected):
    assert R.redact_sync(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_are_left_alone(text):
    assert R.redact_sync(text) == text


def test_checksums():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert prc_id_ok("11010519491231002X") and prc_id_ok("11010519491231002x")
    assert not prc_id_ok("110105194912310021")
    assert not prc_id_ok("110105194913310026")  # month 13


def test_custom_patterns_dictionaries_and_builtin_selection():
    r = RuleRedactor(patterns={"employee_id": r"EMP-\d{6}"}, dictionaries={"PROJECT": ["Blue Bird", "Nightjar"]})
    assert r.redact_sync("EMP-004211 on blue bird and NIGHTJAR, not nightjars") == (
        "[REDACTED:EMPLOYEE_ID] on [REDACTED:PROJECT] and [REDACTED:PROJECT], not nightjars"
    )
    only_mail = RuleRedactor(builtin=["email"])
    assert only_mail.redact_sync("a@b.io +86 138 0013 8000") == "[REDACTED:EMAIL] +86 138 0013 8000"
    with pytest.raises(ValueError, match="label"):
        RuleRedactor(patterns={"bad label": "x"})


def test_policy_modes():
    p = RedactionPolicy(modes={"internal": "off"})
    assert p.active_for("shop") and not p.active_for("internal")
    assert not RedactionPolicy(default_mode="off").active_for("shop")
    with pytest.raises(ValueError, match="redact"):
        RedactionPolicy(modes={"x": "maybe"})


async def test_values_keep_their_shape():
    value = {"contact": {"mail": "ann@example.com", "tags": ["vip", "+44 20 7946 0958"]}, "n": 3, "ok": True}
    assert await redact_value(R, value) == {
        "contact": {"mail": "[REDACTED:EMAIL]", "tags": ["vip", "[REDACTED:PHONE]"]}, "n": 3, "ok": True
    }
    assert await redact_value(R, 42) == 42


async def test_event_content_calls_responses_state_and_summary_are_redacted():
    parts = [
        types.Part(text="I am ann@example.com"),
        types.Part(function_call=types.FunctionCall(name="send_mail", id="c1", args={"to": "ann@example.com", "n": 2})),
        types.Part(function_response=types.FunctionResponse(name="lookup", id="c2", response={"ip": "10.0.0.12"})),
    ]
    ev = Event(
        author="user", invocation_id="inv",
        content=types.Content(role="user", parts=parts),
        actions=EventActions(state_delta={"user:phone": "+86 138 0013 8000", "count": 1}),
    )
    out = await redact_event(R, ev)
    assert out is not ev and out.id == ev.id and out.timestamp == ev.timestamp
    assert out.content.parts[0].text == "I am [REDACTED:EMAIL]"
    assert out.content.parts[1].function_call.name == "send_mail"
    assert out.content.parts[1].function_call.args == {"to": "[REDACTED:EMAIL]", "n": 2}
    assert out.content.parts[2].function_response.response == {"ip": "[REDACTED:IP]"}
    assert out.actions.state_delta == {"user:phone": "[REDACTED:PHONE]", "count": 1}
    assert ev.content.parts[0].text == "I am ann@example.com"  # the caller's event is not mutated

    clean = Event(author="bot", content=types.Content(role="model", parts=[types.Part(text="hello")]))
    assert await redact_event(R, clean) is clean


async def test_a_custom_redactor_gets_one_batch_per_event():
    calls: list[list[str]] = []

    class Upper(Redactor):
        async def redact_many(self, texts):
            calls.append(list(texts))
            return [t.upper() for t in texts]

    ev = Event(author="u", content=types.Content(role="user", parts=[types.Part(text="a"), types.Part(text="b")]),
               actions=EventActions(state_delta={"k": "c"}))
    out = await redact_event(Upper(), ev)
    # state keys are data too: the redactor sees (and may rewrite) them
    assert [p.text for p in out.content.parts] == ["A", "B"] and out.actions.state_delta == {"K": "C"}
    assert calls == [["a", "b", "k", "c"]]
