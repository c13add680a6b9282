"""Ingest progress on stderr: files read, then chunks embedded out of their total, with the rate and an ETA.

An ingest run reads and chunks every file first (a fast pass: no embedding), so the number of chunks to embed is
known (:meth:`IngestProgress.known`) before the first is embedded, and the share never goes backwards. Without
that call (a caller that embeds as it reads), the total is estimated: the chunks found so far plus the bytes of
the files not yet read at the chunks-per-byte seen so far.

On a terminal it is a rich bar (the ETA rich's: remaining estimate / recent rate). Elsewhere (a log file, a
pipe, a CI job) it is a plain line every ``interval`` seconds, the ETA the remaining estimate at the run's rate::

    ingest: 96/~410 chunks (23%), 7/32 files, 18.4 chunks/s, ETA 0:00:17, now guides/usage.html
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

__all__ = ["LINE_INTERVAL", "IngestProgress"]

LINE_INTERVAL = 5.0
"""Seconds between two progress lines when stderr is not a terminal."""


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class IngestProgress:
    """A rich progress bar over chunks on a terminal, a line every few seconds elsewhere, or nothing.

    Args:
        total_bytes: The bytes of every file the run will read.
        enabled: Whether to show anything.
        lines: ``True``: plain lines; ``False``: the bar; ``None`` (default): the bar when ``stream`` is a
            terminal, else lines.
        final: With lines, write the final state at :meth:`stop` even when no line fell due (a run shorter than
            ``interval`` otherwise writes nothing).
        interval: Seconds between two lines (default :data:`LINE_INTERVAL`).
        stream: Where lines go (default: ``sys.stderr`` at the time of writing).
        clock: Seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        total_bytes: int,
        *,
        enabled: bool,
        lines: bool | None = None,
        final: bool = False,
        interval: float | None = None,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total_bytes = max(0, total_bytes)
        self.bytes_read = 0
        self.chunks_found = 0
        self.chunks_done = 0
        self.files_reached = 0
        self.lines_written = 0
        self.total: int | None = None
        """The exact number of chunks to embed, once known (:meth:`known`)."""
        self._bar: Any = None
        self._task: Any = None
        self._lines = False
        self._final = final
        self._interval = LINE_INTERVAL if interval is None else interval
        self._stream = stream
        self._clock = clock
        self._start = self._last = clock()
        self._name = ""
        if not enabled:
            return
        if lines if lines is not None else not _is_terminal(stream if stream is not None else sys.stderr):
            self._lines = True
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("chunks"),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("", total=None)

    def known(self, total: int) -> None:
        """Reports the exact number of chunks the run will embed (every file read and chunked)."""
        self.total = max(0, total)
        self._refresh()

    def estimate(self) -> int:
        """The total number of chunks: exact once :meth:`known`, else estimated (found so far + the unread
        bytes at the rate seen so far)."""
        if self.total is not None:
            return max(self.total, self.chunks_done)
        if self.bytes_read <= 0 or self.chunks_found <= 0:
            return max(self.chunks_found, self.chunks_done)
        rest = max(0, self.total_bytes - self.bytes_read) * self.chunks_found / self.bytes_read
        return max(self.chunks_done, self.chunks_found + round(rest))

    def file(self, name: str, size: int) -> None:
        """Reports that a file was reached (its bytes count as read)."""
        self.bytes_read += size
        self.files_reached += 1
        self._name = name
        if self._bar is not None:
            self._bar.update(self._task, description=name)
        self._maybe_line()

    def found(self, chunks: int) -> None:
        """Reports chunks that will be embedded (a file's new or changed chunks)."""
        self.chunks_found += chunks
        self._refresh()

    def done(self, chunks: int) -> None:
        """Reports chunks embedded."""
        self.chunks_done += chunks
        self._refresh()

    def _refresh(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.chunks_done, total=self.estimate())
        self._maybe_line()

    def line(self, *, final: bool = False) -> str:
        """The progress line for now (``final``: the run is over, the total exact)."""
        elapsed = max(self._clock() - self._start, 1e-9)
        rate = self.chunks_done / elapsed
        if final:
            return (
                f"ingest: {self.chunks_done}/{self.chunks_done} chunks (100%), {self.files_reached} files, "
                f"{rate:.1f} chunks/s, ETA 0:00:00, done in {_clock(elapsed)}"
            )
        now = f", now {self._name}" if self._name else ""
        if self.total is None and self.chunks_done == 0 and self.chunks_found == 0:
            share = f" ({100 * self.bytes_read / self.total_bytes:.0f}% of the bytes)" if self.total_bytes else ""
            return f"ingest: reading files, {self.files_reached} read{share}{now}"
        total = self.estimate()
        exact = self.total is not None or self.bytes_read >= self.total_bytes
        share = f"{100 * self.chunks_done / total:.0f}%" if total else "-"
        eta = _clock((total - self.chunks_done) / rate) if rate > 0 else "-"
        if self.total is not None:
            now = ""
        return (
            f"ingest: {self.chunks_done}/{'' if exact else '~'}{total} chunks ({share}), "
            f"{self.files_reached} files read, {rate:.1f} chunks/s, ETA {eta}{now}"
        )

    def _maybe_line(self) -> None:
        if not self._lines:
            return
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._write(self.line())

    def _write(self, text: str) -> None:
        out = self._stream if self._stream is not None else sys.stderr
        print(text, file=out, flush=True)
        self.lines_written += 1

    def stop(self) -> None:
        """Draws the final state (the total is then exact) and stops the bar; with lines, writes the final line
        when a line was written before (or ``final`` was asked for)."""
        if self._bar is not None:
            self._bar.update(self._task, completed=self.chunks_done, total=self.chunks_done, description="")
            self._bar.stop()
            self._bar = None
        if self._lines:
            self._lines = False
            if self.lines_written or self._final:
                self._write(self.line(final=True))


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
