"""list_sessions_page: keyset pages that cover every session exactly once, in ADK's order or newest first."""

from __future__ import annotations

import time

import pytest
from google.adk.events.event import Event

from adk_oceanbase import OceanBaseSessionService


async def all_pages(svc, **kw) -> list[list]:
    pages, cursor = [], None
    while True:
        page = await svc.list_sessions_page(cursor=cursor, **kw)
        pages.append(page.sessions)
        cursor = page.next_cursor
        if cursor is None:
            return pages


@pytest.fixture
async def many(engine_db):
    svc = OceanBaseSessionService(database=engine_db)
    base = time.time()
    made = []
    for i in range(23):
        user = "u1" if i % 4 else "u2"
        s = await svc.create_session(app_name="pg", user_id=user, session_id=f"s{i:02d}", state={"i": i, "user:u": user})
        # give every session a distinct update time, not in creation order
        ev = Event(author="user", timestamp=base + (i * 7) % 23)
        await svc.append_event(s, ev)
        made.append(s)
    # two sessions tied on update time: the tie is broken by id, never dropped
    tie = Event(author="user", timestamp=base + 100)
    await svc.append_event(made[1], tie)
    await svc.append_event(made[2], Event(author="user", timestamp=base + 100))
    return svc


async def test_pages_cover_one_user_newest_first(many):
    pages = await all_pages(many, app_name="pg", user_id="u1", limit=5)
    flat = [s for p in pages for s in p]
    listed = (await many.list_sessions(app_name="pg", user_id="u1")).sessions
    assert [s.id for s in flat] == [s.id for s in reversed(listed)]
    assert len({s.id for s in flat}) == len(flat) == 17
    assert [len(p) for p in pages] == [5, 5, 5, 2]
    assert all(s.events == [] for s in flat)
    assert flat[0].state == {"i": flat[0].state["i"], "user:u": "u1"}


async def test_pages_in_adk_order_across_users(many):
    pages = await all_pages(many, app_name="pg", limit=4, newest_first=False)
    flat = [(s.user_id, s.id) for p in pages for s in p]
    listed = [(s.user_id, s.id) for s in (await many.list_sessions(app_name="pg")).sessions]
    assert flat == listed and len(flat) == 23
    states = {s.id: s.state for p in pages for s in p}
    assert states["s00"] == {"i": 0, "user:u": "u2"}


async def test_page_of_a_missing_user_is_empty(many):
    page = await many.list_sessions_page(app_name="pg", user_id="nobody")
    assert page.sessions == [] and page.next_cursor is None
