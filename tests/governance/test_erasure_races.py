"""Erasure and opt-out racing memory writes (issue 33): nothing the user had before survives, on both engines.

Before the write guard (``memory_user_gen``), a memory write that started
before ``delete_user_data`` and committed after it re-created the user's
memories and postings; writes racing an opt-out survived its purge; and
``add_session_to_memory`` given a session read before the erasure stored
it again.  Each test parks writers after they started (a redactor that holds
them: :class:`GateRedactor`) so the race happens every run, not by chance,
and reads every table with SQL afterwards.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase import MemoryWriteRaceError, OceanBaseSessionService, RedactionPolicy
from adk_oceanbase.governance import delete_user_data
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from ._helpers import GateRedactor, generation_of, rows_of

APP = "race_app"
HELD = 4
"""Writers parked between their start and their transaction, per test."""
FREE = 3
"""Writers that keep writing, unparked, until the erasure is called."""


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def entry(text: str) -> MemoryEntry:
    return MemoryEntry(author="user", content=types.Content(parts=[types.Part(text=text)]))


def turn(text: str, ts: float) -> Event:
    return Event(author="user", invocation_id="inv", timestamp=ts,
                 content=types.Content(role="user", parts=[types.Part(text=text)]))


def services(db):
    gate = GateRedactor()
    settings = MemorySettings(bump_access=False)
    held = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=settings,
                                  redaction=RedactionPolicy(redactor=gate))
    free = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=settings)
    return gate, held, free


def held_writes(held: OceanBaseMemoryService, user: str) -> list:
    """Half ``add_memory``, half ``add_events_to_memory`` (turns of a session this database never stored)."""
    now = time.time()
    out = []
    for i in range(HELD):
        if i % 2:
            out.append(held.add_memory(app_name=APP, user_id=user, memories=[entry(f"held fact {i}: lives in Porto")]))
        else:
            events = [turn(f"held turn {i}: my passport number is X{i}", now + i)]
            out.append(held.add_events_to_memory(app_name=APP, user_id=user, events=events, session_id=f"s{i}"))
    return out


async def free_writer(free: OceanBaseMemoryService, user: str, w: int, stop: asyncio.Event, issued: list) -> int:
    """Writes until the erasure is about to be called; returns how many writes committed."""
    done = 0
    while not stop.is_set():
        issued.append(w)
        try:
            await free.add_memory(app_name=APP, user_id=user, memories=[entry(f"free fact {w}.{done} about Lisbon")])
        except MemoryWriteRaceError:
            return done
        done += 1
    return done


async def race(db, user: str, erase) -> tuple[list, list[int]]:
    """Parks HELD writers after their start, keeps FREE writers going, runs ``erase``, then lets the parked go."""
    gate, held, free = services(db)
    try:
        await free.add_memory(app_name=APP, user_id=user, memories=[entry("before the race: likes green tea")])
        parked = [asyncio.ensure_future(w) for w in held_writes(held, user)]
        await gate.wait_for(HELD)  # every parked writer has read the generation it started at
        stop, issued = asyncio.Event(), []
        running = [asyncio.ensure_future(free_writer(free, user, w, stop, issued)) for w in range(FREE)]
        while len(issued) < 3 * FREE:  # some free writes are in flight when the erasure starts
            await asyncio.sleep(0)
        stop.set()  # nothing is issued after this point: every write below started before the erasure
        await erase()
        gate.release()
        outcomes = await asyncio.gather(*parked, return_exceptions=True)
        committed = await asyncio.gather(*running)
        await held.flush()
        await free.flush()  # the vectorizer's updates must not re-create anything either
    finally:
        await held.close()
        await free.close()
    return outcomes, committed


async def test_writes_started_before_erasure_leave_nothing(db):
    sessions = OceanBaseSessionService(database=db)
    try:
        s = await sessions.create_session(app_name=APP, user_id="eve")
        await sessions.append_event(s, turn("my address is 1 Rua Augusta", time.time()))
        outcomes, _ = await race(db, "eve", lambda: sessions.delete_user_data(app_name=APP, user_id="eve"))
    finally:
        await sessions.close()
    # the race happened: every parked writer started before the erasure and reached its transaction after it
    assert [type(o) for o in outcomes] == [MemoryWriteRaceError] * HELD
    assert set((await rows_of(db, APP, "eve")).values()) == {0}
    assert await generation_of(db, APP, "eve") >= 1


async def test_writes_started_before_erasure_by_function_leave_nothing(db):
    """The governance function (what the CLI calls) holds the same guard as the service method."""
    outcomes, _ = await race(db, "fay", lambda: delete_user_data(db, APP, "fay"))
    assert [type(o) for o in outcomes] == [MemoryWriteRaceError] * HELD
    assert set((await rows_of(db, APP, "fay")).values()) == {0}


async def test_writes_racing_an_opt_out_with_purge_are_dropped(db):
    probe = OceanBaseMemoryService(database=db, embedder=HashEmbedder())
    try:
        outcomes, _ = await race(db, "gus", lambda: probe.set_memory_opt_out(APP, "gus", purge=True))
        assert outcomes == [None] * HELD  # dropped quietly, as any write of an opted-out user
        counts = await rows_of(db, APP, "gus")
        assert counts["agent_memories"] == 0 and counts["memory_terms"] == 0
        assert counts["memory_opt_out"] == 1
        assert await probe.is_memory_opted_out(APP, "gus")
    finally:
        await probe.close()


async def test_a_session_read_before_erasure_does_not_come_back(db):
    sessions = OceanBaseSessionService(database=db)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        s = await sessions.create_session(app_name=APP, user_id="hal")
        for i in range(3):
            await sessions.append_event(s, turn(f"my card ends in 188{i} and I live in Braga", time.time()))
        stale = await sessions.get_session(app_name=APP, user_id="hal", session_id=s.id)
        await sessions.delete_user_data(app_name=APP, user_id="hal")

        with pytest.raises(MemoryWriteRaceError):
            await memory.add_session_to_memory(stale)
        with pytest.raises(MemoryWriteRaceError):  # the same turns one by one
            await memory.add_events_to_memory(app_name=APP, user_id="hal", events=stale.events, session_id=s.id)
        await memory.flush()
        assert set((await rows_of(db, APP, "hal")).values()) == {0}

        # what the user says after the erasure is remembered again, under the same session id too
        again = await sessions.create_session(app_name=APP, user_id="hal", session_id=s.id)
        await sessions.append_event(again, turn("I moved to Faro", time.time()))
        await memory.add_session_to_memory(await sessions.get_session(app_name=APP, user_id="hal", session_id=s.id))
        await memory.add_memory(app_name=APP, user_id="hal", memories=[entry("prefers aisle seats")])
        assert (await rows_of(db, APP, "hal"))["agent_memories"] == 2
    finally:
        await memory.close()
        await sessions.close()


async def test_other_users_writes_are_not_held_back(db):
    """The guard is per user: another user's parked write commits across this user's erasure."""
    gate, held, free = services(db)
    try:
        parked = asyncio.ensure_future(held.add_memory(app_name=APP, user_id="ivy", memories=[entry("likes jazz")]))
        await gate.wait_for(1)
        await delete_user_data(db, APP, "jon")
        gate.release()
        await parked
        assert (await rows_of(db, APP, "ivy"))["agent_memories"] == 1
    finally:
        await held.close()
        await free.close()


@pytest.mark.parametrize("action", ["opt_out", "erase"])
async def test_a_write_inside_its_transaction_holds_off_opt_out_and_erasure(db, monkeypatch, action):
    """A write parked inside its transaction, past every check: the opt-out purge or erasure must wait for it.

    Without the guard lock the purge committed while the writer was parked
    and the writer's rows landed after it (300 memories left per run).
    """
    from adk_oceanbase.memory import ingest as service_module  # the write path (memory.ingest)

    inside, go = asyncio.Event(), asyncio.Event()
    real = service_module.write_drafts

    async def parked(*args, **kwargs):
        inside.set()
        await go.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(service_module, "write_drafts", parked)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False))
    try:
        writer = asyncio.ensure_future(memory.add_memory(app_name=APP, user_id="kim", memories=[entry("likes opera")]))
        await inside.wait()
        if action == "opt_out":
            purge = asyncio.ensure_future(memory.set_memory_opt_out(APP, "kim", purge=True))
        else:
            purge = asyncio.ensure_future(delete_user_data(db, APP, "kim"))
        done, _ = await asyncio.wait([purge], timeout=2.0)
        assert not done, "the purge committed while a write of the user was open"
        go.set()
        await writer
        await purge
        await memory.flush()
    finally:
        go.set()
        await memory.close()
    counts = await rows_of(db, APP, "kim")
    assert counts["agent_memories"] == 0 and counts["memory_terms"] == 0
