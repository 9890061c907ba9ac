"""OceanBaseSaver: scalar channel values ride in the checkpoint row (no blob row each), on seekdb and MariaDB."""

from __future__ import annotations

import enum

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase import RedactionPolicy, RuleRedactor  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.langgraph import codec  # noqa: E402
from adk_oceanbase.langgraph import saver as saver_module  # noqa: E402

from .stored import VALUES  # noqa: E402


class Level(enum.IntEnum):
    HIGH = 3


async def blob_channels(db, thread: str) -> list[str]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(text(f"SELECT channel FROM {VALUES} WHERE thread_id = :t ORDER BY channel, version"),
                                  {"t": thread})
        return [r[0] for r in rows]


async def put(saver, config, parent, values: dict, versions: dict, new: dict, step: int):
    conf = dict(config["configurable"])
    if parent is not None:
        conf["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    cp = generate_checkpoint(channel_values=values, channel_versions=versions)
    return await saver.aput({"configurable": conf}, cp, generate_metadata(step=step), new)


async def test_scalars_are_stored_in_the_checkpoint_row_and_read_back_from_it(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db)
    config = generate_config("t-inline")
    long = "y" * (codec.INLINE_STR + 1)
    values = {"n": 1, "s": "short", "flag": True, "none": None, "x": 2.5, "long": long, "lst": [1], "lvl": Level.HIGH}
    versions = {ch: "1" for ch in values}
    first = await put(saver, config, None, values, versions, dict(versions), 0)
    # step 2 changes n only; the other scalars are unchanged but still in the checkpoint's values
    second = await put(saver, config, first, {**values, "n": 2}, {**versions, "n": "2"}, {"n": "2"}, 1)
    assert await blob_channels(engine_db, "t-inline") == ["long", "lst", "lvl"]  # the enum keeps its blob (type kept)
    fresh = OceanBaseSaver(database=engine_db)  # nothing remembered: everything from the rows
    for s in (saver, fresh):
        got = (await s.aget_tuple(second)).checkpoint["channel_values"]
        assert got == {**values, "n": 2} and type(got["lvl"]) is Level and type(got["flag"]) is bool
        old = (await s.aget_tuple(first)).checkpoint["channel_values"]
        assert old == values
        listed = [t.checkpoint["channel_values"]["n"] async for t in s.alist(config)]
        assert listed == [2, 1]


async def test_checkpoints_written_with_scalar_blobs_still_read(engine_db, monkeypatch) -> None:
    """Rows written before scalars went inline: the value is a blob and the row's channel_values is empty."""
    saver = OceanBaseSaver(database=engine_db)
    config = generate_config("t-inline-old")
    with monkeypatch.context() as m:
        m.setattr(saver_module.codec, "inline_values", lambda values, versions: {})
        first = await put(saver, config, None, {"n": 1, "s": "a"}, {"n": "1", "s": "1"}, {"n": "1", "s": "1"}, 0)
    assert await blob_channels(engine_db, "t-inline-old") == ["n", "s"]
    second = await put(saver, config, first, {"n": 2, "s": "a"}, {"n": "2", "s": "1"}, {"n": "2"}, 1)
    assert await blob_channels(engine_db, "t-inline-old") == ["n", "s"]  # the new n rides in the row
    fresh = OceanBaseSaver(database=engine_db)
    assert (await fresh.aget_tuple(first)).checkpoint["channel_values"] == {"n": 1, "s": "a"}
    assert (await fresh.aget_tuple(second)).checkpoint["channel_values"] == {"n": 2, "s": "a"}


async def test_an_unchanged_scalar_is_redacted_in_every_checkpoint_row(engine_db) -> None:
    saver = OceanBaseSaver(database=engine_db, redaction=RedactionPolicy(RuleRedactor()))
    config = generate_config("t-inline-red")
    note = "mail me at jane.doe@example.com"
    first = await put(saver, config, None, {"note": note, "n": 1}, {"note": "1", "n": "1"}, {"note": "1", "n": "1"}, 0)
    second = await put(saver, config, first, {"note": note, "n": 2}, {"note": "1", "n": "2"}, {"n": "2"}, 1)
    fresh = OceanBaseSaver(database=engine_db, redaction=RedactionPolicy(RuleRedactor()))
    for stored in (first, second):
        got = (await fresh.aget_tuple(stored)).checkpoint["channel_values"]
        assert "jane.doe@example.com" not in got["note"] and got["n"] in (1, 2)
    async with engine_db.engine.connect() as conn:
        rows = (await conn.execute(text("SELECT checkpoint, value_type FROM lg_checkpoints WHERE thread_id = 't-inline-red'"))).all()
    assert len(rows) == 2
    for payload, vtype in rows:
        assert b"jane.doe@example.com" not in bytes(codec.unpack(vtype, payload)[1])
