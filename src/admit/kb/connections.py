"""One database connection per thread, opened on first use and all closed together: what the SQL stores share.

Example:
    >>> import sqlite3
    >>> conns = ThreadConnections(lambda: sqlite3.connect(":memory:"), label="demo")
    >>> conns.get().execute("SELECT 1").fetchone()
    (1,)
    >>> conns.close()
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from admit.errors import StoreError

__all__ = ["PerThreadConnections", "ThreadConnections"]


class ThreadConnections:
    """Opens a connection per thread with ``connect`` (on first use) and closes them all in :meth:`close`.

    Args:
        connect: Opens one connection; an exception becomes :class:`~admit.errors.StoreError`.
        label: Names the store in errors (``SqliteStore 'kb.sqlite'``).
        usable: Whether a thread's kept connection can still be used (a closed one is opened again).
    """

    def __init__(
        self, connect: Callable[[], Any], *, label: str, usable: Callable[[Any], bool] = lambda _c: True
    ) -> None:
        self._connect = connect
        self._usable = usable
        self.label = label
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> Any:
        """This thread's connection, opened now if it has none."""
        if self.closed:
            raise StoreError(f"{self.label} is closed.")
        conn = getattr(self._local, "conn", None)
        if conn is None or not self._usable(conn):
            try:
                conn = self._connect()
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"Cannot open {self.label}: {exc}") from exc
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def forget_current(self) -> None:
        """Let this thread open a fresh connection next time (the current one stays open until :meth:`close`)."""
        self._local.conn = None

    def close(self) -> None:
        """Close every connection opened here; :meth:`get` raises afterwards."""
        with self._lock:
            for c in self._all:
                with contextlib.suppress(Exception):
                    c.close()
            self._all.clear()
        self.closed = True
        self._local = threading.local()


class PerThreadConnections:
    """What a store holding a connection per thread shares: its :class:`ThreadConnections` (``_conns``, set in its
    constructor), this thread's connection (:meth:`_conn`) and :meth:`close`."""

    _conns: ThreadConnections

    def _conn(self) -> Any:
        return self._conns.get()

    def close(self) -> None:
        """Close every connection this store opened."""
        self._conns.close()
