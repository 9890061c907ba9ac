"""``adk-oceanbase``: every command run in-process against the test seekdb server, output and exit codes checked.

``main`` runs its own event loop, so each call goes to a worker thread.
"""

from __future__ import annotations

import asyncio
import io
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

import adk_oceanbase
from adk_oceanbase import OceanBaseSessionService, migrations
from adk_oceanbase.cli import main

APP = "cli_app"


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def make_sessions(engine_db, users=("u1", "u1", "u2")) -> list[Session]:
    svc = OceanBaseSessionService(database=engine_db)
    made = []
    for i, user in enumerate(users):
        s = await svc.create_session(app_name=APP, user_id=user, state={"n": i})
        for turn in range(3):
            await svc.append_event(s, Event(
                author="user", invocation_id=f"inv{turn}", timestamp=1_700_000_000.0 + i * 10 + turn,
                content=types.Content(role="user", parts=[types.Part(text=f"turn {turn} of session {i}")]),
            ))
        made.append(s)
    return made


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"adk-oceanbase {adk_oceanbase.__version__}"


async def test_sessions_list_show_delete_export(engine_db, engine_migrated_url, capsys, tmp_path):
    made = await make_sessions(engine_db)
    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP) == 0
    listed = lines(capsys.readouterr().out)
    assert sorted(s["id"] for s in listed) == sorted(s.id for s in made) and "events" not in listed[0]

    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP, "--limit", "2") == 0
    out = capsys.readouterr()
    assert len(lines(out.out)) == 2 and "--cursor" in out.err
    cursor = out.err.split("--cursor ")[1].split()[0]
    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP, "--limit", "2", "--cursor", cursor) == 0
    assert len(lines(capsys.readouterr().out)) == 1
    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP, "--limit", "2", "--all") == 0
    assert len(lines(capsys.readouterr().out)) == 3
    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP, "--user", "u2") == 0
    assert [s["userId"] for s in lines(capsys.readouterr().out)] == ["u2"]

    first = made[0]
    assert await cli("sessions", "show", "--url", engine_migrated_url, "--app", APP, "--user", "u1", first.id) == 0
    shown = Session.model_validate_json(capsys.readouterr().out)  # ADK's own JSON form round-trips
    assert shown.id == first.id and [e.content.parts[0].text for e in shown.events][0] == "turn 0 of session 0"
    assert await cli("sessions", "show", "--url", engine_migrated_url, "--app", APP, "--user", "u1", "nope") == 1
    assert "not found" in capsys.readouterr().err

    target = tmp_path / "export.jsonl"
    assert await cli("sessions", "export", "--url", engine_migrated_url, "--app", APP, "-o", str(target)) == 0
    exported = [Session.model_validate_json(line) for line in target.read_text().splitlines()]
    assert sorted(s.id for s in exported) == sorted(s.id for s in made) and all(len(s.events) == 3 for s in exported)

    assert await cli("sessions", "delete", "--url", engine_migrated_url, "--app", APP, "--user", "u1", first.id) == 0
    capsys.readouterr()
    assert await cli("sessions", "list", "--url", engine_migrated_url, "--app", APP) == 0
    assert first.id not in {s["id"] for s in lines(capsys.readouterr().out)}


async def test_compact_and_stats(engine_db, engine_migrated_url, capsys):
    made = await make_sessions(engine_db, users=("u1",))
    sid = made[0].id
    args = ("--url", engine_migrated_url, "--app", APP, "--user", "u1")
    assert await cli("compact", sid, *args, "--keep-last", "1", "--min-batch", "1") == 0
    result = lines(capsys.readouterr().out)[0]
    assert result["compacted"] is True and result["covered_events"] == 2
    assert await cli("stats", "--url", engine_migrated_url, "--json") == 0
    (row,) = lines(capsys.readouterr().out)
    assert (row["app_name"], row["sessions"], row["users"], row["events"]) == (APP, 1, 1, 4)  # 3 turns + summary
    assert await cli("stats", "--url", engine_migrated_url, "--app", APP) == 0
    table = capsys.readouterr().out
    assert APP in table and "pending" in table


@pytest.mark.slow
async def test_memory_search_explain_delete_reembed(engine, engine_db, engine_migrated_url, minilm, capsys):
    from adk_oceanbase.memory import OceanBaseMemoryService

    mem = OceanBaseMemoryService(database=engine_db, embedder=minilm)  # the CLI's default model
    now = datetime.now(timezone.utc).isoformat()
    texts = ["Lin's sister Mei is a nurse in Lisbon.", "Lin drinks green tea every morning."]
    await mem.add_memory(app_name=APP, user_id="u1", memories=[
        MemoryEntry(author="user", timestamp=now, content=types.Content(parts=[types.Part(text=t)])) for t in texts
    ])
    await mem.flush()
    await mem.close()
    who = ("--url", engine_migrated_url, "--app", APP, "--user", "u1")

    assert await cli("memory", "search", "where does the sister work", *who, "--top-k", "1") == 0
    out = capsys.readouterr()
    (hit,) = lines(out.out)
    assert hit["text"] == texts[0] and hit["signals"]["semantic"] > 0 and "embedding model" in out.err
    assert await cli("memory", "search", "where does the sister work", *who, "--explain") == 0
    table = capsys.readouterr().out
    assert "semantic" in table and "x0.5" in table and "nurse in Lisbon" in table

    assert await cli("stats", "--url", engine_migrated_url, "--json") == 0
    assert lines(capsys.readouterr().out)[0]["memories"] == {"ready": 2}
    assert await cli("memory", "delete", *who, hit["memory_id"]) == 0
    assert await cli("memory", "search", "where does the sister work", *who) == 0
    assert texts[0] not in capsys.readouterr().out
    assert await cli("memory", "reembed", "--url", engine_migrated_url) == 0
    assert "re-embedded 0 memories" in capsys.readouterr().out
    assert await cli("memory", "rebuild-index", "--url", engine_migrated_url) == 0
    rebuilt = capsys.readouterr().out  # an HNSW index exists on OceanBase/seekdb only
    assert ("rebuilt" in rebuilt) if engine == "seekdb" else ("no vector index on this engine" in rebuilt)


async def test_db_commands(engine_fresh_url, capsys, monkeypatch):
    url = ("--url", engine_fresh_url)
    head = migrations.head_revision()
    assert await cli("db", "check", *url) == 1
    assert "db upgrade" in capsys.readouterr().err
    assert await cli("db", "upgrade", *url) == 0 and await cli("db", "check", *url) == 0
    assert f"up to date (revision {head})" in capsys.readouterr().out
    assert await cli("db", "heads") == 0 and capsys.readouterr().out.strip() == head
    assert await cli("db", "history") == 0
    history = capsys.readouterr().out.splitlines()
    assert history[0].startswith(f"{migrations.history()[1][0]} -> {head} (head)") and history[-1].startswith("base -> ")

    assert await cli("db", "stamp", "0005", *url) == 0 and await cli("db", "check", *url) == 1
    assert "expects" in capsys.readouterr().err
    assert await cli("db", "stamp", "head", *url) == 0

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a script: never asks, refuses without --yes
    assert await cli("db", "downgrade", "base", *url) == 2
    assert "--yes" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert await cli("db", "downgrade", "base", *url) == 2
    assert await cli("db", "current", *url) == 0 and f"at revision {head}" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert await cli("db", "downgrade", "base", *url) == 0
    assert "at revision base" in capsys.readouterr().out


def test_readme_documents_every_command_and_each_works():
    """Every ``adk-oceanbase ...`` line of the README's CLI section parses, and every command is listed there."""
    import argparse

    from adk_oceanbase.cli import _parser

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    documented = [line.split("#")[0].split() for line in block.splitlines() if line.startswith("adk-oceanbase ")]
    assert documented

    def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        return [c for name, p in subs[0].choices.items() for c in commands(p, prefix + (name,))]

    all_commands = set(commands(_parser()))
    seen = set()
    for words in documented:
        path = tuple(w for w in words[1:] if w.islower() and not w.startswith(("-", "[")))
        cmd = next((c for c in all_commands if path[: len(c)] == c), None)
        if words[1:] == ["--version"]:
            continue
        assert cmd is not None, f"README documents an unknown command: {' '.join(words)}"
        seen.add(cmd)
        with pytest.raises(SystemExit) as done:
            _parser().parse_args([*cmd, "--help"])
        assert done.value.code == 0
        for flag in (w.strip("[]") for w in words if w.lstrip("[").startswith("--")):
            sub = _parser()
            for name in cmd:
                sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
            assert flag in sub._option_string_actions, f"{' '.join(cmd)} has no {flag}"
    assert seen == all_commands, f"commands missing from the README: {sorted(all_commands - seen)}"


def test_the_cli_builds_no_sql():
    """Parsing only: every action is a call into the Python API (STYLE.md, layers point one way)."""
    root = Path(adk_oceanbase.__file__).parent
    modules = [root / "cli.py", *sorted((root / "commands").glob("*.py"))]
    assert len(modules) > 2
    for path in modules:
        source = path.read_text()
        assert "sqlalchemy" not in source and "SELECT " not in source and "execute(" not in source, path.name
