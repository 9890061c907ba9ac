"""Checks an embedded seekdb directory before seekdb is started on it: there, reachable, writable.

``pylibseekdb.open`` creates whatever directory it is given (about 220 MB and
16 s for a new one, measured here), and its errors name neither the path nor
the cause: a path through a regular file surfaced as a raw
``FileExistsError``, a directory without write permission as
``seekdb_open failed: code=-1`` (issue 24).  So the path is checked first and
each problem is a :class:`~.errors.ConfigurationError` naming the path.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigurationError, DatabaseNotFoundError

__all__ = ["check_directory", "is_seekdb_directory"]

_MARKER = "store"
"""The sub-directory seekdb keeps its data files in: its presence tells a seekdb directory from any other."""


def is_seekdb_directory(db_dir: Path) -> bool:
    """Whether ``db_dir`` holds a seekdb database (its ``store/`` data directory)."""
    return (db_dir / _MARKER).is_dir()


def check_directory(db_dir: Path, *, create: bool) -> None:
    """Raises a typed error naming the problem unless seekdb can be started on ``db_dir``.

    Args:
        db_dir: the embedded database directory (absolute).
        create: whether a missing database may be created here; when ``False``
            (the CLI's reading and maintenance commands) a directory that holds
            no seekdb database raises :class:`DatabaseNotFoundError` and
            nothing is created.

    Permission is checked with ``os.access``, which answers for the real
    user: root passes it everywhere except on a read-only mount (EROFS).
    """
    existing = db_dir
    while not existing.exists():
        if existing.is_symlink():  # a dangling link: mkdir would fail with a bare FileExistsError
            raise ConfigurationError(f"seekdb:// path {db_dir}: {existing} is a broken symbolic link")
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigurationError(
            f"seekdb:// path {db_dir}: {existing} is a file, not a directory; the database needs a directory of its own"
        )
    if not create and not is_seekdb_directory(db_dir):
        raise DatabaseNotFoundError(
            f"no database at {db_dir} (nothing was created); check the path, "
            f"or create one with: adk-oceanbase db upgrade --url seekdb://{db_dir}"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "write to" if existing == db_dir else f"create {db_dir} in"
        raise ConfigurationError(
            f"seekdb:// path {db_dir}: cannot {what} {existing} (permission denied for uid {os.getuid()}, "
            "or a read-only file system); seekdb writes its data and logs there"
        )
