"""The version gate: which servers our schema and SQL run on, read from ``VERSION()`` before setup writes anything.

On a server that is too old, a setup used to fail midway: revision 0001 or
the one-step create stops at ``CREATE VECTOR INDEX ... distance=cosine`` or
at ``FULLTEXT ... WITH PARSER ik`` with the tables before it already
created (DDL commits statement by statement).  :func:`require_supported`
refuses such a server first, with one line naming its version and the
minimum (:class:`~adk_oceanbase.errors.UnsupportedServerError`).

What each engine reports (real strings; the tests parse each):

* OceanBase CE: ``VERSION()`` = ``5.7.25-OceanBase_CE-v4.3.5.1`` (enterprise
  ``5.7.25-OceanBase-v4.2.0``, MySQL-8 compatible tenants ``8.0.25-OceanBase...``):
  the part after ``-v`` is the kernel, bundle patch included (4.3.5.1 = 4.3.5 BP1).
* seekdb: ``VERSION()`` = ``5.7.25-OceanBase seekdb-v1.4.0.0`` is seekdb's own
  release; its OceanBase kernel comes from ``OB_VERSION()`` (``4.3.5.3`` for 1.4.0.0).
* MariaDB ``10.11.19-MariaDB-0+deb12u1``, MySQL ``8.0.36`` (or ``8.0.36-28`` for Percona).

Why these minimums:

* OceanBase kernel 4.3.5.1 (4.3.5 BP1): the HNSW vector index exists from 4.3.3
  (``vec hnsw index before 4.3.3.0 is not supported`` in the server's DDL
  resolver) and our full-text index uses the ``ik`` parser, which came with
  4.3.5 BP1 (issue #32; see docs/cluster.md for the sources read).
  seekdb is held to the same kernel (it reports it in ``OB_VERSION()``);
  we develop and test on :data:`DEVELOPED_ON`.
* MariaDB 10.6 / MySQL 8.0.4: the analyst views use ``JSON_TABLE``
  (MariaDB 10.6, MySQL 8.0.4) and the queries window functions
  (MariaDB 10.2, MySQL 8.0.2).  MariaDB 10.11 is what the tests run.

Test seam: ``ADK_OCEANBASE_TEST_SERVER_VERSION`` replaces what the server
reports, as ``VERSION()`` or ``VERSION();OB_VERSION()`` (e.g.
``5.7.25-OceanBase_CE-v4.3.4.0``), so a refusal can be tested on a real
server without an old one.  It is for tests only: it can only make the gate
refuse what the server would pass, or pass what it would refuse.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sqlalchemy import text

from . import gateway
from .errors import UnsupportedServerError

if TYPE_CHECKING:
    from .engine import Database

__all__ = [
    "DEVELOPED_ON",
    "MINIMUMS",
    "TEST_VERSION_ENV",
    "ServerVersion",
    "check",
    "parse",
    "require_supported",
]

Engine = Literal["oceanbase", "seekdb", "mariadb", "mysql"]

MINIMUMS: dict[str, tuple[int, ...]] = {
    "oceanbase": (4, 3, 5, 1),  # the OceanBase kernel, also for seekdb (its OB_VERSION())
    "mariadb": (10, 6),
    "mysql": (8, 0, 4),
}
"""The oldest version of each engine our schema and SQL run on (see the module docstring for why)."""

DEVELOPED_ON = "seekdb 1.4.0.0 (OceanBase kernel 4.3.5.3)"
"""The embedded engine this release was developed and tested on (``pylibseekdb`` 1.4.0.post1)."""

TEST_VERSION_ENV = "ADK_OCEANBASE_TEST_SERVER_VERSION"

_OCEANBASE = re.compile(r"OceanBase(?P<edition>[ _-]?[A-Za-z]*)-v(?P<version>\d+(?:\.\d+)*)", re.I)
_LEADING = re.compile(r"^\s*(?P<version>\d+(?:\.\d+)*)")


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class ServerVersion:
    """What a server reported, read: the engine, its release, and for OceanBase/seekdb the kernel."""

    engine: Engine
    release: tuple[int, ...]
    """The product's version: OceanBase 4.3.5.1, seekdb 1.4.0.0, MariaDB 10.11.19, MySQL 8.0.36."""
    kernel: tuple[int, ...] | None
    """The OceanBase kernel (equal to ``release`` on OceanBase, ``OB_VERSION()`` on seekdb); ``None`` on MySQL/MariaDB."""
    reported: str
    """``VERSION()`` as the server said it."""

    def describe(self) -> str:
        """``seekdb 1.4.0.0 (OceanBase kernel 4.3.5.3)``, ``OceanBase 4.3.5.1``, ``MariaDB 10.11.19``."""
        name = {"oceanbase": "OceanBase", "seekdb": "seekdb", "mariadb": "MariaDB", "mysql": "MySQL"}[self.engine]
        out = f"{name} {_dotted(self.release)}"
        if self.engine == "seekdb" and self.kernel is not None:
            out += f" (OceanBase kernel {_dotted(self.kernel)})"
        return out


def parse(version: str, ob_version: str | None = None) -> ServerVersion:
    """Reads ``VERSION()`` (and, for seekdb, ``OB_VERSION()``) into a :class:`ServerVersion`.

    Raises:
        UnsupportedServerError: the string carries no version number we can read.
    """
    ob = _OCEANBASE.search(version)
    if ob is not None:
        release = _numbers(ob.group("version"))
        if "seekdb" in ob.group("edition").lower():
            kernel = _numbers(ob_version.strip()) if ob_version and _LEADING.match(ob_version) else None
            return ServerVersion("seekdb", release, kernel, version)
        return ServerVersion("oceanbase", release, release, version)
    lead = _LEADING.match(version)
    if lead is None:
        raise UnsupportedServerError(f"cannot read a version from the server's VERSION() {version!r}; {_wanted()}")
    engine: Engine = "mariadb" if "mariadb" in version.lower() else "mysql"
    release = _numbers(lead.group("version"))
    if engine == "mariadb" and release[:1] == (5,) and "-10." in version:  # '5.5.5-10.11.6-MariaDB' (old handshake form)
        release = _numbers(re.search(r"-(\d+(?:\.\d+)*)-MariaDB", version, re.I).group(1))  # type: ignore[union-attr]
    return ServerVersion(engine, release, None, version)


def _wanted() -> str:
    return (
        f"adk-oceanbase needs OceanBase {_dotted(MINIMUMS['oceanbase'])} (4.3.5 BP1, for the ik full-text parser) "
        f"or newer, seekdb on that kernel or newer (developed on {DEVELOPED_ON}), MariaDB "
        f"{_dotted(MINIMUMS['mariadb'])}+ or MySQL {_dotted(MINIMUMS['mysql'])}+"
    )


def check(server: ServerVersion, where: str = "the server") -> ServerVersion:
    """Returns ``server`` when our schema and SQL run on it; else raises the one-line error naming the minimum."""
    if server.engine in ("oceanbase", "seekdb"):
        have, need = server.kernel, MINIMUMS["oceanbase"]
        if have is None:  # seekdb that does not answer OB_VERSION(): older than any kernel we know
            raise UnsupportedServerError(f"{where} runs {server.describe()} and reports no OB_VERSION(); {_wanted()}")
    else:
        have, need = server.release, MINIMUMS[server.engine]
    if have < need:
        raise UnsupportedServerError(f"{where} runs {server.describe()} ({server.reported!r}); {_wanted()}")
    return server


async def read(db: Database) -> ServerVersion:
    """What ``db``'s server reports (or :data:`TEST_VERSION_ENV`, when set)."""
    injected = os.environ.get(TEST_VERSION_ENV, "").strip()
    if injected:
        version, _, ob_version = injected.partition(";")
        return parse(version, ob_version or None)
    async with gateway.connection(db) as conn:
        version = str((await conn.execute(text("SELECT VERSION()"))).scalar_one())
        ob_version = None
        if "oceanbase" in version.lower():
            ob_version = str((await conn.execute(text("SELECT OB_VERSION()"))).scalar_one())
    return parse(version, ob_version)


async def require_supported(db: Database) -> ServerVersion:
    """Reads the server's version and refuses one our schema and SQL do not run on; read-only.

    Raises:
        UnsupportedServerError: one line: the server's version, and the minimums.
    """
    return check(await read(db), db.config.redacted_url())
