"""The README's Agno example runs as written, on a new embedded seekdb directory, with a deterministic model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- agno-example:.*?-->\n```python\n(.*?)```", text, re.S)
    assert found, "the README's Agno example block (marked agno-example) is missing"
    return found.group(1)


def test_the_readme_agno_example_runs_on_the_embedded_default(tmp_path):
    script = "from tests.agno.stub_model import StubModel\nmodel = StubModel()\n" + readme_block()
    env = {**os.environ, "ADK_OCEANBASE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("ADK_OCEANBASE_URL", None)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == ["turns=2 recalled=['I live in Lisbon']", "['User says: I live in Lisbon']"]
    assert (tmp_path / "seekdb").is_dir()  # the embedded default, made on first use
