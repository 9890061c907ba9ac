"""The README's LangGraph example runs as written on the embedded default (seekdb in a directory), in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.graph")

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## LangGraph: checkpointer and Store on the same database", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_langgraph_example_runs_on_embedded_seekdb(tmp_path) -> None:
    code = readme_example()
    assert 'url: str = "seekdb:///tmp/lg-demo"' in code
    code = code.replace("seekdb:///tmp/lg-demo", f"seekdb://{tmp_path / 'lg'}")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=280,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert "hello Alice" in lines[0] and "__interrupt__" in lines[0] and "send it?" in lines[0]
    assert lines[1] == "{'steps': ['hello Alice', 'approved: yes']}"
    assert lines[2] == "[(), ('review',), ('greet',)]"
