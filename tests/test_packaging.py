"""What the wheel promises: one version source, a license, type information, installable off Linux."""

from __future__ import annotations

import tomllib
from pathlib import Path

import adk_oceanbase

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_has_one_source():
    assert "version" not in PROJECT["project"] and "version" in PROJECT["project"]["dynamic"]
    assert PROJECT["tool"]["hatch"]["version"]["path"] == "adk_oceanbase/__init__.py"
    assert adk_oceanbase.__version__.count(".") == 2


def test_license_and_type_information_ship():
    assert "Apache License" in (ROOT / "LICENSE").read_text() and PROJECT["project"]["license"] == "Apache-2.0"
    assert (ROOT / "adk_oceanbase" / "py.typed").is_file()
    assert "Typing :: Typed" in PROJECT["project"]["classifiers"]


def test_embedded_engine_is_linux_only_and_torch_is_not_pinned():
    deps = PROJECT["project"]["dependencies"]
    seekdb = [d for d in deps if d.startswith("pylibseekdb")]
    assert seekdb == ["pylibseekdb>=1.4; sys_platform == 'linux'"]  # Linux-only wheels
    assert PROJECT["project"]["optional-dependencies"]["embedded"] == ["pylibseekdb>=1.4"]
    torch = [d for d in PROJECT["project"]["optional-dependencies"]["embeddings"] if d.startswith("torch")]
    assert torch and "==" not in torch[0]
    assert "pip install -q torch==2.13.0" in (ROOT / "scripts" / "test.sh").read_text()  # the CPU wheel, in the script


def test_project_urls_point_at_the_code_and_the_issues():
    urls = PROJECT["project"]["urls"]
    assert {"Homepage", "Repository", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


def test_classifiers_say_where_the_embedded_engine_runs():
    """The embedded default (pylibseekdb) has Linux wheels only: "OS Independent" promised more than the package gives."""
    classifiers = PROJECT["project"]["classifiers"]
    assert "Operating System :: OS Independent" not in classifiers
    assert "Operating System :: POSIX :: Linux" in classifiers
    readme = (ROOT / "README.md").read_text()
    assert "Linux wheels only" in readme and "oceanbase://" in readme
