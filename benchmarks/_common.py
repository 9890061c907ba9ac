"""Shared benchmark plumbing: a throwaway seekdb server, timing, percentiles, environment, output.

Kept free of anything session- or memory-specific so every script under
``benchmarks/`` (sessions, retrieval, ...) can reuse it.  Nothing here imports
``adk_oceanbase``: a benchmark must be able to measure the baseline before our
package even imports.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as _dt
import gc
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, Sequence

__all__ = [
    "SeekdbServer",
    "free_port",
    "start_seekdb",
    "percentile",
    "summarize",
    "Timer",
    "time_async_repeated",
    "time_async_paired",
    "environment",
    "print_environment",
    "write_json",
    "ensure_database",
    "seekdb_or_url",
]

REPO_ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- server
def free_port() -> int:
    """Asks the kernel for a free TCP port on 127.0.0.1 (racy by nature, fine for a benchmark)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SeekdbServer:
    """A seekdb TCP server process this benchmark started (and must stop)."""

    port: int
    base_dir: Path
    process: subprocess.Popen[bytes] | None = None
    owns_dir: bool = True
    startup_s: float = 0.0

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def url(self, database: str, scheme: str = "mysql+aiomysql") -> str:
        """A root, password-less URL for ``database`` on this server."""
        return f"{scheme}://root@{self.host}:{self.port}/{database}"

    def stop(self) -> None:
        """Terminates the process we started (by its pid only) and removes its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        if self.owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)


def _seekdb_binary() -> Path:
    import pylibseekdb  # imported lazily: only needed when we start our own server

    path = Path(pylibseekdb.__file__).resolve().parent / "seekdb"
    if not path.exists():
        raise RuntimeError(f"seekdb binary not found next to pylibseekdb: {path}")
    return path


def _wait_ready(host: str, port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    import pymysql

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"seekdb exited during startup with code {proc.returncode}")
        try:
            conn = pymysql.connect(host=host, port=port, user="root", connect_timeout=2)
            try:
                with conn.cursor() as cur:
                    cur.execute("SELECT 1")
                    cur.fetchall()
            finally:
                conn.close()
            return
        except Exception as exc:  # server still booting
            last = exc
            time.sleep(0.5)
    raise RuntimeError(f"seekdb did not accept connections on port {port} within {timeout_s:.0f} s: {last}")


def start_seekdb(
    *,
    port: int | None = None,
    base_dir: Path | None = None,
    memory_budget: str = "1G",
    log_disk_size: str = "2G",
    timeout_s: float = 180.0,
) -> SeekdbServer:
    """Starts a seekdb server from the ``pylibseekdb`` wheel on 127.0.0.1 and waits until it serves.

    Args:
        port: TCP port; a free one when ``None``.
        base_dir: working/data directory; a fresh temporary one (deleted on stop) when ``None``.
        memory_budget: seekdb ``memory_budget`` parameter (1G is what our tests use).
        log_disk_size: seekdb ``log_disk_size`` parameter.
        timeout_s: how long to wait for the first successful ``SELECT 1``.
    """
    port = port or free_port()
    owns = base_dir is None
    base = Path(tempfile.mkdtemp(prefix=f"seekdb-bench-{port}-")) if base_dir is None else base_dir
    base.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(_seekdb_binary()),
        f"--base-dir={base}",
        "--nodaemon",
        "--port",
        str(port),
        "--parameter",
        f"memory_budget={memory_budget}",
        "--parameter",
        f"log_disk_size={log_disk_size}",
        "--log-level",
        "ERROR",
    ]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    server = SeekdbServer(port=port, base_dir=base, process=proc, owns_dir=owns)
    try:
        _wait_ready("127.0.0.1", port, proc, timeout_s)
    except BaseException:
        server.stop()
        raise
    server.startup_s = time.perf_counter() - t0
    return server


def ensure_database(host: str, port: int, user: str, password: str | None, database: str, *, fresh: bool) -> None:
    """Creates ``database`` (dropping it first when ``fresh``) with a short-lived pymysql connection."""
    import pymysql

    conn = pymysql.connect(host=host, port=port, user=user, password=password or "", autocommit=True)
    try:
        with conn.cursor() as cur:
            if fresh:
                cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")
    finally:
        conn.close()


# --------------------------------------------------------------------------- statistics
def percentile(samples: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (``p`` in 0..100), numpy's default method; NaN when empty."""
    if not samples:
        return math.nan
    xs = sorted(samples)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * (p / 100.0)
    lo = math.floor(k)
    hi = math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(samples_s: Sequence[float]) -> dict[str, float]:
    """Latency summary in milliseconds: n, p50, p95, p99, mean, min, max."""
    ms = [s * 1000.0 for s in samples_s]
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "mean_ms": statistics.fmean(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
    }


class Timer:
    """``with Timer() as t: ...`` then ``t.elapsed`` in seconds (perf_counter)."""

    def __enter__(self) -> "Timer":
        self.start = time.perf_counter()
        self.elapsed = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start


async def time_async_repeated(
    fn: Callable[[], Awaitable[Any]],
    *,
    min_reps: int = 3,
    max_reps: int = 50,
    budget_s: float = 5.0,
    warmup: int = 1,
) -> list[float]:
    """Runs ``fn`` ``warmup`` times untimed, then at least ``min_reps`` and at most ``max_reps``
    timed repetitions, stopping early once ``budget_s`` seconds of timed work have passed.

    A full ``gc.collect()`` runs (untimed) before each repetition: loading thousands of
    pydantic events otherwise triggers generation-2 collections at random points, which
    measured here turned a 50-70 ms load into 150-450 ms outliers for whichever service
    happened to be running.
    """
    for _ in range(warmup):
        await fn()
    samples: list[float] = []
    spent = 0.0
    while len(samples) < max_reps and (len(samples) < min_reps or spent < budget_s):
        gc.collect()
        t0 = time.perf_counter()
        await fn()
        dt = time.perf_counter() - t0
        samples.append(dt)
        spent += dt
    return samples


async def time_async_paired(
    fns: dict[str, Callable[[], Awaitable[Any]]],
    *,
    min_reps: int = 3,
    max_reps: int = 50,
    budget_s: float = 5.0,
    warmup: int = 1,
) -> dict[str, list[float]]:
    """Like :func:`time_async_repeated` for several systems at once, alternating them sample by
    sample (and the order each round), so load from other processes on a shared machine hits
    every system alike instead of whichever phase happened to run during it."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            await fns[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    spent = 0.0
    rep = 0
    while rep < max_reps and (rep < min_reps or spent < budget_s * len(names)):
        for name in names if rep % 2 == 0 else reversed(names):
            gc.collect()
            t0 = time.perf_counter()
            await fns[name]()
            dt = time.perf_counter() - t0
            samples[name].append(dt)
            spent += dt
        rep += 1
    return samples


# --------------------------------------------------------------------------- environment
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _mem_total_gb() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def environment(packages: Sequence[str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a reader needs to reproduce a number: versions, CPU, git commit, date (UTC)."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    env: dict[str, Any] = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git("rev-parse", "--short=12", "HEAD"),
        "git_dirty": bool(dirty) if dirty is not None else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_gb": _mem_total_gb(),
        "packages": {p: _version(p) for p in packages},
    }
    if extra:
        env.update(extra)
    return env


def print_environment(env: dict[str, Any]) -> None:
    print("== environment")
    for key, value in env.items():
        if key == "packages":
            print("  packages: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            print(f"  {key}: {value}")


def write_json(path: str | os.PathLike[str], payload: dict[str, Any]) -> None:
    """Writes the results file (NaN becomes null so every JSON reader accepts it)."""

    def _clean(obj: Any) -> Any:
        if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
            return None
        if isinstance(obj, dict):
            return {str(k): _clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [_clean(v) for v in obj]
        return obj

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(_clean(payload), indent=2, sort_keys=False) + "\n")


def server_address(server: SeekdbServer | None, url: str | None) -> tuple[str, int]:
    """Host and port of the server a benchmark talks to: the one :func:`seekdb_or_url` started, else the one
    ``url`` names (``oceanbase://root@host:port/``; OceanBase's port 2881 when it names none)."""
    if server is not None:
        return server.host, server.port
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    return parts.hostname or "127.0.0.1", parts.port or 2881


def paired_median(old: Sequence[float], new: Sequence[float]) -> float:
    """The median of each sample's ``new / old``, the two measured back to back: an A/B ratio that load
    drifting during the run moves far less than a ratio of two medians."""
    return statistics.median(b / a for a, b in zip(old, new))


def ab_parser(description: str) -> argparse.ArgumentParser:
    """The options every old-tree A/B benchmark takes (``--url``, ``--old``, ``--json``); it adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--url", help="a seekdb/OceanBase server: oceanbase://root@host:port/ (default: start one)")
    ap.add_argument("--old", help="folder holding adk_oceanbase_old (an older tree's package, renamed)")
    ap.add_argument("--json", help="write the p50s, paired ratios and load here")
    return ap


def run_ab(args: argparse.Namespace, run: Callable[[argparse.Namespace, str, int], Awaitable[dict[str, Any]]]) -> None:
    """Runs ``run(args, host, port)`` on the server ``--url`` names, or one started for it, and writes
    ``--json`` with the tree compared against."""
    with seekdb_or_url(args.url) as server:
        host, port = server_address(server, args.url)
        out = asyncio.run(run(args, host, port))
    if args.json:
        write_json(args.json, {**out, "old": args.old})


@contextlib.contextmanager
def seekdb_or_url(url: str | None, **kwargs: Any) -> Iterator[SeekdbServer | None]:
    """Yields a started :class:`SeekdbServer` when ``url`` is None (stopped on exit), else None."""
    if url:
        yield None
        return
    server = start_seekdb(**kwargs)
    # The server runs in its own session (start_new_session), so a SIGTERM to this
    # process (timeout, pkill) would leave it running and merging in the background
    # of later measurements; turn SIGTERM into SystemExit so the finally below runs.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield server
    finally:
        server.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)
