"""The embedded seekdb child killed with SIGKILL: services on its directory recover (issue #9, item 8)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from google.adk.events.event import Event
from google.genai import types

from adk_oceanbase import OceanBaseSessionService
from adk_oceanbase.engine import EmbeddedSeekdb
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService


def turn(text: str) -> Event:
    return Event(author="user", invocation_id="inv", timestamp=time.time(),
                 content=types.Content(role="user", parts=[types.Part.from_text(text=text)]))


def seekdb_children(db_dir: Path) -> list[int]:
    """Live seekdb processes of this test process serving ``db_dir`` (read from /proc, like an operator would)."""
    want = f"--base-dir={db_dir.resolve()}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if want in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def dead(pid: int) -> bool:
    """Exited: reaped, or a zombie whose threads are all gone (SIGKILLed seekdb takes a moment to tear down)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except FileNotFoundError:
        return True
    return status["State"].split()[0] == "Z" and int(status["Threads"]) == 1


async def kill_seekdb(db_dir: Path) -> int:
    (pid,) = seekdb_children(db_dir)
    os.kill(pid, signal.SIGKILL)
    while not dead(pid):
        await asyncio.sleep(0.05)
    return pid


async def test_services_recover_after_the_embedded_seekdb_is_killed(tmp_path):
    db_dir = tmp_path / "db"
    url = f"seekdb://{db_dir}"
    sessions = OceanBaseSessionService(url)
    memory = OceanBaseMemoryService(database=sessions.database, embedder=HashEmbedder(),
                                    settings=MemorySettings(bump_access=False))
    late = None
    try:
        s = await sessions.create_session(app_name="a", user_id="u", state={"k": 1})
        await sessions.append_event(s, turn("my sister Anna lives in Lisbon"))
        s = await sessions.get_session(app_name="a", user_id="u", session_id=s.id)
        await memory.add_session_to_memory(s)
        await memory.flush()

        killed = await kill_seekdb(db_dir)

        # (a) the existing services' next calls work: reads, writes, search
        again = await sessions.get_session(app_name="a", user_id="u", session_id=s.id)
        assert [e.content.parts[0].text for e in again.events] == ["my sister Anna lives in Lisbon"]  # (c)
        assert again.state == {"k": 1}
        await sessions.append_event(again, turn("she works as a nurse"))
        assert [h.entry.content.parts[0].text for h in await memory.search("a", "u", "Anna Lisbon")][:1] == [
            "my sister Anna lives in Lisbon"]
        restarted = seekdb_children(db_dir)
        assert len(restarted) == 1 and restarted != [killed]

        # (b) a new service in this process on the same directory works too
        late = OceanBaseSessionService(url)
        loaded = await late.get_session(app_name="a", user_id="u", session_id=s.id)
        assert [e.content.parts[0].text for e in loaded.events] == [
            "my sister Anna lives in Lisbon", "she works as a nurse"]
    finally:
        await memory.close()
        await sessions.close()
        if late is not None:
            await late.close()
    assert db_dir.resolve() not in EmbeddedSeekdb._instances


async def test_a_new_service_after_the_kill_restarts_seekdb_itself(tmp_path):
    """No call on the old service in between: the new service's start finds the child dead."""
    db_dir = tmp_path / "db"
    url = f"seekdb://{db_dir}"
    first = OceanBaseSessionService(url)
    second = None
    try:
        s = await first.create_session(app_name="a", user_id="u")
        await kill_seekdb(db_dir)
        second = OceanBaseSessionService(url)
        assert (await second.get_session(app_name="a", user_id="u", session_id=s.id)).id == s.id
        assert (await first.get_session(app_name="a", user_id="u", session_id=s.id)).id == s.id
    finally:
        await first.close()
        if second is not None:
            await second.close()
