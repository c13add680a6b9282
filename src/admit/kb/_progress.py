"""Ingest progress on stderr: chunks embedded out of an estimated total, with the rate and an ETA.

The total is not known until every file is chunked, and files are chunked as they are reached, so it is
estimated: the chunks found so far plus the bytes of the files not yet read at the chunks-per-byte seen so far.
It converges on the true count as the run goes; the ETA is rich's (remaining estimate / recent rate).
"""

from __future__ import annotations

from typing import Any

__all__ = ["IngestProgress"]


class IngestProgress:
    """A rich progress bar over chunks (stderr), or nothing when ``enabled`` is false.

    Args:
        total_bytes: The bytes of every file the run will read.
        enabled: Whether to draw anything.
    """

    def __init__(self, total_bytes: int, *, enabled: bool) -> None:
        self.total_bytes = max(0, total_bytes)
        self.bytes_read = 0
        self.chunks_found = 0
        self.chunks_done = 0
        self._bar: Any = None
        self._task: Any = None
        if not enabled:
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

    def estimate(self) -> int:
        """The estimated total number of chunks (found so far + the unread bytes at the rate seen so far)."""
        if self.bytes_read <= 0 or self.chunks_found <= 0:
            return max(self.chunks_found, self.chunks_done)
        rest = max(0, self.total_bytes - self.bytes_read) * self.chunks_found / self.bytes_read
        return max(self.chunks_done, self.chunks_found + round(rest))

    def file(self, name: str, size: int) -> None:
        """Reports that a file was reached (its bytes count as read)."""
        self.bytes_read += size
        if self._bar is not None:
            self._bar.update(self._task, description=name)

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

    def stop(self) -> None:
        """Draws the final state (the total is then exact) and stops the bar."""
        if self._bar is not None:
            self._bar.update(self._task, completed=self.chunks_done, total=self.chunks_done, description="")
            self._bar.stop()
            self._bar = None
