"""Engine ownership: a caller's engine is used as-is and never disposed; embedded seekdb is shared and released."""

from __future__ import annotations

import sys

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from adk_oceanbase import Config, ConfigurationError, ConnectionFailedError, OceanBaseSessionService
from adk_oceanbase.engine import Database, EmbeddedSeekdb


async def test_a_callers_engine_is_used_and_left_open(seekdb_server, migrated_url):
    name = migrated_url.rsplit("/", 1)[1]
    engine = create_async_engine(f"mysql+aiomysql://root@127.0.0.1:{seekdb_server.port}/{name}")
    svc = OceanBaseSessionService(engine=engine)
    s = await svc.create_session(app_name="own-engine", user_id="u")
    async with engine.connect() as conn:
        # our per-connection settings were installed on the caller's engine too
        assert (await conn.execute(text("SELECT @@time_zone"))).scalar() == "+00:00"
    await svc.close()
    async with engine.connect() as conn:  # still usable: we did not dispose it
        count = (await conn.execute(text("SELECT COUNT(*) FROM agent_sessions WHERE session_id = :s"), {"s": s.id})).scalar()
    assert count == 1
    await svc.database.close()
    await engine.dispose()


async def test_two_services_on_one_embedded_directory_share_one_seekdb(tmp_path):
    url = f"seekdb://{tmp_path / 'shared'}"
    a = OceanBaseSessionService(url)
    b = OceanBaseSessionService(url)
    try:
        s = await a.create_session(app_name="x", user_id="u")
        assert (await b.get_session(app_name="x", user_id="u", session_id=s.id)) is not None
        assert list(EmbeddedSeekdb._instances.values())[0].refs == 2  # one process, two references
        await a.close()
        # b still works after a released its reference
        assert (await b.get_session(app_name="x", user_id="u", session_id=s.id)) is not None
    finally:
        await a.close()
        await b.close()
    assert (tmp_path / "shared").resolve() not in EmbeddedSeekdb._instances


async def test_unreachable_server_is_a_typed_error_without_the_password():
    db = Database(Config.from_url("oceanbase://root:s3cret@127.0.0.1:1/x"))
    with pytest.raises(ConnectionFailedError) as info:
        await db.start()
    assert "s3cret" not in str(info.value) and "127.0.0.1" in str(info.value)


async def test_embedded_url_without_pylibseekdb_says_what_to_do(tmp_path, monkeypatch):
    """pylibseekdb is a Linux-only dependency now: elsewhere a seekdb:// URL must explain itself."""
    monkeypatch.setitem(sys.modules, "pylibseekdb", None)  # what `import pylibseekdb` sees when it is absent
    svc = OceanBaseSessionService(f"seekdb://{tmp_path}/db")
    with pytest.raises(ConfigurationError) as err:
        await svc.list_sessions(app_name="a")
    assert all(w in str(err.value) for w in ("pylibseekdb", "Linux", "oceanbase://", "mysql+aiomysql://"))
    await svc.close()
