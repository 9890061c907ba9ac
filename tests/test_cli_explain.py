"""``memory search --explain`` and the demo's score lines name every weighted signal (issue 25).

The table's columns were a hard-coded list that missed ``author``: for a
question with an author cue ("where does *my* sister work") the shares did not
add up to the score.  They now come from the fields of ``ScoreWeights``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase.cli import main
from adk_oceanbase.memory import HashEmbedder, OceanBaseMemoryService, ScoreWeights

APP = "cli_explain"
SIGNALS = [f.name for f in dataclasses.fields(ScoreWeights)]


@pytest.fixture(params=["seekdb", "mariadb"])
def engine(request):
    """``(database, url)`` of one engine's migrated test database."""
    seekdb = request.param == "seekdb"
    return (request.getfixturevalue("database" if seekdb else "mariadb_database"),
            request.getfixturevalue("migrated_url" if seekdb else "mariadb_migrated_url"))


def table_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The header words and the numbered rows of a rich table (cells split on its vertical bars)."""
    header, rows = [], []
    for line in text.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")[1:-1]]
        if not cells:
            continue
        if cells[0].isdigit():
            rows.append(cells)
        elif not rows:
            header.extend(cells)
    return header, rows


@pytest.mark.slow
async def test_explain_shares_add_up_to_the_score_author_included(engine, minilm, capsys):
    database, url = engine
    mem = OceanBaseMemoryService(database=database, embedder=minilm)  # the CLI's default model
    now = datetime.now(timezone.utc).isoformat()
    said = [("user", "My sister Mei is a nurse in Lisbon."), ("model", "Nurses in Lisbon work long shifts.")]
    await mem.add_memory(app_name=APP, user_id="u1", memories=[
        MemoryEntry(author=a, timestamp=now, content=types.Content(parts=[types.Part(text=t)])) for a, t in said
    ])
    await mem.flush()
    await mem.close()
    query = "where does my sister work"  # first person: the author cue asks for the user's own words

    argv = ["memory", "search", query, "--url", url, "--app", APP, "--user", "u1", "--explain"]
    assert await asyncio.to_thread(main, argv) == 0
    header, rows = table_rows(capsys.readouterr().out)
    assert [w for w in header if w in SIGNALS] == SIGNALS  # every weighted signal, in ScoreWeights order
    assert len(rows) == 2
    for cells in rows:
        score, shares = float(cells[1]), [float(c) for c in cells[2:2 + len(SIGNALS)]]
        assert sum(shares) == pytest.approx(score, abs=0.001 * len(SIGNALS))  # each share rounded to 0.001
    by_author = {cells[-1].split(":")[0]: float(cells[2 + SIGNALS.index("author")]) for cells in rows}
    assert by_author == {"user": pytest.approx(ScoreWeights().author), "model": 0.0}


async def test_demo_score_lines_name_every_weighted_signal(database, migrated_url):
    from adk_oceanbase.demo import run_demo

    lines: list[str] = []
    await run_demo(migrated_url, out=lines.append, embedder=HashEmbedder())
    scored = [line for line in lines if "semantic=" in line]
    assert scored
    for line in scored:
        assert [w.split("=")[0] for w in line.split() if "=" in w and w.split("=")[0] in SIGNALS] == SIGNALS, line
