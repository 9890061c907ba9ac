"""The memory search seam (issue #25): a retriever used from outside the service, and vectors through the column type.

Every test runs on seekdb and on MariaDB (``engine_db``).  ``memory.retrieval``
is public for the next callers (a LangGraph store, an Agno database): they
build a ``SearchRequest`` and ask the retriever the engine dialect picks,
without the memory service.  The embedding column's type (``schema.Vector``
with the engine's codec, ``EngineDialect.vector_type()``) converts numpy
arrays in and out, so no caller encodes a vector by hand.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

import numpy as np
import pytest
from sqlalchemy import bindparam, text

from adk_oceanbase import gateway
from adk_oceanbase.errors import ValidationError
from adk_oceanbase.memory import HashEmbedder, ScoreWeights
from adk_oceanbase.memory.asker import author_cue
from adk_oceanbase.memory.retrieval import HitJoin, ProfileCache, Retriever, SearchRequest
from adk_oceanbase.memory.retrievers import MySQLRetriever, OceanBaseRetriever, retriever_for
from tests.test_memory_ranking import APP, QUERIES, USER, seeded  # noqa: F401 (the fixture)

NOW = datetime(2025, 6, 1, 12)


async def test_the_vector_type_round_trips_numpy_arrays(engine_db):
    vt = engine_db.dialect.vector_type()
    vec = np.array([0.25, -1.5, 3.0625], dtype=np.float32)
    stmt = text("SELECT :v AS v").bindparams(bindparam("v", type_=vt)).columns(v=vt)
    async with gateway.connection(engine_db) as conn:
        got = (await conn.execute(stmt, {"v": vec})).scalar_one()
        null = (await conn.execute(stmt, {"v": None})).scalar_one()
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and np.array_equal(got, vec)
    assert null is None


async def test_the_dialect_picks_the_retriever_and_scoring_overrides_it(seeded):
    db, settings = seeded.database, seeded.settings
    native = OceanBaseRetriever if db.dialect.ranking == "sql" else MySQLRetriever
    assert type(retriever_for(db, settings, "m")) is native
    assert type(retriever_for(db, dataclasses.replace(settings, scoring="numpy"), "m")) is MySQLRetriever
    assert isinstance(seeded.retriever, Retriever) and type(seeded.retriever) is native
    seeded.settings = dataclasses.replace(settings, scoring="numpy")  # the next search asks the numpy retriever
    assert type(seeded.retriever) is MySQLRetriever


async def test_a_retriever_outside_the_service_ranks_as_the_service_does(seeded):
    """What a LangGraph store or an Agno database would do: no memory service, the same hits."""
    emb = HashEmbedder()
    retriever = retriever_for(seeded.database, seeded.settings, emb.model_name, ProfileCache())
    for query in QUERIES:
        request = SearchRequest(app_name=APP, user_id=USER, query=query, query_vector=emb.embed([query])[0],
                                now=NOW, top_k=5, weights=seeded.settings.weights, author_cue=author_cue(query))
        mine = await retriever.search(request)
        theirs = await seeded.search(APP, USER, query, top_k=5, now=NOW)
        assert mine, query
        assert [(h.memory_id, h.score) for h in mine] == [(h.memory_id, h.score) for h in theirs], query
        assert [h.signals for h in mine] == [h.signals for h in theirs], query


async def test_a_request_without_a_vector_searches_full_text_only(seeded):
    retriever = retriever_for(seeded.database, seeded.settings, HashEmbedder().model_name)
    hits = await retriever.search(SearchRequest(app_name=APP, user_id=USER, query=QUERIES[0], query_vector=None,
                                                now=NOW, top_k=5, weights=ScoreWeights()))
    assert hits and all(h.signals.semantic == 0 for h in hits)
    assert any(h.signals.fulltext > 0 for h in hits)


def test_a_request_is_checked():
    with pytest.raises(ValidationError, match="naive UTC"):
        SearchRequest(app_name=APP, user_id=USER, query="q", query_vector=None,
                      now=datetime.fromisoformat("2025-06-01T12:00:00+00:00"), top_k=5, weights=ScoreWeights())
    with pytest.raises(ValidationError, match="top_k"):
        SearchRequest(app_name=APP, user_id=USER, query="q", query_vector=None, now=NOW, top_k=0,
                      weights=ScoreWeights())


_CONTENTS = ("SELECT h.memory_id, h.score, m.content FROM hits h JOIN agent_memories m "
             "ON m.app_name = :j_app AND m.user_id = :j_user AND m.memory_id = h.memory_id")


@pytest.mark.parametrize("scoring", ["auto", "numpy"])
async def test_a_joined_search_reads_the_callers_rows_for_the_same_hits(seeded, scoring):
    """``search_joined`` (the LangGraph store's item lookup): the join's rows are the search's hits, scores and all."""
    seeded.settings = dataclasses.replace(seeded.settings, scoring=scoring)
    join = HitJoin(_CONTENTS, {"j_app": APP, "j_user": USER})
    for query in QUERIES:
        hits = await seeded.search(APP, USER, query, top_k=5, now=NOW, bump_access=False)
        rows = await seeded.search_joined(APP, USER, query, join=join, top_k=5, now=NOW)
        assert hits, query
        assert sorted((r[0], pytest.approx(r[1]), r[2]) for r in rows) == sorted(
            (h.memory_id, pytest.approx(h.score), h.entry.content.parts[0].text) for h in hits), query
    assert await seeded.search_joined(APP, USER, "   ", join=join) == []


def test_a_join_names_its_parameters_apart_from_the_search():
    with pytest.raises(ValidationError, match="'j_'"):
        HitJoin(_CONTENTS, {"app": APP})
