"""The redactor's formats, look-alikes, normalisation and event walk: pure code, no database.

Each promised format in the spellings an attacker (or a user's keyboard) produces, each new default
rule, each false positive of issue 33, and what the walker does with every part of an ADK event.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from adk_oceanbase.redaction import (
    BUILTIN_LABELS,
    RedactionPolicy,
    Rule,
    RuleRedactor,
    card_ok,
    iban_ok,
    legacy_id_ok,
    normalise,
    redact_event,
    redact_value,
)
from benchmarks._redaction_set import PROMISED, labelled_set

R = RuleRedactor()

FOUND = [
    # normalisation: full-width, look-alike letters, IDN, zero-width characters
    ("mail ｚｈａｏ＠ｅｘａｍｐｌｅ．ｃｏｍ ok", "mail [REDACTED:EMAIL] ok"),
    ("mail pеtrov@exаmple.org ok", "mail [REDACTED:EMAIL] ok"),  # Cyrillic е, а
    ("mail josé.garcía@exämple.de ok", "mail [REDACTED:EMAIL] ok"),
    ("邮箱：用户@例子.中国", "邮箱：[REDACTED:EMAIL]"),
    ("mail wang\u200dfang@example.net ok", "mail [REDACTED:EMAIL] ok"),
    ("mobile 139\u00ad1234\u200b0017 ok", "mobile [REDACTED:PHONE] ok"),
    # numbers in groups, with country codes, in full-width digits
    ("身份证 510107 19880808 1234 已登记", "身份证 [REDACTED:ID_CARD] 已登记"),
    ("手机 1391 2340 017", "手机 [REDACTED:PHONE]"),
    ("手机8613912340006", "手机[REDACTED:PHONE]"),
    ("手机 +86 139 1234 0006", "手机 [REDACTED:PHONE]"),
    ("手机１３８００１３８０００谢谢", "手机[REDACTED:PHONE]谢谢"),
    ("mobile ١٣٨٠٠١٣٨٠٠٠ ok", "mobile [REDACTED:PHONE] ok"),  # Arabic-Indic digits
    ("call 415 555 0199 or 4155550198", "call [REDACTED:PHONE] or [REDACTED:PHONE]"),
    ("card 4012.8888.8888.1881", "card [REDACTED:BANK_CARD]"),
    ("amex 3782 822463 10005", "amex [REDACTED:BANK_CARD]"),
    # the new default rules
    ("key sk-proj-Zx81Qw93Lm27Rt64Yu05Io end", "key [REDACTED:API_KEY] end"),
    ("aws AKIAIOSFODNN7EXAMPLE", "aws [REDACTED:API_KEY]"),
    ("gh ghp_" + "a1B2" * 9, "gh [REDACTED:API_KEY]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "jwt [REDACTED:TOKEN]"),
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED:TOKEN]"),
    ("password: hunter2.", "password: [REDACTED:PASSWORD]."),
    ("my password is Tr0ub4dor&3", "my password is [REDACTED:PASSWORD]"),
    ("密码：abc123，谢谢", "密码：[REDACTED:PASSWORD]，谢谢"),
    ("login?user=ann&pwd=S3cret!", "login?user=ann&pwd=[REDACTED:PASSWORD]"),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [REDACTED:IBAN] please"),
    ("转账到GB82WEST12345698765432谢谢", "转账到[REDACTED:IBAN]谢谢"),
    ("旧身份证 510107880808123", "旧身份证 [REDACTED:ID_CARD]"),
    ("座机 010-62345678 或 (0755) 2345 6789", "座机 [REDACTED:PHONE] 或 [REDACTED:PHONE]"),
    ("office +44 20 7946 0958", "office [REDACTED:PHONE]"),
    ("v6 地址：2001:db8::8a2e:370:7334", "v6 地址：[REDACTED:IP]"),
    # a positive keyword nearer than an order keyword keeps the phone a phone
    ("about my order: my phone is 13912340017", "about my order: my phone is [REDACTED:PHONE]"),
]

KEPT = [
    "SDK version 1.2.3.4",
    "see section 10.2.0.1",
    "升级到版本 2.1.0.3",
    "octets 010.1.1.1 are not an address",
    "invoice number 4000123412341234",
    "发票号码 4111111111111111",
    "parcel tracking number 13800001111",
    "快递单号 13800001111",
    "score +12 345 678",
    "+1 234 5678 is too short for the US",
    "the password is required",
    "密码是必填项",
    "task-list and desk-lamp",
    "ts 1732345678 and 1732345678901",
    "bad check 510107198808081235",
    "legacy with month 13: 510107881308123",
    "IBAN-shaped DE89370400440532013001",  # fails mod-97
    "order 6011000990139425 for 6011 reasons",  # order keyword nearest
]


@pytest.mark.parametrize("text,expected", FOUND)
def test_each_format_is_redacted(text, expected):
    assert R.redact_sync(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_each_look_alike_is_kept(text):
    assert R.redact_sync(text) == text


def test_validators():
    assert card_ok("4012888888881881") and card_ok("378282246310005") and card_ok("6011000990139424")
    assert not card_ok("1234567812345670")  # passes Luhn, no issuer starts with 1
    assert not card_ok("378282246310005" + "0")  # Amex is 15 digits
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")
    assert legacy_id_ok("510107880808123") and not legacy_id_ok("510107881308123")


def test_normalisation_maps_back_to_the_original_text():
    text = "邮箱：ａｎｎ＠ｅｘａｍｐｌｅ．ｃｏｍ，谢谢"
    norm = normalise(text)
    assert norm.text == "邮箱:ann@example.com,谢谢"
    start = norm.text.index("ann")
    assert norm.original_span(start, start + len("ann@example.com")) == (3, 18)
    # the user's own punctuation survives, only the finding goes
    assert R.redact_sync(text) == "邮箱：[REDACTED:EMAIL]，谢谢"


def test_a_number_split_across_parts_is_found_in_each_part():
    assert R.redact_pieces(["call me on 139 12", "34 0017 please"]) == ["call me on [REDACTED:PHONE]", "[REDACTED:PHONE] please"]
    assert R.redact_pieces(["ann@exam", "ple.com"]) == ["[REDACTED:EMAIL]", "[REDACTED:EMAIL]"]


async def test_integers_keys_and_secret_named_values_in_free_form_values():
    value = {"phone": 13912340017, "card": 4012888888881881, "n": 42, "ann@example.com": True,
             "api_key": "plain-looking", "nested": [{"password": "hunter2"}], "ok": 1.5}
    assert await redact_value(R, value) == {
        "phone": "[REDACTED:PHONE]", "card": "[REDACTED:BANK_CARD]", "n": 42, "[REDACTED:EMAIL]": True,
        "api_key": "[REDACTED:SECRET]", "nested": [{"password": "[REDACTED:SECRET]"}], "ok": 1.5,
    }


async def test_the_whole_event_is_walked_but_its_structure():
    parts = [
        types.Part(text="call me on 139 12"), types.Part(text="34 0017 please"),
        types.Part(function_call=types.FunctionCall(id="c1", name="send_to_13912340017", args={"a@b.io": 13912340017})),
        types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG a@b.io")),
        types.Part(inline_data=types.Blob(mime_type="text/plain", data="mail a@b.io".encode())),
        types.Part(file_data=types.FileData(file_uri="gs://b/a@b.io/x.pdf", mime_type="application/pdf")),
        types.Part(text="m", part_metadata={"from": "a@b.io"}),
    ]
    ev = Event(
        id="e1", author="agent", invocation_id="inv-13912340017", branch="root",
        content=types.Content(role="model", parts=parts),
        custom_metadata={"a@b.io": 13912340017},
        input_transcription=types.Transcription(text="my number is 13912340017"),
        output={"x": "a@b.io"},
        actions=EventActions(
            transfer_to_agent="billing", transfer_reason="for a@b.io", agent_state={"k": "a@b.io"},
            requested_tool_confirmations={"c1": ToolConfirmation(hint="to a@b.io?", payload={"to": 13912340017})},
            set_model_response={"r": "a@b.io"}, artifact_delta={"report.pdf": 2},
        ),
    )
    out = await redact_event(R, ev)
    e, p = "[REDACTED:EMAIL]", "[REDACTED:PHONE]"
    assert [x.text for x in out.content.parts[:2]] == [f"call me on {p}", f"{p} please"]
    call = out.content.parts[2].function_call
    assert call.name == "send_to_13912340017" and call.id == "c1" and call.args == {e: p}  # names are structure
    assert out.content.parts[3].inline_data.data == b"[REDACTED:BLOB]" and out.content.parts[3].inline_data.mime_type == "text/plain"
    assert out.content.parts[4].inline_data.data == f"mail {e}".encode()
    assert out.content.parts[5].file_data.file_uri == f"gs://b/{e}/x.pdf"
    assert out.content.parts[6].part_metadata == {"from": e}
    assert out.custom_metadata == {e: p} and out.input_transcription.text == f"my number is {p}" and out.output == {"x": e}
    a = out.actions
    assert a.transfer_reason == f"for {e}" and a.agent_state == {"k": e} and a.set_model_response == {"r": e}
    assert a.requested_tool_confirmations["c1"].hint == f"to {e}?" and a.requested_tool_confirmations["c1"].payload == {"to": p}
    assert a.transfer_to_agent == "billing" and a.artifact_delta == {"report.pdf": 2}
    assert (out.id, out.author, out.invocation_id, out.branch) == ("e1", "agent", "inv-13912340017", "root")
    assert ev.content.parts[0].text == "call me on 139 12"  # the caller's event is untouched
    Event.model_validate_json(out.model_dump_json())  # still a valid event

    keep = await redact_event(R, ev, keep_binary=True)
    assert keep.content.parts[3].inline_data.data == b"\x89PNG a@b.io"


def test_per_app_redactors_and_rules():
    billing = RuleRedactor(rules=[Rule("CONTRACT", pattern=__import__("re").compile(r"C-\d{8}"))])
    policy = RedactionPolicy(app_redactors={"billing": billing}, modes={"internal": "off"})
    assert policy.redactor_for("billing") is billing and policy.redactor_for("shop") is policy.redactor
    assert policy.redactor_for("internal") is None
    assert billing.redact_sync("contract C-12345678 for a@b.io") == "contract [REDACTED:CONTRACT] for [REDACTED:EMAIL]"
    assert {"EMAIL", "PHONE", "ID_CARD", "BANK_CARD", "IP", "API_KEY", "TOKEN", "PASSWORD", "IBAN"} <= set(BUILTIN_LABELS)


def test_the_labelled_set_meets_the_goals():
    """The test split of benchmarks/redaction_eval.py: recall >= 0.99 on the promised formats, FPR <= 1%."""
    hits = total = false_pos = negatives = 0
    for ex in labelled_set(20261125):
        found = R.find(ex.text)
        if ex.span is None:
            negatives += 1
            false_pos += bool(found)
        elif ex.kind in PROMISED:
            total += 1
            hits += any(s <= ex.span[0] and e >= ex.span[1] for s, e, _ in found)
    assert total >= 300 and negatives >= 500
    assert hits / total >= 0.99 and false_pos / negatives <= 0.01
