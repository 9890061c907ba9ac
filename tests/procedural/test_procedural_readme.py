"""The README's procedural memory example runs as written (seekdb, the packaged MiniLM)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


async def test_the_readme_example_runs(migrated_url, minilm, capsys):
    from .helpers import clear
    from adk_oceanbase import Config
    from adk_oceanbase.engine import Database

    db = Database(Config.from_url(migrated_url))
    await db.start()
    await clear(db)
    await db.close()
    block = re.search(r"<!-- procedural-example -->\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    await namespace["main"](migrated_url)
    assert capsys.readouterr().out.strip() == "['find_order'] 3"
