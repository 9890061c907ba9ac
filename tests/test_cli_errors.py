"""``adk-oceanbase`` exit codes and the errors a mistyped or unusable ``--url`` gets (issue 24).

Exit codes as the README states them: 0 done, 1 not found / not current, 2 an
error.  A command that only reads or maintains never creates a database.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase import ConfigurationError, OceanBaseSessionService
from adk_oceanbase.cli import main

APP = "cli_err_app"


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_sessions_delete_reports_each_id_and_exits_1_when_one_was_missing(database, migrated_url, capsys):
    svc = OceanBaseSessionService(database=database)
    kept = await svc.create_session(app_name=APP, user_id="u1")
    gone = await svc.create_session(app_name=APP, user_id="u1")
    who = ("--url", migrated_url, "--app", APP, "--user", "u1")

    assert await cli("sessions", "delete", *who, "nope1") == 1
    assert "session nope1 not found" in capsys.readouterr().err
    assert await cli("sessions", "delete", *who, gone.id, "nope2") == 1  # the one that exists is deleted
    err = capsys.readouterr().err
    assert f"deleted session {gone.id}" in err and "session nope2 not found" in err
    assert await svc.get_session(app_name=APP, user_id="u1", session_id=gone.id) is None
    assert await cli("sessions", "delete", *who, kept.id) == 0
    assert await svc.get_session(app_name=APP, user_id="u1", session_id=kept.id) is None


async def test_memory_delete_of_a_missing_memory_exits_1(database, migrated_url, capsys):
    from adk_oceanbase.memory import MemorySettings, OceanBaseMemoryService

    mem = OceanBaseMemoryService(database=database, settings=MemorySettings(background_start=False))
    memory_id = "m-green-tea"
    await mem.add_memory(app_name=APP, user_id="u1", memories=[
        MemoryEntry(id=memory_id, author="user", content=types.Content(parts=[types.Part(text="Lin drinks green tea.")]))
    ])
    assert sum((await mem.stats(app_name=APP))[APP].values()) == 1
    await mem.close()
    who = ("--url", migrated_url, "--app", APP, "--user", "u1")

    assert await cli("memory", "delete", *who, "doesnotexist") == 1
    assert "memory doesnotexist not found" in capsys.readouterr().err
    assert await cli("memory", "delete", *who, memory_id, "doesnotexist") == 1
    err = capsys.readouterr().err
    assert f"deleted memory {memory_id}" in err and "memory doesnotexist not found" in err
    assert await cli("memory", "delete", *who, memory_id) == 1  # deleted already: nothing left to delete


async def test_compact_of_a_missing_session_exits_1(database, migrated_url, capsys):
    assert await cli("compact", "nope", "--url", migrated_url, "--app", APP, "--user", "u1") == 1
    assert "nope not found" in capsys.readouterr().err


async def test_db_heads_and_history_take_url(migrated_url, capsys):
    assert await cli("db", "heads", "--url", migrated_url) == 0
    assert capsys.readouterr().out.strip()
    assert await cli("db", "history", "--url", migrated_url) == 0
    assert "(head)" in capsys.readouterr().out


READERS = [
    ("sessions", "list", "--app", APP),
    ("sessions", "show", "s1", "--app", APP, "--user", "u"),
    ("sessions", "delete", "s1", "--app", APP, "--user", "u"),
    ("sessions", "export", "--app", APP),
    ("memory", "delete", "m1", "--app", APP, "--user", "u"),
    ("memory", "rebuild-index",),
    ("compact", "s1", "--app", APP, "--user", "u"),
    ("stats",),
    ("db", "current"),
    ("db", "check"),
    ("db", "stamp", "head"),
    ("db", "downgrade", "base", "--yes"),
    ("gc", "--session-ttl", "30d"),
]


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a[:2]))
async def test_a_mistyped_seekdb_path_creates_nothing(argv, tmp_path, capsys):
    typo = tmp_path / "typo" / "db"
    assert await cli(*argv, "--url", f"seekdb://{typo}") == 1
    err = capsys.readouterr().err
    assert f"no database at {typo}" in err and "db upgrade" in err
    assert not typo.exists() and not typo.parent.exists()


async def test_a_missing_server_database_is_not_created_by_a_reader(fresh_url, seekdb_server, capsys):
    name = fresh_url.rsplit("/", 1)[1].split("?")[0]
    assert await cli("sessions", "list", "--app", APP, "--url", fresh_url) == 1
    assert "no database at" in capsys.readouterr().err
    with seekdb_server.connect() as conn:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = %s", (name,))
        assert cur.fetchone()[0] == 0


async def test_a_path_through_a_regular_file_is_a_configuration_error(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    url = f"seekdb://{blocker}/db"
    for argv in (("db", "upgrade"), ("sessions", "list", "--app", APP)):
        assert await cli(*argv, "--url", url) == 2
        err = capsys.readouterr().err
        assert f"{blocker} is a file, not a directory" in err and "Traceback" not in err
    svc = OceanBaseSessionService(url)
    with pytest.raises(ConfigurationError, match="is a file, not a directory"):
        await svc.create_session(app_name=APP, user_id="u")
    await svc.close()
    assert blocker.read_text() == "not a directory"


async def test_a_directory_without_write_permission_names_the_problem(tmp_path, capsys):
    """Root may write anywhere, so as root the parent is made immutable (``chattr +i``, which even root cannot
    write through, like a read-only mount); as an ordinary user a 0555 directory does the same."""
    parent = tmp_path / "readonly"
    parent.mkdir()
    target = parent / "db"
    if os.geteuid() == 0:
        locked = subprocess.run(["chattr", "+i", str(parent)], capture_output=True)
        if locked.returncode != 0:
            pytest.skip(f"this file system has no immutable flag: {locked.stderr.decode().strip()}")
        unlock = ["chattr", "-i", str(parent)]
    else:
        parent.chmod(0o555)
        unlock = ["chmod", "755", str(parent)]
    try:
        assert await cli("db", "upgrade", "--url", f"seekdb://{target}") == 2
    finally:
        subprocess.run(unlock, check=True)
    err = capsys.readouterr().err
    assert f"cannot create {target} in {parent}" in err and "permission denied" in err
    assert "seekdb_open failed" not in err and not target.exists()
