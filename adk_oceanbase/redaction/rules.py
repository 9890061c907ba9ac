"""The built-in rules: what each label finds, with its validator and the context that rules it out.

Every rule runs on normalised text (:mod:`.normalise`): ASCII digits, ``@``,
``-`` and ``' '`` as separators.  A rule is a pattern that proposes a span, a
validator that decides (:mod:`.checks`), and for the ambiguous numeric rules
a set of *context* keywords: when the nearest keyword in the 40 characters
before a candidate names an order, invoice, parcel, score or version rather
than a phone, card or address, the candidate is left alone ("invoice number
4000123412341234", "parcel tracking number 13800001111", "SDK version
1.2.3.4").  The table is :data:`BUILTIN_RULES`; README.md lists it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from . import checks

__all__ = ["BUILTIN_RULES", "Rule", "triggered"]

# Boundaries in ASCII: Chinese text glues digits to characters ("手机是13800138000谢谢"),
# and Python's \w would count those characters as word characters.
_D = r"(?<![A-Za-z0-9_.+-])"  # not glued to a latin word, a decimal, or another number
_E = r"(?![A-Za-z0-9_]|[.-]\d)"
_S = r"[ .-]?"  # one optional separator (normalisation made every dash "-" and every space " ")


def _keywords(words: str) -> str:
    """ASCII words as whole words, CJK words as they are."""
    ascii_words = [w for w in words.split("|") if w.isascii()]
    other = [w for w in words.split("|") if not w.isascii()]
    return rf"(?<![a-z])(?:{'|'.join(ascii_words)})(?![a-z])" + (f"|{'|'.join(other)}" if other else "")


_ORDER = _keywords(
    "invoice|order|orders|tracking|parcel|package|shipment|waybill|reference|ref|receipt|transaction|txn|serial|"
    "sku|isbn|ticket|booking|confirmation|case|batch|lot|model|part|版本号|订单|单号|发票|快递|运单|物流|编号|流水|序列号|工单|票号|批次"
)
_SCORE = _keywords(
    "score|scores|scored|points|pts|votes|balance|total|amount|count|population|revenue|得分|分数|积分|余额|总计|金额|人口"
)
_VERSION = _keywords(
    "version|versions|ver|release|build|section|sect|sec|chapter|clause|article|paragraph|para|rule|item|step|"
    "§|版本|章节|条款|小节|条|节|章"
)
_POSITIVE = _keywords(
    "phone|tel|telephone|mobile|cell|call|text|sms|whatsapp|wechat|fax|contact|reach|card|visa|mastercard|amex|"
    "credit|debit|ip|host|server|address|addr|email|mail|手机|电话|联系|致电|微信|卡号|银行卡|信用卡|身份证|邮箱|地址|服务器"
)
_NOT_PII = re.compile(f"(?P<neg_id>{_ORDER}|{_SCORE})|(?P<neg_ip>{_VERSION})|(?P<pos>{_POSITIVE})", re.IGNORECASE)
_WINDOW = 40


def _context_rules_out(text: str, start: int, group: str) -> bool:
    """Whether the nearest keyword before ``start`` says "not this kind of PII" (``group``: neg_id or neg_ip)."""
    last = None
    for m in _NOT_PII.finditer(text, max(0, start - _WINDOW), start):
        last = m.lastgroup
    return last == group


@dataclass(frozen=True)
class Rule:
    """One detection rule: ``pattern`` proposes, ``check`` validates, ``context`` vetoes.

    Args:
        label: the placeholder's label, e.g. ``PHONE`` -> ``[REDACTED:PHONE]``.
        pattern: a compiled regex run on normalised text.
        check: validates the match (its digits when ``digits_only``); ``None`` accepts every match.
        group: the regex group to redact (``1`` keeps "password: " and redacts only the value).
        context: ``"neg_id"`` (order/invoice/score keywords veto) or ``"neg_ip"`` (version/section keywords veto).
        finder: replaces pattern matching entirely (the IBAN rule: its length depends on its country).
    """

    label: str
    pattern: re.Pattern[str] | None = None
    check: Callable[[str], bool] | None = None
    digits_only: bool = False
    group: int = 0
    context: str | None = None
    finder: Callable[[str], Iterator[tuple[int, int]]] | None = None

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        """Spans of ``text`` (normalised) this rule redacts."""
        if self.finder is not None:
            yield from self.finder(text)
            return
        assert self.pattern is not None
        for m in self.pattern.finditer(text):
            found = m.group(0)
            if self.check is not None:
                probe = re.sub(r"[^0-9Xx]", "", found) if self.digits_only else found
                if not self.check(probe):
                    continue
            if self.context is not None and _context_rules_out(text, m.start(), self.context):
                continue
            yield m.span(self.group)


_PASSWORD_PARTS = re.compile(
    r"(?is).*?(?:password|passwd|passcode|pwd|passphrase|密码|口令)(\s*[:=]|\s+(?:is|was|=)\s+|\s*(?:是|为|為))\s*(.*)$"
)


def _password_ok(match: str) -> bool:
    """After ":" or "=" anything is the password; after "is" / "是" only a value with a digit or a
    symbol is ("the password is required" and "密码是必填项" are prose)."""
    parts = _PASSWORD_PARTS.match(match)
    if parts is None:
        return False
    separator, value = parts.groups()
    if ":" in separator or "=" in separator:
        return True
    return any(c.isdigit() or not (c.isalnum() or c.isspace()) for c in value)


_IPV6 = re.compile(r"(?<![A-Za-z0-9_])(?:[0-9A-Fa-f]{0,4}:){2,8}[0-9A-Fa-f]{0,4}(?![A-Za-z0-9_])")


def _ipv6s(text: str) -> Iterator[tuple[int, int]]:
    """IPv6 addresses; a colon glued on either side ("地址：2001:db8::1", NFKC makes "：" a colon) is not part of one."""
    for m in _IPV6.finditer(text):
        start, end = m.span()
        for a, b in ((start, end), (start + 1, end), (start, end - 1), (start + 1, end - 1)):
            if b - a > 2 and checks.ipv6_ok(text[a:b]) and not text[a:b].startswith(":::"):
                yield a, b
                break


_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})((?: ?[A-Z0-9]){11,30})")


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    """IBANs, grouped by fours or not: the country fixes the length, mod-97 decides."""
    for m in _IBAN.finditer(text):
        length = checks.iban_length(m.group(1))
        if length is None:
            continue
        want, end = length - 4, m.start(3)
        while want and end < m.end():
            if text[end] != " ":
                want -= 1
            end += 1
        compact = (m.group(1) + m.group(2) + text[m.start(3) : end]).replace(" ", "")
        if want == 0 and (end == len(text) or not (text[end].isascii() and text[end].isalnum())) and checks.iban_ok(compact):
            yield m.start(), end


# A local-part character: a letter, digit or "_" of any script but CJK, kana and Hangul (which glue to the address in prose).
_LOCAL = r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
# Labels of letters and digits of any script (IDN: exämple.de, 例子.中国), then a TLD.
_DOMAIN = r"(?:[^\W_]|-)+(?:\.(?:[^\W_]|-)+)*\.(?:[A-Za-z]{2,63}(?![A-Za-z0-9])|xn--[A-Za-z0-9-]+|[^\W\d_A-Za-z]{2,})"
BUILTIN_RULES: tuple[Rule, ...] = (
    Rule(
        "EMAIL",
        re.compile(
            rf"(?<!{_LOCAL})(?<![.%+-]){_LOCAL}(?:{_LOCAL}|[.%+-])*@{_DOMAIN}"),
    ),
    # a local part in Chinese, Japanese or Korean (EAI addresses: 用户@例子.中国)
    Rule("EMAIL", re.compile(rf"(?<![\w.%+-])[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]{{1,16}}@{_DOMAIN}")),
    Rule("PRIVATE_KEY", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")),
    Rule(
        "API_KEY",
        re.compile(
            r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-(?:api\d\d-)?|live-)?[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
            r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|AIza[0-9A-Za-z_-]{35}|xox[abposr]-[A-Za-z0-9-]{10,}"
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})(?![A-Za-z0-9])"
        ),
        check=lambda s: any(c.isdigit() for c in s),
    ),
    Rule("TOKEN", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}")),
    Rule("TOKEN", re.compile(r"(?i:(?<![a-z])bearer)\s+([A-Za-z0-9._~+/=-]{16,})"), group=1),
    Rule(
        "PASSWORD",
        re.compile(
            r"(?i:(?<![a-z])(?:password|passwd|passcode|pwd|passphrase)(?![a-z])|密码|口令)"
            r"(?:\s*[:=]|\s+(?i:is|was|=)\s+|\s*(?:是|为|為))\s*([^\s,;。]+?)(?=[.)]?(?:\s|$|[,;。]))"
        ),
        check=_password_ok,
        group=1,
    ),
    Rule("IBAN", finder=_ibans),
    Rule("ID_CARD", re.compile(_D + r"[1-9](?:" + _S + r"\d){16}" + _S + r"[\dXx]" + _E), checks.prc_id_ok, digits_only=True),
    Rule("ID_CARD", re.compile(_D + r"[1-9](?:" + _S + r"\d){14}" + _E), checks.legacy_id_ok, digits_only=True, context="neg_id"),
    Rule("BANK_CARD", re.compile(_D + r"[2-6](?:" + _S + r"\d){12,18}" + _E), checks.card_ok, digits_only=True, context="neg_id"),
    Rule("IP", re.compile(r"(?<![A-Za-z0-9_.])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![A-Za-z0-9_]|\.\d)"), checks.ipv4_ok, context="neg_ip"),
    Rule("IP", finder=_ipv6s),
    # +CC then more digits in groups: +86 138 0013 8000, +1 (415) 555-0132, +44 20 7946 0958
    Rule(
        "PHONE",
        re.compile(r"(?<![A-Za-z0-9_+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,6}" + _E),
        checks.intl_phone_ok, digits_only=True, context="neg_id",
    ),
    # mainland-China mobile, optionally with 86 / 0086: 13800138000, 138 0013 8000, 1391 2340 017, 8613912340006
    Rule("PHONE", re.compile(_D + r"(?:(?:00)?86" + _S + r")?1[3-9](?:" + _S + r"\d){9}" + _E), context="neg_id"),
    # North-American: (415) 555-0132, 415-555-0132, 415 555 0199, 4155550198, 1-415-555-0132
    Rule(
        "PHONE",
        re.compile(r"(?<![A-Za-z0-9_+.-])(?:1" + _S + r")?(?:\(\d{3}\) ?|\d{3}" + _S + r")\d{3}" + _S + r"\d{4}" + _E),
        checks.nanp_ok, digits_only=True, context="neg_id",
    ),
    # Chinese landlines: 010-12345678, (0755) 2345 6789, 021 6234 5678
    Rule(
        "PHONE",
        re.compile(_D + r"(?:\(0(?:10|2\d|[3-9]\d\d)\)|0(?:10|2\d|[3-9]\d\d))" + _S + r"[2-8]\d{2,3}" + _S + r"\d{3,4}" + _E),
        lambda digits: 10 <= len(digits) <= 12, digits_only=True, context="neg_id",
    ),
)
"""The default rule set, in the order overlapping findings are resolved (earlier wins a tie)."""

_TRIGGER_CHARS = re.compile(r"[\d@:=\uff20\ufe6b\uff1a\uff1d]")  # \d is Unicode: full-width digits too
_TRIGGER_WORDS = ("sk-", "akia", "asia", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat", "eyj", "bearer", "begin",
                  "xox", "aiza", "密码", "口令", "passw", "passphrase", "pwd")


def triggered(text: str) -> bool:
    """Whether any built-in rule could match ``text``; most chat text has no digit, "@", ":" or key-like word.

    Run on the raw text first (so text that cannot match is not even normalised), then on the normalised one.

    Substring tests, not one alternation: a case-insensitive regex of these words cost ~20 us on a
    200-character turn, the substring tests ~1 us (measured with benchmarks/governance.py's workload).
    """
    if _TRIGGER_CHARS.search(text):
        return True
    low = text.lower()
    return any(w in low for w in _TRIGGER_WORDS)
