"""Liveness probes answered off the event loop: a kept-alive probe connection is served by a thread of its own.

``/healthz`` is answered where its bytes are read (:func:`admit.service.server.guarded_protocol`), but those
bytes are read by the event loop, in its turn: under a flood the loop's turn holds hundreds of other
connections' reads, refusals and answers, and a probe waited for all of them (``/healthz`` p99 100-907 ms under
``bench_fairness.py``'s ``flood:17,bodies:8`` while the probe itself took 0.2-6 ms at the server).

A connection whose every request so far was a probe is handed, once its first probe is answered, to a
:class:`ProbeThread`: a thread with its own ``select`` over such connections, which answers each further probe
on it as soon as the thread holds the interpreter (the loop's thread gives it up within
``sys.getswitchinterval()``, 5 ms by default), whatever the loop has in hand. Anything else that comes on such a
connection (another path, a body, a request in pieces, a pipelined one) goes back to the event loop with the
bytes read, as a new connection of the server's, and is served as any request is. The thread holds at most
``max_connections`` connections (further probe connections stay on the loop), closes one idle for
``idle_s``, and ends when it holds none.

A probe on a new connection each time (``Connection: close``, as kubelet sends) is still accepted and answered
by the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ProbeThread", "is_probe"]

logger = logging.getLogger(__name__)


def is_probe(data: bytes, path: bytes) -> bool:
    """Whether ``data`` is exactly one bodiless ``GET``/``HEAD`` of ``path`` (keep-alive), headers complete."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep or rest:
        return False
    line, _, fields = head.partition(b"\r\n")
    method, _, tail = line.partition(b" ")
    target, _, version = tail.partition(b" ")
    if method not in (b"GET", b"HEAD") or target != path or version != b"HTTP/1.1":
        return False
    lowered = fields.lower()
    return not any(
        word in lowered for word in (b"content-length", b"transfer-encoding", b"upgrade", b"connection: close", b"\n ")
    )


class ProbeThread:
    """Kept-alive probe connections served by a thread of their own (module docstring).

    Args:
        answer: ``answer(method, received) -> (headers, body)``: the probe's answer
            (:meth:`admit.service.gate.Liveness.answer`; thread-safe: it reads the service's state, counts a
            metric).
        path: The probe's path (``/healthz``).
        loop: The server's event loop: where a connection that carries anything else goes back to.
        reconnect: ``reconnect(sock, data)``, run on ``loop``: serve ``sock`` as a new connection of the server's,
            its first bytes ``data``.
        default_headers: The server's own headers on every answer (``date``, ``server``), read per answer.
        max_connections: Most connections the thread holds.
        idle_s: A connection without a probe this long is closed (the server's keep-alive).
    """

    def __init__(
        self,
        *,
        answer: Callable[[str, float], tuple[list[tuple[bytes, bytes]], bytes]],
        path: str,
        loop: asyncio.AbstractEventLoop,
        reconnect: Callable[[socket.socket, bytes], None],
        default_headers: Callable[[], list[tuple[bytes, bytes]]],
        max_connections: int = 32,
        idle_s: float = 5.0,
    ) -> None:
        self.answer = answer
        self.path = path.encode()
        self.loop = loop
        self.reconnect = reconnect
        self.default_headers = default_headers
        self.max_connections = max_connections
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._incoming: list[socket.socket] = []
        self._held = 0
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.answered = 0
        """Probes the thread has answered (tests, benchmarks)."""
        self.returned = 0
        """Connections it gave back to the event loop."""

    def adopt(self, sock: socket.socket) -> bool:
        """Take ``sock`` (a duplicate of a connection's descriptor; the caller closes its own): ``False`` when
        the thread holds its most already (the caller keeps the connection)."""
        with self._lock:
            if self._held >= self.max_connections:
                return False
            self._held += 1
            self._incoming.append(sock)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="admit-probes", daemon=True)
                self._thread.start()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        return True

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ)
        seen: dict[socket.socket, float] = {}
        try:
            while True:
                with self._lock:
                    new, self._incoming = self._incoming, []
                    if not new and not seen:
                        self._thread = None  # none held: the thread ends; the next adopt starts one
                        return
                for s in new:
                    s.setblocking(False)
                    sel.register(s, selectors.EVENT_READ)
                    seen[s] = time.monotonic()
                for key, _ in sel.select(timeout=min(1.0, self.idle_s)):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                        continue
                    conn = key.fileobj
                    assert isinstance(conn, socket.socket)
                    outcome = self._serve(conn)
                    if outcome is True:
                        seen[conn] = time.monotonic()
                        continue
                    self._drop(sel, seen, conn, close=outcome is False)
                    if isinstance(outcome, bytes):  # not a probe: back to the event loop, with what was read
                        self.returned += 1
                        conn.setblocking(True)
                        self.loop.call_soon_threadsafe(self.reconnect, conn, outcome)
                now = time.monotonic()
                for s in [s for s, t in seen.items() if now - t > self.idle_s]:
                    self._drop(sel, seen, s, close=True)
        except Exception:  # pragma: no cover - a bug here must not take the server down
            logger.exception("probe thread failed")
            for s in list(seen):
                self._drop(sel, seen, s, close=True)
            with self._lock:
                self._thread = None
        finally:
            sel.close()

    def _drop(self, sel: Any, seen: dict[socket.socket, float], s: socket.socket, *, close: bool = False) -> None:
        sel.unregister(s)
        seen.pop(s, None)
        with self._lock:
            self._held -= 1
        if close:
            s.close()

    def _serve(self, s: socket.socket) -> bool | bytes:
        """Read what came on ``s`` and answer a probe: ``True`` (the thread keeps ``s``), ``False`` (to close:
        the client closed it, or it failed), or the bytes read when they are not a probe (``s`` goes back)."""
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        received = time.monotonic()
        if not is_probe(data, self.path):
            return data
        method = data.partition(b" ")[0].decode()
        headers, body = self.answer(method, received)
        out = [b"HTTP/1.1 200 OK\r\n"]
        out += [k + b": " + v + b"\r\n" for k, v in (*self.default_headers(), *headers)]
        out += [b"\r\n", body]
        try:
            s.sendall(b"".join(out))  # a few hundred bytes: the socket's buffer takes them
        except OSError:
            return False
        self.answered += 1
        return True
