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

Every tuning field of :class:`Config` (``pool_size``, ``query_timeout_s``, ...)
can be set three ways; the first that sets it wins, else the default:

1. keyword arguments: ``Config.from_url(url, pool_size=4)``, ``Config.from_env(pool_size=4)``;
2. the URL's query: ``oceanbase://root@h:2881/adk?pool_size=4``;
3. the environment: ``ADK_OCEANBASE_POOL_SIZE=4``, applied whether or not a
   URL is given (``adk web`` always gives one).

Query options that are not fields are passed to the driver only when they are
in :data:`DRIVER_OPTIONS` (``charset``, ``ssl_ca``, ...); anything else is a
:class:`~adk_oceanbase.errors.ConfigurationError` naming the option, never a
``TypeError`` from deep inside the driver.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from .errors import ConfigurationError

__all__ = ["Config", "DRIVER_OPTIONS", "ENV_PREFIX", "Flavor", "TUNABLE_FIELDS", "default_home"]

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


# aiomysql.connect keywords that SQLAlchemy's aiomysql dialect accepts from a URL query
# (ssl_* become its ``ssl`` dict). Others (init_command, autocommit) are ours to set.
DRIVER_OPTIONS = frozenset(
    {"charset", "connect_timeout", "ssl_ca", "ssl_capath", "ssl_cert", "ssl_key", "ssl_cipher", "ssl_check_hostname"}
)

# Fields settable from a URL query, ADK_OCEANBASE_<FIELD> and keyword overrides, with their
# smallest accepted value. The connection fields (flavor, host, user, ...) come from the URL itself.
TUNABLE_FIELDS: dict[str, float] = {
    "pool_size": 1,
    "max_overflow": 0,
    "pool_recycle": -1,
    "pool_timeout": 0,
    "max_event_bytes": 1,
    "max_id_length": 1,
    "query_timeout_s": 0.001,
    "setup_timeout_s": 0.001,
    "maintenance_timeout_s": 0.001,
    "seekdb_log_mb": 0,
    "batch_statements": 0,
    "embedding_dim": 1,
}

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def default_home() -> Path:
    """Where the embedded database lives when nothing else is configured."""
    return _default_home(os.environ)


def _default_home(env: Mapping[str, str]) -> Path:
    home = env.get(ENV_PREFIX + "HOME")
    return Path(home).expanduser() if home else Path.home() / ".adk_oceanbase"


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
    """Statement timeout: ``ob_query_timeout`` on OceanBase/seekdb (the server default is 10 s),
    ``max_statement_time`` on MariaDB, ``max_execution_time`` (SELECTs only) on MySQL."""

    setup_timeout_s: float = 600.0
    """The longest a setup (``setup()``, first use, ``db upgrade`` / ``stamp`` / ``downgrade``) may take,
    waiting for another setup's schema lock included; past it, :class:`~adk_oceanbase.errors.SetupTimeoutError`
    names what it waited for.  Setup sessions also get it as their server-side lock and DDL wait
    (``ob_query_timeout``; ``lock_wait_timeout`` on MySQL/MariaDB, whose default is a year).
    A new database is created in ~2-4 s; migrating 100k memories takes minutes."""

    maintenance_timeout_s: float = 3600.0
    """Statement timeout of the maintenance commands (``rebuild_vector_index()`` / ``memory rebuild-index``,
    ``reembed()``), which run for minutes where ``query_timeout_s`` bounds a request: rebuilding the
    HNSW index took 85-122 s at 1M rows (issue #32).  Their connection carries it as its server-side
    timeout and is closed afterwards, so no pooled connection keeps it.  DDL and data backfills run
    inside a setup and are bounded by ``setup_timeout_s``."""

    seekdb_log_mb: int = 64
    """Embedded seekdb only: its own log files (``DIR/log``) are kept under this many MB and at level WARN.

    The engine's defaults (level EDIAG, two files of up to 256 MB) made a new directory's log
    61 MB after one setup and up to ~550 MB with the store (issue #24; ``benchmarks/first_use.py``).
    ``0`` leaves the engine's logging as it is (for debugging the engine itself)."""

    batch_statements: bool = True
    """Send an append's statements (and a create's) in one packet as a multi-statement.

    aiomysql always asks the server for multi-statement support; set
    ``?batch_statements=false`` in the URL behind a proxy that refuses it, and
    the same statements go one by one (one more round trip each)."""

    embedding_dim: int = 384
    """Dimension of the memory ``VECTOR`` column, fixed when the schema is created."""

    # ------------------------------------------------------------------ parsing
    @classmethod
    def from_url(cls, url: str | None = None, *, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Config":
        """Parses one of the URL forms in the module docstring; ``None`` means the default home.

        Tuning fields come from ``overrides``, else the URL query, else
        ``ADK_OCEANBASE_<FIELD>`` in ``environ`` (default ``os.environ``).

        Raises:
            ConfigurationError: a bad URL, an unknown query option or keyword,
                or a value of the wrong type.
        """
        env = os.environ if environ is None else environ
        if url is None or url == "":
            base, query = cls(flavor="seekdb", db_dir=_default_home(env) / "seekdb"), {}
        else:
            base, query = cls._parse_url(url)
        fields = {**_env_fields(env), **_query_fields(query), **_override_fields(overrides)}
        return dataclasses.replace(base, **fields) if fields else base

    @classmethod
    def _parse_url(cls, url: str) -> tuple["Config", dict[str, str]]:
        """The connection part of ``url`` and its query options that still need a home."""
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
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        database = query.pop("database", None)
        driver = {k: query.pop(k) for k in list(query) if k in DRIVER_OPTIONS}
        if flavor == "seekdb":
            # seekdb:///abs/dir -> netloc '' path '/abs/dir'; seekdb://rel/dir -> netloc 'rel'.
            raw = (parts.netloc + parts.path) if parts.netloc else parts.path
            if not raw:
                raise ConfigurationError("seekdb URL needs a directory: seekdb:///abs/dir or seekdb://rel/dir")
            cfg = cls(
                flavor="seekdb",
                db_dir=Path(unquote(raw)).expanduser().resolve(),
                database=database or "adk_oceanbase",
                query=driver,
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
                query=driver,
            )
        return cfg, query

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Config":
        """``ADK_OCEANBASE_URL`` (else the default home) with ``ADK_OCEANBASE_<FIELD>`` overrides.

        ``ADK_OCEANBASE_POOL_SIZE=4`` sets ``pool_size``; see the module
        docstring for the order in which keywords, URL and environment apply.
        """
        env = os.environ if environ is None else environ
        return cls.from_url(env.get(ENV_PREFIX + "URL"), environ=env, **overrides)

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


# ------------------------------------------------------------------ typed field values
_FIELD_TYPES = {f.name: f.type for f in dataclasses.fields(Config)}


def _typed(name: str, raw: str, source: str) -> Any:
    """``raw`` as the type of field ``name``; ``source`` names where it came from in the error."""
    kind = _FIELD_TYPES[name]
    text = raw.strip().lower()
    if kind == "bool":
        if text not in _TRUE + _FALSE:
            raise ConfigurationError(f"{source} must be true or false, got {raw!r}")
        return text in _TRUE
    try:
        value: float = float(text) if kind == "float" else int(text)
    except ValueError:
        raise ConfigurationError(f"{source} must be {'a number' if kind == 'float' else 'an integer'}, got {raw!r}") from None
    return _checked(name, value, source)


def _checked(name: str, value: Any, source: str) -> Any:
    low = TUNABLE_FIELDS[name]
    if _FIELD_TYPES[name] != "bool" and value < low:
        raise ConfigurationError(f"{source} must be at least {low:g}, got {value!r}")
    return value


def _env_fields(env: Mapping[str, str]) -> dict[str, Any]:
    out = {}
    for name in TUNABLE_FIELDS:
        var = ENV_PREFIX + name.upper()
        if var in env:
            out[name] = _typed(name, env[var], var)
    return out


def _query_fields(query: Mapping[str, str]) -> dict[str, Any]:
    unknown = sorted(set(query) - set(TUNABLE_FIELDS))
    if unknown:
        valid = ", ".join(sorted([*TUNABLE_FIELDS, "database", *DRIVER_OPTIONS]))
        raise ConfigurationError(f"unknown URL option {', '.join(map(repr, unknown))}; valid options: {valid}")
    return {name: _typed(name, raw, f"URL option {name}") for name, raw in query.items()}


def _override_fields(overrides: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(overrides) - set(_FIELD_TYPES))
    if unknown:
        raise ConfigurationError(
            f"unknown Config field {', '.join(map(repr, unknown))}; valid fields: {', '.join(_FIELD_TYPES)}"
        )
    return {k: (_checked(k, v, k) if k in TUNABLE_FIELDS else v) for k, v in overrides.items()}
