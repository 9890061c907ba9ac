"""``docs/cli.md`` is what the parsers print now (generated from ``--help``, as sqlite-utils does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adk_oceanbase.cli import build_parser, reference
from adk_oceanbase.commands import COMMANDS

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


@pytest.mark.skipif(
    sys.version_info >= (3, 13),
    reason="argparse 3.13 writes '--output, -o OUTPUT' where 3.11/3.12 write '--output OUTPUT, -o OUTPUT': "
    "docs/cli.md is generated on 3.11 (3.12 prints the same)",
)
def test_the_committed_reference_is_what_the_cli_generates():
    assert DOCS.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md is stale: python -m adk_oceanbase.cli --generate-reference > docs/cli.md"
    )


def test_the_reference_has_every_command_and_its_flags():
    text = reference()
    for cmd in COMMANDS:
        page = text.split(f"## adk-oceanbase {' '.join(cmd.path)}\n", 1)[1].split("\n## ", 1)[0]
        for flag in cmd.flags:
            assert flag.names[0] in page or flag.options.get("metavar", "") in page, (cmd.path, flag.names)


def test_the_generator_command_prints_the_reference():
    done = subprocess.run([sys.executable, "-m", "adk_oceanbase.cli", "--generate-reference"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == reference()


def test_each_command_runs_its_own_function():
    """One function per command: parsing a command line selects the handler registered with its flags."""
    parser = build_parser()
    for cmd in COMMANDS:
        argv = list(cmd.path)
        for f in cmd.flags:
            if not f.names[0].startswith("-"):
                argv.append("1" if f.options.get("type") is int else "x")  # a positional (SESSION, QUERY, TURN, ...)
            elif f.options.get("required"):
                argv += [f.names[0], "x"]
        assert parser.parse_args(argv).handler is cmd.run, cmd.path
