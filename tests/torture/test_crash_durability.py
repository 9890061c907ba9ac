"""Crash durability: ``kill -9`` of the server mid-workload loses no acknowledged append (issue #9).

Writers append to their own sessions (each event carries state) on a seekdb
server this module owns; the server is killed with SIGKILL while appends are
in flight, restarted on the same directory and port, and the workload goes
on; three rounds.  After each restart every acknowledged append is stored
exactly once, every stored event comes with its state (never one without the
other), nothing unattempted appears, and each session's ``last_seq`` and
``event_count`` equal its stored events.  An append in flight at the kill
may or may not have committed: both are fine, half of one is not.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import AdkOceanBaseError, Config, OceanBaseSessionService, upgrade

from ..conftest import _free_port, start_seekdb

APP = "crash"
WRITERS = 8
ROUNDS = 3
RUN_S = 1.5  # appends in flight per round before the kill


class Writer:
    """Appends to one session until told to stop or the server goes away; records what was acknowledged."""

    def __init__(self, url: str, user: str):
        self.user = user
        self.svc = OceanBaseSessionService(config=Config.from_url(url, pool_size=1, query_timeout_s=10))
        self.sid: str | None = None
        self.acked: list[str] = []
        self.attempted: set[str] = set()
        self.in_flight_at_kill: set[str] = set()  # attempted, then the server died under the call
        self.n = 0

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if self.sid is None:
                self.sid = (await self.svc.create_session(app_name=APP, user_id=self.user)).id
            session = await self.svc.get_session(app_name=APP, user_id=self.user, session_id=self.sid)
            while not stop.is_set():
                self.n += 1
                event = Event(
                    id=f"{self.user}-{self.n}",
                    author="user",
                    invocation_id=f"inv-{self.n}",
                    content=types.Content(role="user", parts=[types.Part(text=f"turn {self.n} of {self.user}")]),
                    actions=EventActions(state_delta={f"k{self.n}": self.n, "last": self.n}),
                )
                self.attempted.add(event.id)
                await self.svc.append_event(session, event)
                self.acked.append(event.id)
        except AdkOceanBaseError:
            # the server went away mid-call: that append is unacknowledged (it may or may not have committed)
            self.in_flight_at_kill |= self.attempted - set(self.acked)


async def check_storage(url: str, writers: list[Writer]) -> int:
    """Everything acknowledged is there once, with its state; returns how many events are stored."""
    svc = OceanBaseSessionService(config=Config.from_url(url))
    stored_total = 0
    try:
        for w in writers:
            if w.sid is None:
                continue
            s = await svc.get_session(app_name=APP, user_id=w.user, session_id=w.sid, include_compacted=True)
            ids = [e.id for e in s.events]
            assert len(ids) == len(set(ids)), f"{w.user}: an event stored twice"
            assert set(w.acked) <= set(ids), f"{w.user}: acknowledged appends lost: {sorted(set(w.acked) - set(ids))[:5]}"
            assert set(ids) - set(w.acked) <= w.in_flight_at_kill, f"{w.user}: events nobody appended"
            numbers = [int(i.rsplit("-", 1)[1]) for i in ids]
            assert numbers == sorted(numbers), f"{w.user}: stored out of order"
            # state travels with its event: k<i> exactly for the stored events, 'last' the newest
            keys = {k for k in s.state if k.startswith("k")}
            assert keys == {f"k{i}" for i in numbers}, f"{w.user}: state without its event or an event without its state"
            if numbers:
                assert s.state["last"] == numbers[-1]
            async with svc.database.engine.connect() as conn:
                head = (await conn.execute(
                    text("SELECT last_seq, event_count FROM agent_sessions WHERE app_name = :a AND user_id = :u AND session_id = :s"),
                    {"a": APP, "u": w.user, "s": w.sid},
                )).one()
            assert tuple(head) == (len(ids), len(ids)), f"{w.user}: session row out of step with its events"
            stored_total += len(ids)
    finally:
        await svc.close()
    return stored_total


@pytest.mark.slow
async def test_kill_9_mid_workload_loses_no_acknowledged_append():
    base = Path(tempfile.mkdtemp(prefix="adk-ob-crash-"))
    port = _free_port()
    proc: subprocess.Popen | None = start_seekdb(base, port)
    url = f"oceanbase://root@127.0.0.1:{port}/crash"
    writers: list[Writer] = []
    try:
        await upgrade(url)
        writers = [Writer(url, f"user{i}") for i in range(WRITERS)]
        for _ in range(ROUNDS):
            stop = asyncio.Event()
            tasks = [asyncio.create_task(w.run(stop)) for w in writers]
            await asyncio.sleep(RUN_S)
            acked_before = sum(len(w.acked) for w in writers)
            proc.send_signal(signal.SIGKILL)  # no shutdown, no flush: whatever the server had in memory is gone
            proc.wait()
            proc = None
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
            in_flight_at_kill = sum(len(w.in_flight_at_kill) for w in writers)
            assert acked_before > 0, "the workload never got going"
            proc = start_seekdb(base, port)  # crash recovery on the same directory
            stored = await check_storage(url, writers)
            assert stored >= sum(len(w.acked) for w in writers)
        assert in_flight_at_kill > 0, "no append was in flight at any kill: the test proved nothing"
        acked = sum(len(w.acked) for w in writers)
        print(f"crash durability: {ROUNDS} kills, {acked} acknowledged appends, 0 lost; {in_flight_at_kill} in flight at a kill")
    finally:
        for w in writers:
            await w.svc.close()
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)
