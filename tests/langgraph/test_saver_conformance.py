"""LangGraph's checkpointer conformance suite (langgraph-checkpoint-conformance) on OceanBaseSaver, seekdb and MariaDB.

Every base capability (put, put_writes, get_tuple, list, delete_thread) and
every extended one the saver implements (delete_for_runs, copy_thread,
prune) must be detected and pass.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES  # noqa: E402

from adk_oceanbase.langgraph import OceanBaseSaver  # noqa: E402


@pytest.mark.parametrize("own", [False, True], ids=["shared-database", "own-engine"])
async def test_conformance_passes_every_capability(engine_db, engine_migrated_url, own) -> None:
    """On a shared ``Database``, and on the saver's own engine (which keeps its last connection: ``rawtx.ConnectionLease``)."""

    @checkpointer_test(name=f"OceanBaseSaver[{engine_db.dialect.name}]")
    async def saver():
        if not own:
            yield OceanBaseSaver(database=engine_db)
            return
        mine = OceanBaseSaver(engine_migrated_url)
        try:
            yield mine
        finally:
            await mine.aclose()

    report = await validate(saver)
    failures = {cap: r.failures for cap, r in report.results.items() if r.passed is not True}
    assert failures == {}
    assert {cap for cap, r in report.results.items() if r.detected} == {c.value for c in ALL_CAPABILITIES}
    assert sum(r.tests_passed for r in report.results.values()) > 60
