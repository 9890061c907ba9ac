"""The labelled redaction set, generated from a seed: positives per format and look-alike negatives, English and Chinese.

Code, not data: ``labelled_set(seed)`` returns the same examples for the same
seed.  Each example is ``(text, format, span)``: ``span`` is where the PII is
(``None`` for a negative).  Formats marked *promised* are the ones README.md
promises; the others are the newer default rules.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

__all__ = ["Example", "PROMISED", "labelled_set"]

PROMISED = ("EMAIL", "PHONE_CN", "PHONE_US", "PHONE_INTL", "ID_CARD", "BANK_CARD", "IPV4", "IPV6")


@dataclass(frozen=True)
class Example:
    text: str
    kind: str
    """The format (a positive) or the look-alike category (a negative)."""
    span: tuple[int, int] | None


_FW = str.maketrans("0123456789@.", "０１２３４５６７８９＠．")
_CYR = str.maketrans("aeop", "аеор")
_WORDS_EN = {
    "EMAIL": "email", "PHONE_CN": "mobile", "PHONE_US": "phone", "PHONE_INTL": "phone", "LANDLINE_CN": "office line",
    "ID_CARD": "ID number", "ID_LEGACY": "old ID", "BANK_CARD": "card", "IPV4": "server", "IPV6": "host",
    "API_KEY": "key", "TOKEN": "header", "PASSWORD": "login", "IBAN": "IBAN",
}
_WORDS_ZH = {
    "EMAIL": "邮箱", "PHONE_CN": "手机", "PHONE_US": "美国电话", "PHONE_INTL": "电话", "LANDLINE_CN": "座机",
    "ID_CARD": "身份证号", "ID_LEGACY": "旧身份证", "BANK_CARD": "银行卡号", "IPV4": "服务器", "IPV6": "地址",
    "API_KEY": "密钥", "TOKEN": "令牌", "PASSWORD": "账号", "IBAN": "账户",
}
_EN = ["Please reach me via {v} tomorrow.", "My {w} is {v}.", "{v}", "ok, {w}: {v}, thanks!", "Noted ({v}) for later"]
_ZH = ["我的{w}是{v}，谢谢", "请用{v}联系我。", "{w}：{v}", "{v}", "好的，记下了{v}。"]


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice(string.digits) for _ in range(n))


def _luhn_complete(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _digits(r, length - len(prefix) - 1)
    for d in string.digits:
        cand = body + d
        total = sum((int(c) * 2 - 9 if int(c) * 2 > 9 else int(c) * 2) if i % 2 else int(c) for i, c in enumerate(reversed(cand)))
        if total % 10 == 0:
            return cand
    raise AssertionError


def _group(s: str, sizes: list[int], sep: str) -> str:
    out, i = [], 0
    for n in sizes:
        out.append(s[i : i + n])
        i += n
    if i < len(s):
        out.append(s[i:])
    return sep.join(p for p in out if p)


def _email(r: random.Random) -> str:
    local = r.choice(["zhao.linwei", "ann.lee", "j_smith", "wang.fang", "li-na", "mike+work", "chen88", "o.brien"]) + _digits(r, r.randint(0, 3))
    domain = r.choice(["example.com", "mail.example.co.uk", "corp.example.org", "qq.com", "163.com", "exämple.de", "例子.中国", "müller.example"])
    v = f"{local}@{domain}"
    style = r.random()
    if style < 0.15:
        v = v.translate(_FW)
    elif style < 0.3:
        v = v.translate(_CYR)
    elif style < 0.4:
        v = v[:3] + "\u200d" + v[3:]
    elif style < 0.5:
        v = v.upper()
    return v


def _cn_mobile(r: random.Random) -> str:
    n = "1" + r.choice("3456789") + _digits(r, 9)
    style = r.randrange(8)
    return [n, _group(n, [3, 4, 4], " "), _group(n, [4, 4, 3], " "), _group(n, [3, 4, 4], "-"), "+86 " + _group(n, [3, 4, 4], " "),
            "86" + n, n.translate(_FW), n[:4] + "\u200b" + n[4:]][style]


def _nanp(r: random.Random) -> str:
    area = r.choice("23456789") + r.choice("012345678") + r.choice(string.digits)
    while area[1:] == "11":
        area = area[0] + r.choice("02345678") + r.choice(string.digits)
    ex = r.choice("23456789") + _digits(r, 2)
    while ex[1:] == "11":
        ex = r.choice("23456789") + _digits(r, 2)
    line = _digits(r, 4)
    return r.choice([f"({area}) {ex}-{line}", f"{area}-{ex}-{line}", f"{area} {ex} {line}", f"{area}{ex}{line}",
                     f"+1 {area} {ex} {line}", f"{area}.{ex}.{line}", f"1-{area}-{ex}-{line}"])


def _intl(r: random.Random) -> str:
    return r.choice([
        f"+44 20 {_digits(r, 4)} {_digits(r, 4)}", f"+49 30 {_digits(r, 7)}", f"+33 1 {_digits(r, 2)} {_digits(r, 2)} {_digits(r, 2)} {_digits(r, 2)}",
        f"+81 3-{_digits(r, 4)}-{_digits(r, 4)}", f"+61 2 {_digits(r, 4)} {_digits(r, 4)}", f"+91 98{_digits(r, 3)} {_digits(r, 5)}",
    ])


def _landline(r: random.Random) -> str:
    code = r.choice(["010", "021", "020", "0755", "0571", "028"])
    local = r.choice("2345678") + _digits(r, 7 if len(code) == 3 else r.choice([6, 7]))
    return r.choice([f"{code}-{local}", f"({code}) {local[:4]} {local[4:]}", f"{code} {local}"])


def _prc_id(r: random.Random, check_ok: bool = True) -> str:
    weights, table = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2), "10X98765432"
    body = r.choice(["110105", "310104", "440305", "510107", "330106"]) + str(r.randint(1950, 2005)) + f"{r.randint(1, 12):02d}{r.randint(1, 28):02d}" + _digits(r, 3)
    check = table[sum(int(c) * w for c, w in zip(body, weights)) % 11]
    if not check_ok:
        check = table[(table.index(check) + 1) % 11]
    return body + check


def _id(r: random.Random) -> str:
    n = _prc_id(r)
    return r.choice([n, _group(n, [6, 8, 4], " "), n.lower(), n.translate(_FW)])


def _legacy(r: random.Random) -> str:
    return r.choice(["110105", "440305", "510107"]) + f"{r.randint(30, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}" + _digits(r, 3)


_ISSUERS = [("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16), ("65", 16),
            ("62", 16), ("62", 19), ("3530", 16), ("36", 14)]


def _card(r: random.Random) -> str:
    prefix, n = r.choice(_ISSUERS)
    c = _luhn_complete(r, prefix, n)
    return r.choice([c, _group(c, [4, 4, 4, 4], " "), _group(c, [4, 4, 4, 4], "-"), _group(c, [4, 4, 4, 4], "."), c.translate(_FW)])


def _ipv4(r: random.Random) -> str:
    return ".".join(str(x) for x in [r.choice([10, 172, 192, 8, 47, 114, 203]), r.randint(0, 255), r.randint(0, 255), r.randint(1, 254)])


def _ipv6(r: random.Random) -> str:
    groups = [f"{r.randint(0, 0xFFFF):x}" for _ in range(8)]
    return r.choice([":".join(groups), "2001:db8::" + ":".join(groups[:3]), "fe80::" + ":".join(groups[:4])])


def _alnum(r: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    s = "".join(r.choice(alphabet) for _ in range(n))
    return s[:-1] + r.choice(string.digits)


def _api_key(r: random.Random) -> str:
    return r.choice([
        "sk-" + _alnum(r, 48), "sk-proj-" + _alnum(r, 40), "AKIA" + _alnum(r, 16, string.ascii_uppercase + string.digits),
        "ghp_" + _alnum(r, 36), "github_pat_" + _alnum(r, 40), "AIza" + _alnum(r, 35), "xoxb-" + _digits(r, 12) + "-" + _alnum(r, 24),
    ])


def _b64url(r: random.Random, n: int) -> str:
    return _alnum(r, n, string.ascii_letters + string.digits + "-_")


def _token(r: random.Random) -> str:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJ" + _b64url(r, 30) + "." + _b64url(r, 43)
    return r.choice([jwt, ("Bearer ", _b64url(r, 32))])


def _password(r: random.Random) -> str:
    secret = _alnum(r, r.randint(8, 14), string.ascii_letters + string.digits + "!#$%&*")
    return (r.choice(["password: ", "密码：", "pwd=", "my password is ", "密码是"]), secret)


def _iban(r: random.Random) -> str:
    country, bban = r.choice([("DE", lambda: _digits(r, 18)), ("GB", lambda: "WEST" + _digits(r, 14)), ("FR", lambda: _digits(r, 23)),
                               ("NL", lambda: "ABNA" + _digits(r, 10)), ("ES", lambda: _digits(r, 20))])
    b = bban()
    check = 98 - int("".join(str(int(c, 36)) for c in b + country + "00")) % 97
    v = f"{country}{check:02d}{b}"
    return r.choice([v, " ".join(v[i : i + 4] for i in range(0, len(v), 4))])


GENERATORS = {
    "EMAIL": _email, "PHONE_CN": _cn_mobile, "PHONE_US": _nanp, "PHONE_INTL": _intl, "LANDLINE_CN": _landline,
    "ID_CARD": _id, "ID_LEGACY": _legacy, "BANK_CARD": _card, "IPV4": _ipv4, "IPV6": _ipv6,
    "API_KEY": _api_key, "TOKEN": _token, "PASSWORD": _password, "IBAN": _iban,
}


def _negatives(r: random.Random) -> dict[str, list[str]]:
    """Look-alikes, by category: what a naive rule set redacts."""
    order16 = lambda: r.choice("123456789") + _digits(r, 15)  # noqa: E731
    return {
        "version_ip": [f"SDK version {r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}.{r.randint(0, 99)}",
                       f"see section {r.randint(1, 20)}.{r.randint(1, 9)}.{r.randint(0, 9)}.{r.randint(1, 9)}",
                       f"升级到版本 {r.randint(1, 9)}.{r.randint(0, 9)}.{r.randint(0, 9)}.{r.randint(1, 99)}",
                       f"build {r.randint(1, 9)}.{r.randint(0, 9)}.{r.randint(100, 999)}.{r.randint(1, 9)}"],
        "bad_octets": [f"{r.randint(256, 999)}.{r.randint(0, 9)}.{r.randint(0, 9)}.{r.randint(0, 9)}",
                       f"0{r.randint(1, 9)}.0{r.randint(1, 9)}.{r.randint(1, 9)}.{r.randint(1, 9)}"],
        "invoice_card": [f"invoice number {_luhn_complete(r, '4', 16)}", f"order {order16()} shipped", f"发票号码 {_luhn_complete(r, '5' + r.choice('12345'), 16)}",
                         f"订单号：{order16()}", f"transaction id {_luhn_complete(r, '62', 16)}"],
        "tracking_phone": [f"parcel tracking number 1{r.choice('3456789')}{_digits(r, 9)}", f"快递单号 1{r.choice('3456789')}{_digits(r, 9)}",
                           f"waybill 1{r.choice('3456789')}{_digits(r, 9)}", f"order ref {r.choice('23456789')}{_digits(r, 9)}"],
        "score": [f"score +{r.randint(10, 99)} {_digits(r, 3)} {_digits(r, 3)}", f"得分 +{r.randint(10, 99)} {_digits(r, 3)} {_digits(r, 3)}",
                  f"balance +{r.randint(1, 9)} {_digits(r, 3)} {_digits(r, 3)}"],
        "order_id_bare": [order16()],
        "numbers": [f"ts {r.randint(1_600_000_000, 1_800_000_000)}", f"ts_ms {r.randint(1_600_000_000_000, 1_800_000_000_000)}",
                    f"{r.randint(2000, 2030)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00",
                    f"costs ${r.randint(1, 99)},{_digits(r, 3)}.{_digits(r, 2)}", f"ISBN 978-{r.randint(0, 9)}-{_digits(r, 2)}-{_digits(r, 6)}-{r.randint(0, 9)}",
                    f"pi is 3.{_digits(r, 8)}", f"room {_digits(r, 5)} floor {r.randint(1, 30)}", f"{r.randint(1, 99)},{_digits(r, 3)},{_digits(r, 3)} people",
                    f"coords {r.randint(-90, 90)}.{_digits(r, 4)}, {r.randint(-180, 180)}.{_digits(r, 4)}", f"人口 {r.randint(1, 99)} {_digits(r, 3)} {_digits(r, 3)}"],
        "bad_checksum": [_prc_id(r, check_ok=False), _luhn_complete(r, "4", 16)[:-1] + "x", f"{_legacy(r)[:8]}13{_digits(r, 5)}"],
        "ids_and_hashes": [f"{r.getrandbits(128):032x}", f"commit {r.getrandbits(160):040x}", f"color #{r.getrandbits(24):06x}",
                           f"uuid {r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-a{r.getrandbits(12):03x}-{r.getrandbits(48):012x}"],
        "words": ["the password is required", "请输入密码", "task-list and desk-lamp-shop", "reset your password here",
                  "my email is down", "密码错误，请重试", "send it by e-mail @ noon", "std::vector and ::1 in prose", "a@b is not an address"],
    }


def labelled_set(seed: int, positives_per_format: int = 48, negatives: int = 720) -> list[Example]:
    """``positives_per_format`` examples of each format (half English, half Chinese) and ``negatives`` look-alikes."""
    r = random.Random(seed)
    out: list[Example] = []
    for kind, make in GENERATORS.items():
        for i in range(positives_per_format):
            v = make(r)
            lead = ""
            if isinstance(v, tuple):  # (what introduces it, the secret): the secret is what must go
                lead, v = v
            tpl = r.choice(_EN if i % 2 == 0 else _ZH)
            words = _WORDS_EN if i % 2 == 0 else _WORDS_ZH
            head, _, tail = tpl.partition("{v}")
            head = head.format(w=words[kind])
            tail = tail.format(w=words[kind])
            out.append(Example(head + lead + v + tail, kind, (len(head) + len(lead), len(head) + len(lead) + len(v))))
    for _ in range(negatives):
        category, texts = r.choice(sorted(_negatives(r).items()))
        t = r.choice(texts)
        if r.random() < 0.3 and category not in ("words",):
            t = r.choice(["我记得", "note: ", "FYI ", "备注："]) + t
        out.append(Example(t, category, None))
    return out
