"""The per-user lexical index: rankings independent of other tenants, postings kept in step with every write, CJK terms.

Every database test runs on seekdb and on MariaDB: both engines index and score
the same terms with the same BM25 statement.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from sqlalchemy import text

from adk_oceanbase.governance import Retention, RetentionPolicy, delete_user_data, sweep
from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, ScoreWeights
from adk_oceanbase.memory.lexical import MAX_TERM_CHARS, doc_terms, query_terms, terms_of

APP, USER = "app", "u1"
WORDS = ("apple banana hiking paris kyoto dog piano coffee tea sister nurse flight museum garden violin "
         "painting pottery camping guitar library").split()
QUERIES = ["apple pie in paris", "my sister is a nurse", "camping with the dog", "violin and piano lessons",
           "which museum in kyoto"]
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
FT_ONLY = ScoreWeights(semantic=0.0, fulltext=1.0, recency=0.0, frequency=0.0, importance=0.0, context=0.0, version=0.0)
SETTINGS = MemorySettings(bump_access=False, vector_search="exact", retry_base_s=0.01, batch_wait_s=0.0)


def entries(prefix: str, n: int, seed: int) -> list[MemoryEntry]:
    rng = random.Random(seed)
    return [
        MemoryEntry(
            id=f"{prefix}{i:03d}", author="user", timestamp=(START + timedelta(hours=5 * i)).isoformat(),
            content=types.Content(parts=[types.Part.from_text(text=" ".join(rng.choice(WORDS) for _ in range(6)))]),
        )
        for i in range(n)
    ]


@pytest.fixture(params=["seekdb", "mariadb"])
def db(request):
    return request.getfixturevalue("database" if request.param == "seekdb" else "mariadb_database")


@pytest.fixture
async def svc(db):
    service = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=SETTINGS)
    yield service
    await service.close()


async def postings_match_rows(db) -> None:
    """Every live memory's postings are exactly ``doc_terms(search_text)`` and carry its length; nothing else is indexed."""
    async with db.engine.connect() as conn:
        rows = (await conn.execute(text(
            "SELECT app_name, user_id, memory_id, search_text, term_count FROM agent_memories"))).all()
        stored: dict[tuple[str, str, str], Counter] = {}
        lengths: dict[tuple[str, str, str], set[int]] = {}
        for app, user, term, mid, tf, doc_len in (await conn.execute(text(
                "SELECT app_name, user_id, term, memory_id, tf, doc_len FROM memory_terms"))).all():
            stored.setdefault((app, user, mid), Counter())[term] = tf
            lengths.setdefault((app, user, mid), set()).add(doc_len)
    expected = {}
    for app, user, mid, body, count in rows:
        terms = doc_terms(body)
        assert count == sum(terms.values()), (mid, count)
        if terms:
            expected[(app, user, mid)] = terms
    assert stored == expected
    assert lengths == {key: {sum(terms.values())} for key, terms in expected.items()}


def test_terms_split_cjk_runs_into_bigrams_and_keep_words_whole():
    assert terms_of("painting") == ["painting"]
    assert terms_of("咖啡馆") == ["咖啡", "啡馆"]
    assert terms_of("猫") == ["猫"]
    assert terms_of("2023年5月") == ["2023", "年", "5", "月"]
    assert terms_of("한국어") == ["한국", "국어"]
    assert terms_of("x" * 100) == ["x" * MAX_TERM_CHARS]
    assert doc_terms("8 may 2023 user 我喜欢咖啡 coffee coffee") == Counter(
        {"coffee": 2, "8": 1, "may": 1, "2023": 1, "user": 1, "我喜": 1, "喜欢": 1, "欢咖": 1, "咖啡": 1})
    assert query_terms(["咖啡", "coffee", "coffee"]) == Counter({"coffee": 2, "咖啡": 1})


async def test_a_users_ranking_ignores_other_tenants(svc):
    """Same user, same queries: identical top-10 (ids and scores) before and after 30 other users arrive."""
    await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 80, seed=1))
    await svc.flush()
    now = START + timedelta(days=30)

    async def top10() -> dict[str, list[tuple[str, float]]]:
        out = {}
        for weights in (FT_ONLY, None):
            for query in QUERIES:
                hits = await svc.search(APP, USER, query, top_k=10, weights=weights, now=now)
                out[f"{query}/{weights is None}"] = [(h.memory_id, round(h.score, 9)) for h in hits]
        return out

    before = await top10()
    assert all(before.values())
    # other tenants with the same words, skewed: one of them says "apple" and "nurse" in every memory
    for k in range(30):
        others = entries(f"o{k}-", 40, seed=100 + k)
        if k == 0:
            for e in others:
                e.content.parts[0].text += " apple nurse"
        await svc.add_memory(app_name=APP, user_id=f"other{k}", memories=others)
    await svc.flush()
    assert await top10() == before


async def test_postings_follow_add_merge_delete_optout_and_erasure(svc, db):
    await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 12, seed=2))
    await svc.add_memory(app_name=APP, user_id="u2", memories=entries("n", 5, seed=3))
    await postings_match_rows(db)
    # an exact duplicate from a later day: the row moves to the new date, its postings follow
    again = entries("m", 1, seed=2)[0]
    again.id, again.timestamp = "dup", (START + timedelta(days=400)).isoformat()
    await svc.add_memory(app_name=APP, user_id=USER, memories=[again])
    await postings_match_rows(db)
    async with db.engine.connect() as conn:
        row = (await conn.execute(text(
            "SELECT search_text, occurrences FROM agent_memories WHERE user_id = :u AND memory_id = 'm000'"),
            {"u": USER})).one()
    assert "2026" in row.search_text.split() and row.occurrences == 2
    await svc.delete_memory(app_name=APP, user_id=USER, memory_id="m001")
    await postings_match_rows(db)
    assert await svc.search(APP, USER, "anything " + " ".join(WORDS), weights=FT_ONLY)
    assert "m001" not in {h.memory_id for h in await svc.search(APP, USER, " ".join(WORDS), top_k=50, weights=FT_ONLY)}
    await svc.set_memory_opt_out(APP, "u2", purge=True)
    await postings_match_rows(db)
    await delete_user_data(db, APP, USER)
    await postings_match_rows(db)
    async with db.engine.connect() as conn:
        assert (await conn.execute(text("SELECT COUNT(*) FROM memory_terms"))).scalar() == 0


async def test_retention_sweep_removes_postings_with_the_memories(svc, db):
    await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 10, seed=4))
    recent = entries("r", 2, seed=5)
    for e in recent:
        e.timestamp = datetime.now(timezone.utc).isoformat()
    await svc.add_memory(app_name=APP, user_id=USER, memories=recent)
    async with db.engine.begin() as conn:  # retention counts from stored_at, not the source's time (issue 33)
        await conn.execute(text("UPDATE agent_memories SET stored_at = '2020-01-01' WHERE memory_id LIKE 'm%'"))
    counts = await sweep(db, RetentionPolicy(Retention(memory_ttl="30d")), memory_batch=4)
    assert counts.memories == 10
    await postings_match_rows(db)
    async with db.engine.connect() as conn:
        left = {r[0] for r in (await conn.execute(text("SELECT DISTINCT memory_id FROM memory_terms"))).all()}
    assert left == {"r000", "r001"}


async def test_chinese_and_korean_match_without_a_segmenter(svc):
    texts = {"c1": "我每天早上都喝咖啡", "c2": "周末我们去公园散步", "c3": "我的妹妹是一名护士", "k1": "나는 한국어 공부를 좋아해요",
             "e1": "I drink coffee every morning"}
    await svc.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(id=k, author="user", content=types.Content(parts=[types.Part.from_text(text=v)])) for k, v in texts.items()])
    assert (await svc.search(APP, USER, "咖啡", weights=FT_ONLY))[0].memory_id == "c1"
    assert (await svc.search(APP, USER, "妹妹是护士吗", weights=FT_ONLY))[0].memory_id == "c3"
    assert (await svc.search(APP, USER, "한국어 공부", weights=FT_ONLY))[0].memory_id == "k1"
    hit = (await svc.search(APP, USER, "公园", weights=FT_ONLY))[0]
    assert hit.memory_id == "c2" and hit.signals.ft_cov == pytest.approx(1.0)


async def test_coverage_is_the_matched_share_of_the_querys_idf(svc):
    await svc.add_memory(app_name=APP, user_id=USER, memories=entries("m", 40, seed=6))
    hits = await svc.search(APP, USER, "violin zeppelin", top_k=40, weights=FT_ONLY)
    assert hits and all(0 < h.signals.ft_cov < 1 for h in hits if h.signals.fulltext > 0)  # "zeppelin" never matches
    full = await svc.search(APP, USER, "violin", top_k=5, weights=FT_ONLY)
    assert full[0].signals.ft_cov == pytest.approx(1.0)
    assert hits[0].signals.ft_cov < full[0].signals.ft_cov


async def test_both_engines_score_full_text_identically(database, mariadb_database):
    """The same postings and BM25 statement on both engines: the same full-text ranking and scores."""
    got = []
    for db in (database, mariadb_database):
        service = OceanBaseMemoryService(database=db, embedder=HashEmbedder(), settings=SETTINGS)
        try:
            await service.add_memory(app_name=APP, user_id=USER, memories=entries("m", 60, seed=7))
            got.append({q: [(h.memory_id, round(h.signals.fulltext, 6), round(h.signals.ft_cov, 6))
                            for h in await service.search(APP, USER, q, top_k=10, weights=FT_ONLY)] for q in QUERIES})
        finally:
            await service.close()
    assert got[0] == got[1] and all(got[0].values())


async def test_postings_of_awkward_terms_arrive_whole(svc, db):
    """The postings travel as one JSON list (``postings.insert_postings_json``): quotes, backslashes,
    JSON's own escapes, characters outside the BMP and terms cut at ``MAX_TERM_CHARS`` come out as written."""
    awkward = ['it\'s "quoted" \\back\\slash\\ 100% _under_ $[0] {"k": [1]}', "emoji 😀🎻 and ZWJ 👩‍🔬 plus tab\there",
               "ü é ñ ß straße Ærø", "x" * (MAX_TERM_CHARS + 9) + " " + "é" * (MAX_TERM_CHARS + 1), "寿司が好き 😀"]
    await svc.add_memory(app_name=APP, user_id=USER, memories=[
        MemoryEntry(id=f"a{i}", author="user", timestamp=START.isoformat(),
                    content=types.Content(parts=[types.Part.from_text(text=t)])) for i, t in enumerate(awkward)])
    await postings_match_rows(db)
    async with db.engine.connect() as conn:
        terms = {r[0] for r in (await conn.execute(text("SELECT term FROM memory_terms"))).all()}
    assert {"straße", "ærø", "寿司", "x" * MAX_TERM_CHARS} <= terms
