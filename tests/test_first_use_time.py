"""Times written on first use are taken when the row is written, not before the schema setup (issue #24).

The first session created through ``adk api_server`` had a ``lastUpdateTime``
27 s before its row was written: ``create_session`` took the time, then set
the schema up.  Each test records when setup finished (the services'
``_on_ready`` hook runs right after it) and checks the row's time is not
earlier: an order of events, not a duration.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from adk_oceanbase import Config, OceanBaseSessionService
from adk_oceanbase.engine import Database

from .conftest import unique_db_name


@pytest.fixture(params=["seekdb", "mariadb"])
async def new_db(request):
    server = request.getfixturevalue("seekdb_server" if request.param == "seekdb" else "mariadb_server")
    db = Database(Config.from_url(server.url_for(unique_db_name("firstuse"))))
    yield db
    async with db.engine.begin() as conn:
        await conn.execute(text(f"DROP DATABASE IF EXISTS {db.config.database}"))
    await db.close()


class Sessions(OceanBaseSessionService):
    ready_at: float = 0.0

    async def _on_ready(self) -> None:
        await super()._on_ready()
        self.ready_at = time.time()


async def test_first_session_is_timed_after_setup(new_db):
    svc = Sessions(database=new_db)
    session = await svc.create_session(app_name="a", user_id="u")
    assert svc.ready_at > 0  # this call did set the schema up
    assert session.last_update_time >= svc.ready_at
    stored = await svc.get_session(app_name="a", user_id="u", session_id=session.id)
    assert stored.last_update_time == session.last_update_time

