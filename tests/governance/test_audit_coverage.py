"""The audit log answers "who touched whose data, and when" for every governance operation (issue 33).

``mark_tainted`` and the opt-out purge changed memories without a row; the
CLI's deletes wrote none and could not turn auditing on; nothing said who
acted; and ``delete_user_data`` deleted the user's own audit history.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from datetime import datetime

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase import AuditSettings, MemoryWriteRaceError, OceanBaseSessionService, RedactionPolicy, audit_actor
from adk_oceanbase.audit import OPERATIONS
from adk_oceanbase.cli import main
from adk_oceanbase.errors import ValidationError
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService

from ._helpers import GateRedactor, rows_of

APP = "audit_app"


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


def entry(said: str) -> MemoryEntry:
    return MemoryEntry(author="user", content=types.Content(parts=[types.Part(text=said)]))


async def audit_rows(db, user: str) -> list[tuple]:
    async with db.engine.connect() as conn:
        return [tuple(r) for r in (await conn.execute(text(
            "SELECT operation, status, row_count, actor, error_code FROM audit_log "
            "WHERE app_name = :a AND user_id = :u ORDER BY audit_id"
        ), {"a": APP, "u": user})).all()]


async def test_taint_opt_out_and_purge_are_recorded_with_their_actor(db):
    audit = AuditSettings(actor="svc:agent")
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=MemorySettings(bump_access=False),
                                    audit=audit)
    try:
        await memory.add_memory(app_name=APP, user_id="ann", memories=[entry("likes tea"), entry("lives in Oslo")])
        await memory.flush()
        ids = [h.memory_id for h in await memory.search(APP, "ann", "tea Oslo")]
        with audit_actor("admin:bob"):  # wins over the settings' actor, for this block only
            assert await memory.mark_tainted(APP, "ann", ids[:1]) == 1
            assert await memory.mark_tainted(APP, "ann", ids[:1], tainted=False) == 1
        assert await memory.set_memory_opt_out(APP, "ann", purge=True) == 2
        assert await memory.set_memory_opt_out(APP, "ann", False) == 0
    finally:
        await memory.close()
    assert await audit_rows(db, "ann") == [
        ("memory_add", "ok", 2, "svc:agent", None),
        ("memory_taint", "ok", 1, "admin:bob", None),
        ("memory_untaint", "ok", 1, "admin:bob", None),
        ("memory_opt_out", "ok", 2, "svc:agent", None),
        ("memory_opt_in", "ok", 0, "svc:agent", None),
    ]
    assert {"memory_taint", "memory_untaint", "memory_opt_out", "memory_opt_in"} <= set(OPERATIONS)


async def test_erasure_keeps_the_users_audit_history_ids_only(db):
    audit = AuditSettings(actor="svc:agent")
    sessions = OceanBaseSessionService(database=db, audit=audit)
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), audit=audit)
    try:
        s = await sessions.create_session(app_name=APP, user_id="cid", state={"topic": "my IBAN is DE89..."})
        await memory.add_memory(app_name=APP, user_id="cid", memories=[entry("my IBAN is DE89 3704 0044")])
        with audit_actor("dpo:carla"):
            counts = await sessions.delete_user_data(app_name=APP, user_id="cid")
    finally:
        await memory.close()
        await sessions.close()
    assert "audit_log" not in counts
    rows = await audit_rows(db, "cid")
    assert [r[0] for r in rows] == ["create_session", "memory_add", "delete_user"]
    assert rows[-1][3] == "dpo:carla"
    left = await rows_of(db, APP, "cid")
    assert left.pop("audit_log") == 3 and set(left.values()) == {0}
    async with db.engine.connect() as conn:  # ids, counts and timings: no column carries what the user said
        dump = json.dumps([list(r) for r in (await conn.execute(text(
            "SELECT * FROM audit_log WHERE user_id = 'cid'"))).all()], default=str)
    assert "IBAN" not in dump and "DE89" not in dump and s.id in dump
    async with db.engine.connect() as conn:  # the analyst's question, after the erasure
        from pathlib import Path

        sql = (Path(__file__).resolve().parents[2] / "sql" / "queries" / "audit_actors.sql").read_text()
        for name, value in {"app_name": APP, "user_id": "cid", "since": datetime(2000, 1, 1)}.items():
            await conn.execute(text(f"SET @{name} = :v"), {"v": value})
        who = {(r.actor, r.operation) for r in (await conn.execute(text(sql))).all()}
    assert who == {("svc:agent", "create_session"), ("svc:agent", "memory_add"), ("dpo:carla", "delete_user")}


async def test_a_write_that_lost_the_race_to_an_erasure_is_recorded_as_failed(db):
    gate = GateRedactor()
    memory = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), audit=AuditSettings(actor="svc:agent"),
                                    redaction=RedactionPolicy(redactor=gate))
    sessions = OceanBaseSessionService(database=db)
    try:
        parked = asyncio.ensure_future(memory.add_memory(app_name=APP, user_id="dan", memories=[entry("likes chess")]))
        await gate.wait_for(1)
        await sessions.delete_user_data(app_name=APP, user_id="dan")
        gate.release()
        with pytest.raises(MemoryWriteRaceError):
            await parked
    finally:
        await memory.close()
        await sessions.close()
    assert await audit_rows(db, "dan") == [("memory_add", "error", None, "svc:agent", "MemoryWriteRaceError")]


def test_an_actor_must_be_a_short_name():
    with pytest.raises(ValidationError):
        AuditSettings(actor="")
    with pytest.raises(ValidationError):
        with audit_actor("x" * 129):
            pass


# ------------------------------------------------------------------------- CLI
async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_cli_erasure_opt_out_taint_and_deletes_are_audited(database, migrated_url, minilm, capsys, monkeypatch):
    sessions = OceanBaseSessionService(database=database)
    memory = OceanBaseMemoryService(database=database, embedder=minilm)  # the CLI's default model
    try:
        s = await sessions.create_session(app_name=APP, user_id="eli")
        await sessions.create_session(app_name=APP, user_id="eli", session_id="gone")
        await memory.add_memory(app_name=APP, user_id="eli", memories=[entry("likes ska"), entry("owns a cat")])
        await memory.flush()
        ids = [h.memory_id for h in await memory.search(APP, "eli", "ska cat")]
    finally:
        await memory.close()
        await sessions.close()
    url = ("--url", migrated_url)

    assert await cli("memory", "taint", ids[0], "--app", APP, "--user", "eli", "--audit", *url) == 0
    assert json.loads(capsys.readouterr().out) == {"app_name": APP, "user_id": "eli", "tainted": True, "matched": 1}
    assert await cli("memory", "taint", "no-such-id", "--app", APP, "--user", "eli", *url) == 1  # not found
    capsys.readouterr()
    assert await cli("memory", "delete", ids[1], "--app", APP, "--user", "eli", "--audit", "--actor", "ops:fred", *url) == 0
    monkeypatch.setenv("ADK_OCEANBASE_AUDIT", "1")  # the environment turns auditing on as well
    assert await cli("sessions", "delete", "gone", "--app", APP, "--user", "eli", *url) == 0
    monkeypatch.delenv("ADK_OCEANBASE_AUDIT")
    capsys.readouterr()
    assert await cli("memory", "opt-out", "eli", "--app", APP, "--purge", "--audit", *url) == 0
    assert json.loads(capsys.readouterr().out) == {"app_name": APP, "user_id": "eli", "opted_out": True, "purged": 2}
    assert await cli("memory", "opt-in", "eli", "--app", APP, "--audit", *url) == 0
    assert json.loads(capsys.readouterr().out)["opted_out"] is False

    # erasure: refused without --yes off a terminal (rc 2, nothing erased), done with it, "not found" after
    assert await cli("users", "delete", "eli", "--app", APP, "--audit", *url) == 2
    assert "--yes" in capsys.readouterr().err
    assert (await rows_of(database, APP, "eli"))["agent_sessions"] == 1
    assert await cli("users", "delete", "eli", "--app", APP, "--yes", "--audit", "--actor", "dpo:gil", *url) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["user_id"] == "eli" and done["deleted"]["agent_sessions"] == 1 and done["rows"] == 1
    assert await cli("users", "delete", "eli", "--app", APP, "--yes", *url) == 1
    assert json.loads(capsys.readouterr().out)["rows"] == 0
    left = await rows_of(database, APP, "eli")
    assert left.pop("audit_log") > 0 and set(left.values()) == {0}, s.id

    me = f"cli:{getpass.getuser()}"
    rows = [r for r in await audit_rows(database, "eli") if r[0] != "memory_add"]
    assert [(r[0], r[3]) for r in rows] == [
        ("memory_taint", me),
        ("memory_delete", "ops:fred"),
        ("delete_session", me),
        ("memory_opt_out", me),
        ("memory_opt_in", me),
        ("delete_user", "dpo:gil"),
    ]
