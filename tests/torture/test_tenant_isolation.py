"""Tenant isolation, property-style: ids that differ by one character never see or touch each other's rows.

Key columns are ``utf8mb4_bin``, PAD SPACE on seekdb and MariaDB: ``'alice' =
'alice '``.  So a trailing space is refused with a typed error (issue #9);
every other difference (case, ``%``, ``_``, a trailing tab or NBSP, CJK)
compares exactly and must stay isolated.  A seeded generator (hypothesis is
not a dependency) builds pairs of tenants that differ in one place: the app
name, the user id, the session id, or a state key.  Every session and memory
operation then runs on one of them while the other's rows, read back with a
byte-exact (``BINARY``) comparison in SQL, must stay as they were and never be
returned.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, replace

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import InvalidIdentifierError, InvalidStateError, OceanBaseSessionService
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

SEED = 20261122
PAIRS = 210
VARIANTS = ("case", "underscore", "percent", "tab", "nbsp", "cjk", "space")
DIMENSIONS = ("app", "user", "session", "key")
_ALPHABET = string.ascii_letters + "_%-.数据库キー"


@dataclass(frozen=True)
class Tenant:
    app: str
    user: str
    sid: str
    key: str = "k"


def variant_pair(rng: random.Random, kind: str, base: str) -> tuple[str, str]:
    """Two strings differing only by ``kind``; for "space" the first one ends in a space."""
    pairs = {
        "case": (base, base.swapcase()),
        "underscore": (base + "_", base + "x"),  # LIKE 'b_' would match 'bx'
        "percent": (base + "%", base + "xyz"),  # LIKE 'b%' would match 'bxyz'
        "tab": (base, base + "\t"),
        "nbsp": (base, base + "\u00a0"),
        "cjk": (base + "数", base + "據"),
        "space": (base + " ", base),
    }
    a, b = pairs[kind]
    return (b, a) if kind != "space" and rng.random() < 0.5 else (a, b)


def tenant_pairs(rng: random.Random, n: int) -> list[tuple[str, str, Tenant, Tenant]]:
    out = []
    for i in range(n):
        kind, dim = VARIANTS[i % len(VARIANTS)], DIMENSIONS[(i // len(VARIANTS)) % len(DIMENSIONS)]
        word = lambda: rng.choice(string.ascii_letters) + "".join(rng.choices(_ALPHABET, k=rng.randint(2, 8)))  # noqa: E731
        # the pair number keeps pairs apart; a letter first so swapcase changes something
        base = Tenant(f"{word()}{i}", word(), word())
        x, y = variant_pair(rng, kind, getattr(base, "sid" if dim == "session" else dim))
        field = {"session": "sid"}.get(dim, dim)
        out.append((kind, dim, replace(base, **{field: x}), replace(base, **{field: y})))
    return out


def test_generator_covers_every_variant_and_dimension():
    pairs = tenant_pairs(random.Random(SEED), PAIRS)
    assert {(k, d) for k, d, _, _ in pairs} == {(k, d) for k in VARIANTS for d in DIMENSIONS}
    for kind, _, a, b in pairs:
        assert a != b and (kind == "space") == any(v.endswith(" ") for v in (a.app, a.user, a.sid, a.key))


async def rows_of(db, t: Tenant, dim: str) -> dict[str, list[tuple]]:
    """Every row the ``dim`` part of ``t`` owns, matched byte for byte (no PAD SPACE, no case folding)."""
    app = "BINARY app_name = BINARY :app"
    user = f"{app} AND BINARY user_id = BINARY :user"
    sess = f"{user} AND BINARY session_id = BINARY :sid"
    owned = {
        "app": (app, app, app, app),
        "user": (user, user, f"{user} AND scope <> 'app'", user),
        "session": (sess, sess, f"{sess} AND scope = 'session'", None),
        "key": (None, None, f"{app} AND BINARY state_key = BINARY :key", None),
    }[dim]
    queries = {
        "sessions": "SELECT user_id, session_id, last_seq FROM agent_sessions WHERE {}",
        "events": "SELECT user_id, session_id, seq, event_id FROM session_events WHERE {}",
        "state": "SELECT scope, user_id, session_id, state_key, value_json FROM session_state WHERE {}",
        # content, not embed_status: the background embedder moves that on its own
        "memories": "SELECT memory_id, content FROM agent_memories WHERE {}",
    }
    params = {"app": t.app, "user": t.user, "sid": t.sid, "key": t.key}
    out = {}
    async with db.engine.connect() as conn:
        for (name, sql), where in zip(queries.items(), owned):
            if where is not None:
                out[name] = sorted(tuple(r) for r in (await conn.execute(text(sql.format(where) + " ORDER BY 1, 2"), params)).all())
    return out


async def total_rows(db) -> tuple[int, ...]:
    async with db.engine.connect() as conn:
        return tuple(
            [(await conn.execute(text(f"SELECT COUNT(*) FROM {t}"))).scalar_one()
             for t in ("agent_sessions", "session_events", "session_state", "agent_memories")]
        )


def delta_event(delta: dict, tag: str) -> Event:
    return Event(
        author="user", invocation_id=f"inv-{tag}",
        content=types.Content(role="user", parts=[types.Part(text=f"turn {tag}")]),
        actions=EventActions(state_delta=delta),
    )


def state_of(t: Tenant, tag: str) -> dict:
    """Session, user and app keys for ``t``; a ``key`` pair writes the same scopes under its two keys."""
    return {t.key: tag, f"user:{t.key}": tag, f"app:{t.key}": tag}


async def seed_observer(sessions, memory, b: Tenant, n: int) -> str:
    """B's rows: a session with state in every scope, an event with a delta, a memory. Returns the memory id."""
    s = await sessions.create_session(app_name=b.app, user_id=b.user, session_id=b.sid, state=state_of(b, "B"))
    await sessions.append_event(s, delta_event({b.key: "B2"}, "B"))
    mid = f"mem-B-{n}"
    await memory.add_memory(app_name=b.app, user_id=b.user, memories=[MemoryEntry(
        id=mid, content=types.Content(parts=[types.Part(text="observer secret pineapple")]))])
    return mid


async def act(sessions, memory, a: Tenant, b: Tenant, dim: str, b_memory: str) -> None:
    """Every operation on A; asserts A never gets B's data back."""
    other_session = (b.app, b.user, b.sid)
    same_session = dim == "key"  # a key pair lives in one session: A writes its key into B's session
    if same_session:
        s = await sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid)
        await sessions.append_event(s, delta_event(state_of(a, "A"), "A0"))
    else:
        s = await sessions.create_session(app_name=a.app, user_id=a.user, session_id=a.sid, state=state_of(a, "A"))
        assert s.id == a.sid and s.state[a.key] == "A"
    got = await sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid)
    assert (got.app_name, got.user_id, got.id) == (a.app, a.user, a.sid)
    assert got.state[a.key] == "A"
    if dim in ("app", "user"):
        assert got.state[f"user:{a.key}"] == "A"
        assert all(e.invocation_id != "inv-B" for e in got.events)
    if dim == "key":
        assert got.state[b.key] == "B2"  # both keys, each its own value
    listed = (await sessions.list_sessions(app_name=a.app, user_id=a.user)).sessions
    page = (await sessions.list_sessions_page(app_name=a.app, user_id=a.user, limit=10)).sessions
    for found in (listed, page):
        ids = {(x.app_name, x.user_id, x.id) for x in found}
        assert (a.app, a.user, a.sid) in ids
        if dim in ("app", "user"):
            assert other_session not in ids
        for x in found:
            if (x.app_name, x.user_id, x.id) == (a.app, a.user, a.sid):
                assert x.state[a.key] == "A"
            if (x.app_name, x.user_id, x.id) == other_session:
                assert x.state[b.key] == "B2"
    user_state = await sessions.get_user_state(app_name=a.app, user_id=a.user)
    assert user_state[a.key] == "A"
    await sessions.append_event(got, delta_event({a.key: "A2", f"user:{a.key}": "A2"}, "A"))
    again = await sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid)
    assert again.state[a.key] == "A2" and (dim != "key" or again.state[b.key] == "B2")

    await memory.add_memory(app_name=a.app, user_id=a.user, memories=[MemoryEntry(
        id="mem-A-" + b_memory[6:], content=types.Content(parts=[types.Part(text="actor note pineapple")]))])
    hits = await memory.search(a.app, a.user, "pineapple", top_k=10)
    if dim in ("app", "user"):
        assert b_memory not in {h.memory_id for h in hits}
        await memory.delete_memory(app_name=a.app, user_id=a.user, memory_id=b_memory)  # not A's: a no-op
    await memory.delete_memory(app_name=a.app, user_id=a.user, memory_id="mem-A-" + b_memory[6:])
    if not same_session:
        await sessions.delete_session(app_name=a.app, user_id=a.user, session_id=a.sid)


async def refused(sessions, memory, a: Tenant, b: Tenant) -> None:
    """Every operation on a tenant with a trailing space raises a typed error."""
    bad_key = a.key.endswith(" ")
    error = InvalidStateError if bad_key else InvalidIdentifierError
    calls = [
        lambda: sessions.create_session(app_name=a.app, user_id=a.user, session_id=a.sid, state=state_of(a, "A")),
    ]
    if bad_key:

        async def append_bad_key():
            s = await sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid)
            await sessions.append_event(s, delta_event({a.key: "A"}, "A"))

        async def append_bad_user_key():
            s = await sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid)
            await sessions.append_event(s, delta_event({f"user:{a.key}": "A"}, "A"))

        calls += [append_bad_key, append_bad_user_key]
    else:

        async def append_to_padded():
            s = await sessions.get_session(app_name=b.app, user_id=b.user, session_id=b.sid)
            s.app_name, s.user_id, s.id = a.app, a.user, a.sid
            await sessions.append_event(s, delta_event({"k": "A"}, "A"))

        calls += [
            lambda: sessions.get_session(app_name=a.app, user_id=a.user, session_id=a.sid),
            append_to_padded,
            lambda: sessions.delete_session(app_name=a.app, user_id=a.user, session_id=a.sid),
        ]
    if not bad_key and not a.sid.endswith(" "):  # the app name or user id is the padded one
        calls += [
            lambda: sessions.list_sessions(app_name=a.app, user_id=a.user),
            lambda: sessions.list_sessions_page(app_name=a.app, user_id=a.user),
            lambda: sessions.get_user_state(app_name=a.app, user_id=a.user),
            lambda: memory.add_memory(app_name=a.app, user_id=a.user, memories=[MemoryEntry(
                content=types.Content(parts=[types.Part(text="padded pineapple")]))]),
            lambda: memory.search(a.app, a.user, "pineapple"),
            lambda: memory.delete_memory(app_name=a.app, user_id=a.user, memory_id="x"),
        ]
    for call in calls:
        with pytest.raises(error, match="ends with a space"):
            await call()


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    """Both PAD SPACE engines: the rule must hold on each."""
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


async def test_tenants_differing_by_one_character_never_touch_each_other(db):
    sessions = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        for n, (kind, dim, a, b) in enumerate(tenant_pairs(random.Random(SEED), PAIRS)):
            b_memory = await seed_observer(sessions, memory, b, n)
            before, totals = await rows_of(db, b, dim), await total_rows(db)
            if kind == "space":
                await refused(sessions, memory, a, b)
                assert await total_rows(db) == totals, (kind, dim, a)
            else:
                await act(sessions, memory, a, b, dim, b_memory)
            assert await rows_of(db, b, dim) == before, (kind, dim, a, b)
    finally:
        await memory.close()
