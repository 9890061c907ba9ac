"""The embedding model loads in the background: construction is instant, search works while it loads."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import datetime, timezone

import pytest
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from adk_oceanbase.memory import HashEmbedder, MemorySettings, OceanBaseMemoryService, SentenceTransformerEmbedder

APP, USER = "app", "u1"


class _HashModel:
    """Stands in for a SentenceTransformer: same ``encode`` signature, hash vectors."""

    def __init__(self) -> None:
        self._hash = HashEmbedder(dim=384)

    def get_sentence_embedding_dimension(self) -> int:
        return 384

    def encode(self, texts, **_kwargs):
        return self._hash.embed(texts)


class GatedEmbedder(SentenceTransformerEmbedder):
    """The real loading machinery; only the slow import-and-build step waits for ``gate``."""

    def __init__(self) -> None:
        super().__init__("gated-test-model")
        self.gate = threading.Event()

    def _build_model(self):
        self.gate.wait()
        return _HashModel()


def test_constructing_the_memory_service_loads_no_model(tmp_path):
    """``OceanBaseMemoryService(url)`` used to import sentence-transformers and torch (~10 s)."""
    code = (
        "import sys, threading\n"
        "from adk_oceanbase.memory import OceanBaseMemoryService\n"
        f"svc = OceanBaseMemoryService('seekdb://{tmp_path}/db')\n"
        "assert type(svc.embedder).__name__ == 'SentenceTransformerEmbedder', svc.embedder\n"
        "assert svc.embedder.status == 'not loaded', svc.embedder.status\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'pylibseekdb') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_search_while_the_model_loads_falls_back_to_fulltext(engine_db):
    emb = GatedEmbedder()
    memory = OceanBaseMemoryService(
        database=engine_db, embedder=emb, settings=MemorySettings(model_wait_s=0.05, bump_access=False)
    )
    try:
        now = datetime.now(timezone.utc).isoformat()
        await memory.add_memory(app_name=APP, user_id=USER, memories=[
            MemoryEntry(author="user", timestamp=now, content=types.Content(parts=[types.Part(text=t)]))
            for t in ("Lin's sister Mei is a nurse in Lisbon.", "Lin drinks green tea every morning.")
        ])
        assert emb.status == "loading"  # first use started it; the gate holds it
        hits = await memory.search(APP, USER, "which nurse works in Lisbon")
        assert hits and "nurse" in hits[0].entry.content.parts[0].text
        assert hits[0].signals.semantic == 0 and hits[0].signals.fulltext > 0
        emb.gate.set()
        await memory.flush()  # the rows get their vectors once the model is there
        assert emb.status.startswith("ready")
        hits = await memory.search(APP, USER, "which nurse works in Lisbon")
        assert "nurse" in hits[0].entry.content.parts[0].text and hits[0].signals.semantic > 0
    finally:
        emb.gate.set()
        await memory.close()


def test_a_failed_load_is_reported_and_retried_by_embed():
    class Broken(SentenceTransformerEmbedder):
        attempts = 0

        def _build_model(self):
            Broken.attempts += 1
            raise OSError("model files missing")

    emb = Broken("broken-model")
    assert emb.wait_loaded(timeout=30) is True  # finished: failed
    assert emb.status == "failed: OSError: model files missing" and not emb.loaded
    emb.start_loading()  # a failure is not retried in the background
    assert emb.wait_loaded(timeout=30) and Broken.attempts == 1
    with pytest.raises(OSError):
        emb.embed(["x"])
    assert Broken.attempts == 2
