"""``adk-oceanbase demo`` without the ``[embeddings]`` extra says what it cannot show (issue 24).

Without sentence-transformers ``default_embedder()`` is a ``HashEmbedder``:
the fact-version example then ranks the old fact first, which used to be
printed under "with it ... recency then decides" without a word.
"""

from __future__ import annotations

from adk_oceanbase.demo import LEXICAL_ONLY, run_demo
from adk_oceanbase.memory import HashEmbedder


async def test_the_demo_says_its_version_example_needs_the_embeddings_extra(database, migrated_url):
    lines: list[str] = []
    result = await run_demo(migrated_url, out=lines.append, embedder=HashEmbedder())
    text = "\n".join(lines)
    assert f"lexical only ({LEXICAL_ONLY})" in text
    assert result["current_fact"] == "Lin lives in Hangzhou."  # what the lexical signals rank first ...
    assert f"the older fact still wins here: {LEXICAL_ONLY}" in text  # ... and the demo says why
    assert "pip install 'adk-oceanbase[embeddings]'" in LEXICAL_ONLY
