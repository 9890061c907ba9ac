"""Importing the package and the services' first use log nothing from Alembic, even under an INFO root logger."""

from __future__ import annotations

import subprocess
import sys

# What `adk web` / `adk api_server` do before loading services.py: the root logger at INFO.
SCRIPT = """
import asyncio, logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
before = set(logging.root.manager.loggerDict)
import adk_oceanbase, adk_oceanbase.memory, adk_oceanbase.adk_services
assert "alembic" not in sys.modules, "alembic imported with the package"
assert len(logging.root.handlers) == 1 and logging.root.level == logging.INFO, "logging configured at import"
from adk_oceanbase import OceanBaseSessionService

async def main():
    async with OceanBaseSessionService(sys.argv[1]) as svc:
        await svc.list_sessions(app_name="a")

asyncio.run(main())
assert logging.getLogger("alembic").level == logging.NOTSET, "alembic's level was left changed"
"""


def _run(url: str) -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT, url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_first_use_of_a_fresh_database_logs_no_alembic_lines(fresh_url):
    err = _run(fresh_url)
    assert "alembic" not in err, err
    assert "created the adk-oceanbase tables" in err  # one line of ours instead


def test_first_use_of_a_migrated_database_logs_no_alembic_lines(migrated_url):
    err = _run(migrated_url)
    assert "alembic" not in err and "Context impl" not in err, err
