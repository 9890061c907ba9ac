"""Compressed checkpoint payloads: the codec (pure), and rows of either layout read back on seekdb and MariaDB."""

from __future__ import annotations

import os
import zlib

import pytest

pytest.importorskip("langgraph.checkpoint.base")

from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata  # noqa: E402
from sqlalchemy import text  # noqa: E402

from adk_oceanbase.errors import CheckpointTooLargeError, ConfigurationError  # noqa: E402
from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402
from adk_oceanbase.langgraph import codec  # noqa: E402

from .stored import VALUES  # noqa: E402

MESSAGES = [{"role": "user", "content": f"message {i}: " + "the same words again " * 8} for i in range(60)]


# ---------------------------------------------------------------- the codec, no database
@pytest.mark.parametrize("writer", ["zstd", "zlib"])
def test_pack_compresses_big_payloads_and_unpack_restores_them(writer) -> None:
    if writer == "zstd":
        pytest.importorskip("zstandard")
    payload = b"abc" * 2000
    tag, packed = codec.pack("msgpack", payload, writer)
    assert tag == f"{writer}+msgpack" and len(packed) < len(payload) // 10
    assert codec.unpack(tag, packed) == ("msgpack", payload)
    assert codec.unpack(tag, bytearray(packed)) == ("msgpack", payload)  # drivers may hand back bytearrays


def test_small_incompressible_and_unwanted_payloads_stay_as_they_are() -> None:
    small, noise = b"x" * (codec.COMPRESS_FROM - 1), os.urandom(8000)
    assert codec.pack("msgpack", small) == ("msgpack", small)
    assert codec.pack("bytes", noise) == ("bytes", noise)  # would not shrink by a tenth
    assert codec.pack("msgpack", b"abc" * 2000, None) == ("msgpack", b"abc" * 2000)
    assert codec.pack(codec.EMPTY, None) == (codec.EMPTY, None)
    long_tag = "t" * (codec.TYPE_LEN - 4)  # with "zstd+" it would not fit the column
    assert codec.pack(long_tag, b"abc" * 2000)[0] == long_tag


def test_rows_written_before_compression_read_as_they_are() -> None:
    assert codec.unpack("msgpack", b"\x91\x01") == ("msgpack", b"\x91\x01")
    assert codec.unpack("empty", None) == ("empty", None)
    assert codec.unpack("custom+type", b"raw") == ("custom+type", b"raw")  # '+' but no codec we know
    assert codec.unpack("zlib+json", zlib.compress(b'{"a":1}')) == ("json", b'{"a":1}')


def test_compression_must_be_one_we_know() -> None:
    with pytest.raises(ConfigurationError, match="compression must be one of"):
        OceanBaseSaver("seekdb:///unused", compression="lz4")


# ---------------------------------------------------------------- on the database
async def types_of(db, thread: str) -> list[str]:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(text(
            f"SELECT value_type FROM {VALUES} WHERE thread_id = :t AND channel = 'messages' "
            "UNION ALL SELECT value_type FROM lg_checkpoint_writes WHERE thread_id = :t"), {"t": thread})).all()
    return sorted(r[0] for r in rows)


async def put_and_write(saver, thread: str):
    config = generate_config(thread)
    cp = generate_checkpoint(channel_values={"messages": MESSAGES, "n": 1}, channel_versions={"messages": "1", "n": "1"})
    stored = await saver.aput(config, cp, generate_metadata(step=1), {"messages": "1", "n": "1"})
    await saver.aput_writes(stored, [("messages", MESSAGES[:40])], "task-1")
    return stored


@pytest.mark.parametrize("writer", [None, "zlib", "zstd"])
async def test_every_layout_is_read_by_every_saver(engine_db, writer) -> None:
    """Rows written uncompressed (as before), with zlib or with zstd read the same through a saver of any setting."""
    if writer == "zstd":
        pytest.importorskip("zstandard")
    thread = f"t-{writer or 'raw'}"
    async with OceanBaseSaver(database=engine_db, compression=writer) as saver:
        stored = await put_and_write(saver, thread)
    want = [f"{writer}+msgpack"] * 2 if writer else ["msgpack"] * 2
    assert await types_of(engine_db, thread) == want
    for reader in (None, "zlib", codec.WRITER):
        async with OceanBaseSaver(database=engine_db, compression=reader) as saver:
            got = await saver.aget_tuple(stored)
        assert got.checkpoint["channel_values"] == {"messages": MESSAGES, "n": 1}
        assert got.pending_writes == [("task-1", "messages", MESSAGES[:40])]


async def test_compressed_rows_are_smaller_and_the_size_limit_is_on_the_value(engine_db) -> None:
    async def blob_bytes(thread: str) -> int:
        async with engine_db.engine.connect() as conn:
            return int((await conn.execute(text(
                f"SELECT SUM(LENGTH(payload)) FROM {VALUES} WHERE thread_id = :t"), {"t": thread})).scalar())

    async with OceanBaseSaver(database=engine_db, compression=None) as saver:
        await put_and_write(saver, "t-size-raw")
    async with OceanBaseSaver(database=engine_db) as saver:
        await put_and_write(saver, "t-size-packed")
    assert await blob_bytes("t-size-packed") * 5 < await blob_bytes("t-size-raw")
    # max_value_bytes limits what the value serializes to, not its compressed size
    async with OceanBaseSaver(database=engine_db, max_value_bytes=4000) as saver:
        with pytest.raises(CheckpointTooLargeError):
            await put_and_write(saver, "t-size-limit")


async def test_empty_payloads_and_empty_channels_round_trip(engine_db) -> None:
    """Payloads are hex literals (X'...'): an empty one is X'', a channel without a value a NULL payload."""
    async with OceanBaseSaver(database=engine_db) as saver:
        config = generate_config("t-empty")
        cp = generate_checkpoint(channel_values={"blank": b"", "none": None}, channel_versions={"blank": "1", "none": "1",
                                                                                                 "unset": "1"})
        stored = await saver.aput(config, cp, generate_metadata(step=1), {"blank": "1", "none": "1", "unset": "1"})
        await saver.aput_writes(stored, [("none", None), ("blank", b"")], "task-1")
        got = await saver.aget_tuple(stored)
    assert got.checkpoint["channel_values"] == {"blank": b"", "none": None}
    assert got.pending_writes == [("task-1", "none", None), ("task-1", "blank", b"")]
