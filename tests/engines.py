"""Which engine runs a test: both by default (the ``engine`` fixture in conftest), or one, with the reason.

A test that asks for ``engine_db`` (or another ``engine_*`` fixture) runs once
on seekdb and once on MariaDB.  Where a behaviour exists on one engine only,
the test says so with ``seekdb_only(reason)``: it then runs on seekdb alone,
and the reason stays next to it (``pytest --markers`` / ``-m seekdb_only``).
"""

from __future__ import annotations

import pytest


def seekdb_only(reason: str):
    """Restricts an ``engine_*`` test to seekdb (OceanBase): MySQL/MariaDB lacks the behaviour ``reason`` names."""

    def mark(fn):
        fn = pytest.mark.parametrize("engine", ["seekdb"])(fn)
        return pytest.mark.seekdb_only(reason=reason)(fn)

    return mark


# The SQL scoring path exists where the engine has vector functions (cosine_distance): OceanBase/seekdb.
# MySQL/MariaDB scores in numpy, so a scoring-parametrized test runs sql+numpy on seekdb and numpy on MariaDB.
SCORING_PER_ENGINE = pytest.mark.parametrize(
    "engine,scoring", [("seekdb", "sql"), ("seekdb", "numpy"), ("mariadb", "numpy")],
)
