"""How commands print: JSON lines on stdout, rich tables on stdout, spinners and progress bars on stderr.

Spinners and bars are drawn only when stderr is a terminal; ``rich`` is
imported when a command prints, not when the parser is built.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = ["confirm", "err", "line", "out", "progress", "spinner"]


def line(obj: Any) -> None:
    """One JSON line on stdout."""
    print(json.dumps(obj, ensure_ascii=False, default=str))


def out() -> Console:
    """A console on stdout; piped output is not cut to 80 columns (rich's default off a terminal)."""
    from rich.console import Console

    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)


def err() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr)


@contextmanager
def spinner(message: str) -> Iterator[None]:
    console = err()
    if not console.is_terminal:
        yield
        return
    with console.status(message):
        yield


def progress(message: str) -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = err()
    return Progress(
        SpinnerColumn(), TextColumn(message), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )


def confirm(what: str, *, prompt: str, cancelled: str) -> bool:
    """Asks on a terminal; elsewhere (scripts, CI) only ``--yes`` does ``what``."""
    if not sys.stdin.isatty():
        print(f"adk-oceanbase: this would {what}; pass --yes to do it without a terminal", file=sys.stderr)
        return False
    if input(prompt).strip().lower() in ("y", "yes"):
        return True
    print(f"adk-oceanbase: {cancelled} cancelled", file=sys.stderr)
    return False
