"""Embedders: the deterministic HashEmbedder (fast tests) and, marked slow, the real offline MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase.memory import Embedder, HashEmbedder, MemorySettings, OceanBaseMemoryService


def test_hash_embedder_is_deterministic_unit_length_and_lexical():
    e = HashEmbedder()
    assert isinstance(e, Embedder)
    a, b, c, d = e.embed(["I love hiking in Norway", "I love hiking in Norway", "hiking in Norway is lovely", "stock market crash"])
    assert np.allclose(a, b) and a.dtype == np.float32
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert float(a @ c) > float(a @ d) + 0.2
    zh = e.embed(["我喜欢在挪威徒步", "在挪威徒步", "股票市场"])
    assert float(zh[0] @ zh[1]) > float(zh[0] @ zh[2])
    assert e.embed([""]).shape == (1, 384) and not np.any(e.embed([""]))


@pytest.mark.slow
def test_minilm_loads_offline_and_embeds_paraphrases_close(minilm):
    assert (minilm.model_name, minilm.dim) == ("all-MiniLM-L6-v2", 384)
    v = minilm.embed(["My favourite book is Dune", "What novel do I like the most?", "I adopted a puppy"])
    assert v.shape == (3, 384)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


@pytest.mark.slow
async def test_minilm_semantic_recall_without_shared_words(engine_db, minilm):
    svc = OceanBaseMemoryService(database=engine_db, embedder=minilm, settings=MemorySettings(bump_access=False))
    try:
        texts = ["My favourite book is Dune by Frank Herbert.", "I adopted a golden retriever puppy last spring.",
                 "My sister works as a nurse in Lisbon.", "I'm allergic to shellfish."]
        await svc.add_memory(app_name="app", user_id="u1", memories=[
            MemoryEntry(author="user", content=types.Content(parts=[types.Part.from_text(text=t)])) for t in texts])
        await svc.flush()
        # Default hybrid weights: with the ik parser "he" no longer matches "shellfish"
        # (it did with ngram bigrams, which is why migration 0004 switched parsers).
        hits = await svc.search("app", "u1", "which novel does he like?", top_k=2)
        assert hits[0].entry.content.parts[0].text == texts[0]
        assert hits[0].signals.semantic > 0.3 > hits[1].signals.semantic
        dog = await svc.search("app", "u1", "does the user have pets?", top_k=1)
        assert dog[0].entry.content.parts[0].text == texts[1]
    finally:
        await svc.close()
