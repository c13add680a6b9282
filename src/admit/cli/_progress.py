"""What a long command shows while it works: a status line, or a bar over records, on stderr.

Shown when stderr is a terminal (``--progress`` forces it, ``--no-progress`` turns it off), so a pipe or a
log file gets only the result. Results stay on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

__all__ = ["done_bar", "progress_option", "record_bar", "show_progress", "status"]

F = TypeVar("F", bound=Callable[..., Any])


def progress_option(what: str) -> Callable[[F], F]:
    """``--progress/--no-progress`` (default: on when stderr is a terminal)."""
    return click.option(
        "--progress/--no-progress",
        "progress",
        default=None,
        help=f"Show {what} on stderr (default: when stderr is a terminal).",
    )


def show_progress(flag: bool | None) -> bool:
    """Whether to draw: the flag when given, else whether stderr is a terminal."""
    return sys.stderr.isatty() if flag is None else flag


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


class _Status:
    """A line that says what the command is doing now (a spinner on a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._status: Any = None
        self._console: Any = None
        if enabled:
            self._console = _console()
            if self._console.is_terminal:
                self._status = self._console.status("")
                self._status.start()

    def update(self, message: str) -> None:
        if not self.enabled:
            return
        if self._status is not None:
            self._status.update(message)
        else:  # forced on, not a terminal: one plain line per step
            self._console.print(message, markup=False, soft_wrap=True)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


@contextmanager
def status(enabled: bool) -> Iterator[_Status]:
    """A status line on stderr for the steps of a command (``update(message)`` per step)."""
    s = _Status(enabled)
    try:
        yield s
    finally:
        s.stop()


def _bar(what: str) -> Any:
    """A started rich bar on stderr: the label, the bar, done/total, the time so far and an ETA."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=_console(),
        transient=False,
    )
    bar.start()
    return bar


@contextmanager
def record_bar(total: int, what: str, *, enabled: bool) -> Iterator[Callable[[], None]]:
    """A bar over ``total`` records on stderr with the rate and an ETA; yields the function to call per record."""
    if not enabled:
        yield lambda: None
        return
    bar = _bar(what)
    task = bar.add_task("", total=total)
    try:
        yield lambda: bar.advance(task)
    finally:
        bar.stop()


@contextmanager
def done_bar(what: str, *, enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A bar on stderr for work that reports ``(done, total)`` itself (``admit eval``'s ``progress=``); yields that
    callback (a no-op when disabled)."""
    if not enabled:
        yield lambda done, total: None
        return
    bar = _bar(what)
    task = bar.add_task("", total=None)

    def report(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        bar.stop()
