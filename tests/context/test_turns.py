"""Turns (issue #30): the index, each turn's diff by scope, snapshots equal to replay from checkpoints, sandbox replays."""

from __future__ import annotations

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import func, select

import pytest

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.compaction import replay_state
from adk_oceanbase.context import snapshots
from adk_oceanbase.context.turns import list_turns, replay_to_sandbox, turn_diff, turn_snapshot
from adk_oceanbase.errors import SessionMissingError, ValidationError
from adk_oceanbase.gateway import connection
from adk_oceanbase.schema import state_checkpoints

APP, USER = "turns_app", "u1"
T0 = 1_740_000_000.0  # long settled: checkpoints may be written


def ev(inv: str | None, ts: float, delta: dict | None = None, text: str = "hi", author: str = "user") -> Event:
    return Event(author=author, invocation_id=inv, timestamp=ts, actions=EventActions(state_delta=delta or {}),
                 content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)]))


async def checkpoint_count(db, sid: str) -> int:
    async with connection(db) as conn:
        return (await conn.execute(select(func.count()).select_from(state_checkpoints).where(state_checkpoints.c.session_id == sid))).scalar()


async def test_turn_index_diff_and_snapshot(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id=USER, state={"step": 0, "app:motd": "hello"})
    other = await svc.create_session(app_name=APP, user_id=USER)
    await svc.append_event(s, ev("inv-1", T0 + 1, {"step": 1, "draft": "a"}))
    await svc.append_event(s, ev("inv-1", T0 + 2, {"user:lang": "en"}, author="agent"))
    await svc.append_event(other, ev("other", T0 + 3, {"app:motd": "bye"}))  # another session, between the turns
    await svc.append_event(s, ev("inv-2", T0 + 4, {"step": 2, "draft": None, "app:motd": "hi again"}))
    await svc.append_event(s, ev("", T0 + 5, {}))  # no invocation: a turn of its own
    turns = await list_turns(svc, app_name=APP, user_id=USER, session_id=s.id)
    assert [(t.number, t.invocation_id, t.first_seq, t.last_seq, len(t.event_ids)) for t in turns] == [
        (1, "inv-1", 1, 2, 2), (2, "inv-2", 3, 3, 1), (3, None, 4, 4, 1)]
    assert turns[0].authors == ("user", "agent")

    d1 = await turn_diff(svc, app_name=APP, user_id=USER, session_id=s.id, turn=1)
    assert d1.by_scope() == {"session": {"changed": ["step"], "added": ["draft"]}, "user": {"added": ["user:lang"]}}
    d2 = await turn_diff(svc, app_name=APP, user_id=USER, session_id=s.id, turn=2)
    assert d2.by_scope() == {"session": {"changed": ["step"], "removed": ["draft"]}, "app": {"changed": ["app:motd"]}}
    motd = next(c for c in d2.changes if c.key == "app:motd")
    assert (motd.before, motd.after) == ("bye", "hi again")  # before: as the other session had left it
    assert (await turn_diff(svc, app_name=APP, user_id=USER, session_id=s.id, turn=3)).changes == []

    for t in turns:  # every snapshot equals the full-log replay at the same event
        snap = await turn_snapshot(svc, app_name=APP, user_id=USER, session_id=s.id, turn=t.number)
        replayed = await replay_state(svc, app_name=APP, user_id=USER, session_id=s.id, event_id=t.event_ids[-1])
        assert snap.state == replayed.state and snap.seq == t.last_seq
    first = await turn_snapshot(svc, app_name=APP, user_id=USER, session_id=s.id, turn=1)
    assert first.state == {"step": 1, "draft": "a", "app:motd": "hello", "user:lang": "en"}
    created = await turn_snapshot(svc, app_name=APP, user_id=USER, session_id=s.id, turn=0)
    assert created.state == {"step": 0, "app:motd": "hello"}
    with pytest.raises(SessionMissingError):
        await turn_diff(svc, app_name=APP, user_id=USER, session_id=s.id, turn=4)
    with pytest.raises(ValidationError):
        await turn_snapshot(svc, app_name=APP, user_id=USER, session_id=s.id, turn=-1)
    with pytest.raises(SessionMissingError):
        await list_turns(svc, app_name=APP, user_id=USER, session_id="nope")


async def test_snapshots_come_from_checkpoints_and_match_replay(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id=USER, state={"n": 0})
    other = await svc.create_session(app_name=APP, user_id=USER)
    for i in range(1, 451):
        await svc.append_event(s, ev(f"i{i}", T0 + i, {"n": i, f"k{i % 7}": i, **({"user:seen": i} if i % 50 == 0 else {})}))
        if i % 100 == 0:
            await svc.append_event(other, ev(f"o{i}", T0 + i + 0.5, {"app:round": i}))
    assert await checkpoint_count(engine_db, s.id) == 0
    cold = await snapshots.state_as_of(engine_db, APP, USER, s.id, 430)
    every = snapshots.CHECKPOINT_EVERY
    assert await checkpoint_count(engine_db, s.id) == 430 // every  # at every multiple, written by the read itself
    warm = await snapshots.state_as_of(engine_db, APP, USER, s.id, 430)
    # the own deltas since the last checkpoint (and the app's writes since), not 430 and the whole app's
    assert warm.state == cold.state and warm.folded <= 430 % every + 1 < 430 < cold.folded
    for seq in (1, 199, 200, 201, 399, 400, 401, 450):
        event_id = (await turn_for_seq(svc, s.id, seq))
        replayed = await replay_state(svc, app_name=APP, user_id=USER, session_id=s.id, event_id=event_id)
        assert (await snapshots.state_as_of(engine_db, APP, USER, s.id, seq)).state == replayed.state, seq

    # a deleted and re-created session: its old checkpoints describe other events and are not used
    await svc.delete_session(app_name=APP, user_id=USER, session_id=s.id)
    again = await svc.create_session(app_name=APP, user_id=USER, session_id=s.id, state={"n": -1})
    for i in range(1, 231):
        await svc.append_event(again, ev(f"j{i}", T0 + 1000 + i, {"m": i}))
    snap = await snapshots.state_as_of(engine_db, APP, USER, s.id, 220)
    assert snap.state["n"] == -1 and snap.state["m"] == 220 and "k1" not in snap.state
    assert snap.state == (await snapshots.state_as_of(engine_db, APP, USER, s.id, 220)).state


async def turn_for_seq(svc, sid: str, seq: int) -> str:
    turns = await list_turns(svc, app_name=APP, user_id=USER, session_id=sid)
    return next(t.event_ids[-1] for t in turns if t.last_seq == seq)


async def test_recent_events_are_not_checkpointed(engine_db):
    import time

    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id=USER)
    now = time.time()
    for i in range(1, 206):
        await svc.append_event(s, ev(f"r{i}", now - 205 + i, {"n": i}))
    assert (await snapshots.state_as_of(engine_db, APP, USER, s.id, 205)).state == {"n": 205}
    assert await checkpoint_count(engine_db, s.id) == 0  # a late write stamped before them could still come


async def test_replay_into_a_sandbox_session_up_to_a_turn(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id=USER, state={"step": 0})
    await svc.append_event(s, ev("a", T0 + 1, {"step": 1, "app:flag": "one"}, text="first"))
    await svc.append_event(s, ev("a", T0 + 2, {}, text="first answer", author="agent"))
    await svc.append_event(s, ev("b", T0 + 3, {"step": 2, "app:flag": "two"}, text="second"))
    sandbox = await replay_to_sandbox(svc, app_name=APP, user_id=USER, session_id=s.id, turn=1)
    stored = await svc.get_session(app_name=APP, user_id=USER, session_id=sandbox.id)
    assert sandbox.id == f"{s.id}-turn1"
    assert [e.content.parts[0].text for e in stored.events] == ["first", "first answer"]
    assert stored.state["step"] == 1 and stored.state["app:flag"] == "two"  # the app's live state is not rolled back
    elsewhere = await replay_to_sandbox(svc, app_name=APP, user_id=USER, session_id=s.id, turn=1, sandbox_app="turns_sandbox")
    assert (await svc.get_session(app_name="turns_sandbox", user_id=USER, session_id=elsewhere.id)).state == {"step": 1, "app:flag": "one"}
    source = await svc.get_session(app_name=APP, user_id=USER, session_id=s.id)
    assert len(source.events) == 3 and source.state["step"] == 2


async def test_cli_lists_turns_shows_diff_and_snapshot_and_replays(engine, engine_db, request, capsys):
    import asyncio
    import json

    from adk_oceanbase.cli import main as cli_main

    svc = OceanBaseSessionService(database=engine_db)
    s = await svc.create_session(app_name=APP, user_id=USER, state={"step": 0})
    await svc.append_event(s, ev("a", T0 + 1, {"step": 1}))
    await svc.append_event(s, ev("b", T0 + 2, {"step": 2, "user:x": 1}))
    url = request.getfixturevalue("migrated_url" if engine == "seekdb" else "mariadb_migrated_url")
    base = ["--url", url, "--app", APP, "--user", USER, s.id]

    async def run(*argv: str) -> list[dict]:
        assert await asyncio.to_thread(cli_main, list(argv)) == 0
        return [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]

    turns = await run("turns", "list", *base)
    assert [t["invocation_id"] for t in turns] == ["a", "b"]
    (diff,) = await run("turns", "diff", *base, "2")
    assert {(c["scope"], c["key"], c["kind"]) for c in diff["changes"]} == {("session", "step", "changed"), ("user", "user:x", "added")}
    (snap,) = await run("turns", "snapshot", *base, "1")
    assert snap["state"] == {"step": 1}
    (made,) = await run("turns", "replay", *base, "1", "--into", "sandbox-1")
    assert made["session_id"] == "sandbox-1" and made["events"] == 1
    sandbox = await svc.get_session(app_name=APP, user_id=USER, session_id="sandbox-1")
    assert sandbox.state == {"step": 1, "user:x": 1}  # its own keys as of turn 1; the user's live shared state
