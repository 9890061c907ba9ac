"""The one frozen configuration object, and how URLs and ``ADK_OCEANBASE_*`` variables become one.

URL forms:

* ``seekdb:///abs/dir`` or ``seekdb://rel/dir``: embedded seekdb from the
  ``pylibseekdb`` wheel, started lazily as a child process on a Unix socket.
  The default when no URL is given: ``$ADK_OCEANBASE_HOME`` or
  ``~/.adk_oceanbase``.
* ``oceanbase://user:pw@host:port/db``: an OceanBase (MySQL mode) or seekdb
  server over aiomysql, with native ``VECTOR``.
* ``mysql+aiomysql://user:pw@host:port/db`` (also ``mysql://``,
  ``mariadb://``): MySQL or MariaDB; vectors are stored as bytes.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from .errors import ConfigurationError

__all__ = ["Config", "Flavor", "ENV_PREFIX", "default_home"]

ENV_PREFIX = "ADK_OCEANBASE_"
Flavor = Literal["seekdb", "oceanbase", "mysql"]

_SCHEMES: dict[str, Flavor] = {
    "seekdb": "seekdb",
    "oceanbase": "oceanbase",
    "oceanbase+aiomysql": "oceanbase",
    "mysql": "mysql",
    "mysql+aiomysql": "mysql",
    "mariadb": "mysql",
    "mariadb+aiomysql": "mysql",
}


def default_home() -> Path:
    """Where the embedded database lives when nothing else is configured."""
    env = os.environ.get(ENV_PREFIX + "HOME")
    return Path(env).expanduser() if env else Path.home() / ".adk_oceanbase"


@dataclass(frozen=True)
class Config:
    """Everything the services need to reach and use the database.

    Build it with :meth:`from_url` or :meth:`from_env` rather than by hand; the
    constructor does no parsing.  Instances are immutable and safe to share.

    Example:
        >>> cfg = Config.from_url("oceanbase://root:secret@127.0.0.1:2881/adk")
        >>> cfg.flavor, cfg.database
        ('oceanbase', 'adk')
        >>> "secret" in repr(cfg)
        False
    """

    flavor: Flavor = "seekdb"
    """Which engine: embedded ``seekdb``, an ``oceanbase`` server, or ``mysql``/MariaDB."""

    host: str | None = None
    """Server host for ``oceanbase``/``mysql``; ``None`` for embedded seekdb."""

    port: int | None = None
    """Server port (OceanBase defaults to 2881, MySQL to 3306)."""

    user: str = "root"
    """Login user. OceanBase users often look like ``root@tenant``."""

    password: str | None = field(default=None, repr=False)
    """Login password; never shown by ``repr`` or logs."""

    database: str = "adk_oceanbase"
    """Database (schema) holding our tables; created on setup when missing and allowed."""

    db_dir: Path | None = None
    """Data directory of the embedded seekdb (``seekdb`` flavor only)."""

    query: Mapping[str, str] = field(default_factory=dict)
    """Extra URL query options passed to the driver (e.g. ``charset``, ``ssl_ca``)."""

    pool_size: int = 10
    """Connections kept open per engine. 16 concurrent writers measured fine with 10 + overflow."""

    max_overflow: int = 20
    """Connections opened beyond ``pool_size`` under bursts."""

    pool_recycle: int = 3600
    """Seconds after which a pooled connection is replaced (server idle timeouts)."""

    pool_timeout: float = 30.0
    """Seconds to wait for a free pooled connection before failing."""

    max_event_bytes: int = 8 * 1024 * 1024
    """Upper bound for one event's JSON; larger appends raise ``EventTooLargeError``."""

    max_id_length: int = 128
    """Longest app name, user id or session id accepted (the key columns are VARCHAR(128))."""

    query_timeout_s: float = 60.0
    """Statement timeout on OceanBase/seekdb (``ob_query_timeout``; the server default is 10 s)."""

    batch_statements: bool = True
    """Send an append's statements (and a create's) in one packet as a multi-statement.

    aiomysql always asks the server for multi-statement support; set
    ``?batch_statements=false`` in the URL behind a proxy that refuses it, and
    the same statements go one by one (one more round trip each)."""

    embedding_dim: int = 384
    """Dimension of the memory ``VECTOR`` column, fixed when the schema is created."""

    @property
    def is_oceanbase(self) -> bool:
        """True for engines with native VECTOR / APPROXIMATE (seekdb and OceanBase)."""
        return self.flavor in ("seekdb", "oceanbase")

    # ------------------------------------------------------------------ parsing
    @classmethod
    def from_url(cls, url: str | None = None, **overrides: Any) -> "Config":
        """Parses one of the URL forms in the module docstring; ``None`` means the default home.

        Keyword overrides replace fields after parsing (e.g. ``pool_size=4``).
        """
        if url is None or url == "":
            base = cls(flavor="seekdb", db_dir=default_home() / "seekdb")
            return dataclasses.replace(base, **overrides) if overrides else base
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ConfigurationError(
                f"unsupported URL scheme {scheme!r}: use seekdb:///dir, "
                "oceanbase://user:pw@host:port/db or mysql+aiomysql://user:pw@host:port/db"
            )
        if parts.fragment:
            # 'root@test#obcluster' unencoded would silently become user 'root', host 'test'.
            raise ConfigurationError("'#' in a database URL must be written %23 (e.g. root%40test%23cluster)")
        flavor = _SCHEMES[scheme]
        query = dict(parse_qsl(parts.query))
        database = query.pop("database", None)
        batch = query.pop("batch_statements", None)
        if batch is not None:
            if batch.lower() not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ConfigurationError(f"batch_statements must be true or false, got {batch!r}")
            overrides.setdefault("batch_statements", batch.lower() in ("1", "true", "yes", "on"))
        if flavor == "seekdb":
            # seekdb:///abs/dir -> netloc '' path '/abs/dir'; seekdb://rel/dir -> netloc 'rel'.
            raw = (parts.netloc + parts.path) if parts.netloc else parts.path
            if not raw:
                raise ConfigurationError("seekdb URL needs a directory: seekdb:///abs/dir or seekdb://rel/dir")
            cfg = cls(
                flavor="seekdb",
                db_dir=Path(unquote(raw)).expanduser().resolve(),
                database=database or "adk_oceanbase",
                query=query,
            )
        else:
            if not parts.hostname:
                raise ConfigurationError(f"{scheme} URL needs a host: {scheme}://user:pw@host:port/db")
            try:
                port = parts.port
            except ValueError as exc:
                raise ConfigurationError(f"bad port in URL for host {parts.hostname}") from exc
            cfg = cls(
                flavor=flavor,
                host=parts.hostname,
                port=port or (2881 if flavor == "oceanbase" else 3306),
                user=unquote(parts.username) if parts.username else "root",
                password=unquote(parts.password) if parts.password is not None else None,
                database=(parts.path.lstrip("/") or database or "adk_oceanbase"),
                query=query,
            )
        return dataclasses.replace(cfg, **overrides) if overrides else cfg

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Config":
        """Reads ``ADK_OCEANBASE_URL`` plus numeric ``ADK_OCEANBASE_<FIELD>`` overrides.

        ``ADK_OCEANBASE_POOL_SIZE=4`` sets ``pool_size``; unknown variables are ignored.
        """
        env = os.environ if environ is None else environ
        cfg = cls.from_url(env.get(ENV_PREFIX + "URL"))
        numeric: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or f.name in ("flavor", "host", "user", "password", "database", "db_dir", "query"):
                continue
            try:
                numeric[f.name] = float(raw) if f.type in ("float",) else int(raw)
            except ValueError as exc:
                raise ConfigurationError(f"{ENV_PREFIX}{f.name.upper()} must be a number, got {raw!r}") from exc
        numeric.update(overrides)
        return dataclasses.replace(cfg, **numeric) if numeric else cfg

    def redacted_url(self) -> str:
        """The URL with the password replaced by ``***``: safe for logs and errors."""
        if self.flavor == "seekdb":
            return f"seekdb://{self.db_dir}"
        auth = quote(self.user, safe="@")
        if self.password is not None:
            auth += ":***"
        return f"{self.flavor}://{auth}@{self.host}:{self.port}/{self.database}"

    def __repr__(self) -> str:  # dataclass repr would be fine, but keep it short and obviously redacted
        return f"Config(url={self.redacted_url()!r}, pool_size={self.pool_size})"
