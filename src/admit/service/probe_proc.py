"""Liveness probes on new connections answered by a helper process that accepts the server's connections.

A probe on a new connection each time (``Connection: close``, as kubelet sends) was accepted and answered by the
event loop, in its turn: under ``bench_fairness.py``'s ``bodies:8`` the loop waited for a core 56-89% of the
time and such a probe's p99 was 0.9-3.3 s (:mod:`admit.service.probes` serves kept-alive probe connections from
a thread, but a thread waits for the interpreter, which the loop's thread holds).

With ``[service.limits] probe_process`` on (the default of ``admit serve``), the server starts one small helper
process (this module, run as ``python -m admit.service.probe_proc``; no models, no app) once it listens, gives it
its listening socket and stops accepting on the event loop. The helper accepts every connection and reads its
first bytes:

* a bodiless ``GET``/``HEAD`` of ``/healthz``, or of ``/readyz`` once the server is ready, complete in those bytes
  and alone, is answered by the helper with the server's own answer (headers and body as the server would send
  them, sent to the helper by the server's event loop every :data:`BEAT_S` seconds); the connection stays with
  the helper for further probes (or is closed, ``Connection: close``), until anything else comes on it;
* everything else (any other request, a request in pieces that cannot be a probe, a connection silent for
  :data:`FIRST_WAIT_S`) goes to the server with the bytes read: its descriptor is passed over a Unix socket
  (``SCM_RIGHTS``) and the event loop serves it as a connection it accepted itself, under the same limits.

**Never an answer for a dead server.** The helper answers only from a heartbeat the server's event loop sent less
than ``probe_stale_s`` (5 s) ago, by the time the loop sent it; past that, a probe goes to the event loop like
any request (answered when the loop runs, never if it does not). The helper exits when the server says so at its
shutdown, closes its end of the Unix socket, or is no longer its parent (checked every :data:`TICK_S`), so a dead
server's port refuses connections. If the helper dies, the server accepts on its event loop again (logged). The
helper counts what it answered and sends the counts with each heartbeat's reply; the server adds them to its
``/metrics``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import selectors
import signal
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

__all__ = ["BEAT_S", "FIRST_WAIT_S", "ProbeProcess", "classify"]

logger = logging.getLogger(__name__)

BEAT_S = 0.25
"""How often the server's event loop sends the helper its probe answers (its heartbeat)."""
FIRST_WAIT_S = 1.0
"""Longest the helper holds a connection waiting for a complete request before the server takes it."""
TICK_S = 0.25
"""The helper's longest wait between two looks at its connections' clocks and its parent."""
MAX_HEAD = 8192
"""A request head longer than this is not a probe (it goes to the server)."""
MAX_HELD = 1024
"""Most connections the helper holds (beyond it the oldest goes to the server), and most it has given the server
that the server has not taken yet (beyond it the helper accepts no more until the server takes them): with
:data:`MAX_HEAD` and one read of 64 KiB, at most 2 x 1,024 x 72 KiB (144 MiB) of request bytes held."""
PATHS = frozenset((b"/healthz", b"/readyz"))
"""The paths the helper may answer (``/readyz`` only while the server says it is ready)."""
_MSG = 1 << 17


def classify(data: bytes, paths: Any) -> tuple[str, bytes, bytes, bool]:
    """What ``data`` (a connection's first bytes, or a kept-alive probe connection's next) is:
    ``("probe", path, method, close)`` (exactly one bodiless ``GET``/``HEAD`` of one of ``paths``, its head
    complete; ``close``: the client asked the connection to close), ``("wait", ...)`` (it may still become one) or
    ``("other", ...)`` (anything else: the server serves it)."""
    other = ("other", b"", b"", False)
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        first, ended, _ = data.partition(b"\r\n")
        if len(data) >= MAX_HEAD or (ended and not _probe_line(first, paths)):
            return other
        starts = (m + b" " + p + b" HTTP/1." for m in (b"GET", b"HEAD") for p in paths)
        if any(first[: len(s)] == s[: len(first)] for s in starts):
            return ("wait", b"", b"", False)
        return other
    if rest or len(head) >= MAX_HEAD:
        return other
    line, _, fields = head.partition(b"\r\n")
    parsed = _probe_line(line, paths)
    if parsed is None:
        return other
    method, path, version = parsed
    names: set[bytes] = set()
    connection = b""
    for field in fields.split(b"\r\n") if fields else ():
        name, colon, value = field.partition(b":")
        name = name.lower()
        if not colon or not name or name != name.strip() or b" " in name or b"\t" in name:
            return other  # malformed, or a folded line: the server answers 400
        names.add(name)
        if name == b"connection":
            connection = value.strip().lower()
    if names & {b"content-length", b"transfer-encoding", b"upgrade", b"expect"}:
        return other
    if version == b"HTTP/1.1" and b"host" not in names:
        return other  # h11 answers 400
    close = b"close" in connection or (version == b"HTTP/1.0" and b"keep-alive" not in connection)
    return ("probe", path, method, close)


def _probe_line(line: bytes, paths: Any) -> tuple[bytes, bytes, bytes] | None:
    parts = line.split(b" ")
    if len(parts) != 3:
        return None
    method, path, version = parts
    if method not in (b"GET", b"HEAD") or path not in paths or version not in (b"HTTP/1.1", b"HTTP/1.0"):
        return None
    return method, path, version


class _Held:
    __slots__ = ("buf", "probes", "since")

    def __init__(self, now: float) -> None:
        self.buf = b""
        self.probes = 0
        self.since = now


class _Helper:
    """The helper process's loop (module docstring)."""

    def __init__(
        self, lsock: socket.socket, chan: socket.socket, *, parent: int, keep_alive_s: float, stale_s: float
    ) -> None:
        self.lsock = lsock
        self.chan = chan
        self.parent = parent
        self.keep_alive_s = keep_alive_s
        self.stale_s = stale_s
        self.sel = selectors.DefaultSelector()
        lsock.setblocking(False)
        chan.setblocking(False)
        self.sel.register(lsock, selectors.EVENT_READ)
        self.sel.register(chan, selectors.EVENT_READ)
        self.held: dict[socket.socket, _Held] = {}
        self.out: deque[tuple[bytes, socket.socket | None]] = deque()
        self.answers: dict[bytes, tuple[bytes, bytes]] = {}
        self.beat_at = float("-inf")
        self.counts: Counter[str] = Counter()
        self.accepting = True
        self._date = (0, b"")

    def run(self) -> None:
        while True:
            ready = self.sel.select(timeout=TICK_S)
            ready.sort(key=lambda e: e[0].fileobj is not self.chan)  # the server's news first: a probe sees it
            for key, events in ready:
                obj = key.fileobj
                if obj is self.chan:
                    if events & selectors.EVENT_READ and not self._from_server():
                        return
                    if events & selectors.EVENT_WRITE:
                        self._flush()
                elif obj is self.lsock:
                    self._accept()
                else:
                    assert isinstance(obj, socket.socket)
                    self._readable(obj)
            if os.getppid() != self.parent:
                return
            self._expire(time.monotonic())
            if self.out:
                self._flush()

    def _from_server(self) -> bool:
        """Heartbeats from the server; ``False`` when it closed its end (the helper ends)."""
        while True:
            try:
                msg = self.chan.recv(_MSG)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not msg or msg[:1] == b"Q":  # the server closed its end, or asked us to end
                return False
            if msg[:1] != b"H":
                continue
            beat = json.loads(msg[1:])
            self.beat_at = float(beat["at"])
            answers = beat["answers"].items()
            self.answers = {p.encode(): (h.encode("latin-1"), b.encode("latin-1")) for p, (h, b) in answers}
            if self.counts:
                self.out.append((b"C" + json.dumps(dict(self.counts)).encode(), None))
                self.counts.clear()
                self._flush()

    def _accept(self) -> None:
        now = time.monotonic()
        for _ in range(64):
            if len(self.out) >= MAX_HELD:  # the server reads none of what it is given: accept no more for now
                self.sel.unregister(self.lsock)
                self.accepting = False
                return
            try:
                s, _ = self.lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors: the server's loop would fail the same way; try again later
                return
            s.setblocking(False)
            if len(self.held) >= MAX_HELD:
                self._give(next(iter(self.held)))
            self.held[s] = _Held(now)
            self.sel.register(s, selectors.EVENT_READ)

    def _readable(self, s: socket.socket) -> None:
        h = self.held[s]
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close(s)
            return
        h.buf += data
        kind, path, method, close = classify(h.buf, PATHS)
        if kind == "wait":
            return
        now = time.monotonic()
        found = self.answers.get(path)
        if kind == "other" or found is None or now - self.beat_at > self.stale_s:
            self._give(s)
            return
        head, body = found
        status, _, fields = head.partition(b"\r\n")
        out = [status, b"\r\ndate: ", self._now_date(), b"\r\n", fields]
        if close:
            out.append(b"connection: close\r\n")
        out.append(b"\r\n")
        if method == b"GET":
            out.append(body)
        try:
            sent = s.send(b"".join(out))  # a few hundred bytes: the socket's buffer takes them
        except OSError:
            sent = -1
        self.counts[f"{path.decode()} {method.decode()}"] += 1
        if close or sent != sum(map(len, out)):
            self._close(s)
            return
        h.buf, h.probes, h.since = b"", h.probes + 1, now

    def _now_date(self) -> bytes:
        second = int(time.time())
        if self._date[0] != second:
            self._date = (second, formatdate(second, usegmt=True).encode())
        return self._date[1]

    def _expire(self, now: float) -> None:
        for s, h in list(self.held.items()):
            if h.probes and not h.buf:
                if now - h.since > self.keep_alive_s:
                    self._close(s)
            elif now - h.since > FIRST_WAIT_S:
                self._give(s)

    def _close(self, s: socket.socket) -> None:
        self.sel.unregister(s)
        del self.held[s]
        s.close()

    def _give(self, s: socket.socket) -> None:
        """``s`` goes to the server, with what was read of it."""
        h = self.held.pop(s)
        self.sel.unregister(s)
        self.out.append((b"F" + h.buf, s))
        self._flush()

    def _flush(self) -> None:
        while self.out:
            msg, s = self.out[0]
            try:
                if s is None:
                    self.chan.send(msg)
                else:
                    socket.send_fds(self.chan, [msg], [s.fileno()])
            except (BlockingIOError, InterruptedError):
                self.sel.modify(self.chan, selectors.EVENT_READ | selectors.EVENT_WRITE)
                return
            except OSError as exc:
                if exc.errno == errno.ETOOMANYREFS:  # too many descriptors in flight: again at the next tick
                    return
                if s is not None:
                    s.close()
            else:
                if s is not None:
                    s.close()  # the server holds its own descriptor now
            self.out.popleft()
        self.sel.modify(self.chan, selectors.EVENT_READ)
        if not self.accepting:
            self.sel.register(self.lsock, selectors.EVENT_READ)
            self.accepting = True


class ProbeProcess:
    """The server's side of the helper (module docstring): started once the server listens, run on its loop.

    Args:
        listener: The server's listening socket (its event loop stops accepting on it).
        loop: The server's event loop.
        serve: ``serve(sock, data)``, run on ``loop``: serve ``sock`` as a connection the server accepted, its first
            bytes ``data``.
        answers: ``answers() -> {path: (head, body)}``: the probe answers the helper may give now (``head``: the
            status line and the headers, each line ending ``\\r\\n``, without ``date`` and the blank line).
        counted: ``counted(path, method, n)``: the helper answered ``n`` such probes (``/metrics``).
        resume: ``resume()``, run on ``loop`` if the helper dies: accept on the event loop again.
        keep_alive_s: An idle probe connection is closed after this (the server's keep-alive).
        stale_s: The helper answers only from a heartbeat younger than this.
    """

    def __init__(
        self,
        *,
        listener: socket.socket,
        loop: Any,
        serve: Callable[[socket.socket, bytes], None],
        answers: Callable[[], dict[str, tuple[str, str]]],
        counted: Callable[[str, str, int], None],
        resume: Callable[[], None],
        keep_alive_s: float,
        stale_s: float,
    ) -> None:
        self.listener = listener
        self.loop = loop
        self.serve = serve
        self.answers = answers
        self.counted = counted
        self.resume = resume
        self.keep_alive_s = keep_alive_s
        self.stale_s = stale_s
        self.proc: Any = None
        self.chan: socket.socket | None = None
        self._timer: Any = None
        self.handed = 0
        """Connections the helper gave the server (tests, benchmarks)."""
        self.beats = 0
        """Heartbeats sent (tests: one sent after a change is seen by the helper before any probe that follows)."""

    def start(self) -> None:
        """Start the helper, send its first heartbeat and stop accepting on the event loop."""
        import subprocess

        import admit

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        lfd = self.listener.fileno()
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(admit.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        args = [
            sys.executable,
            "-m",
            "admit.service.probe_proc",
            str(lfd),
            str(theirs.fileno()),
            str(os.getpid()),
            str(self.keep_alive_s),
            str(self.stale_s),
        ]
        try:
            self.proc = subprocess.Popen(args, pass_fds=(lfd, theirs.fileno()), stdin=subprocess.DEVNULL, env=env)
        finally:
            theirs.close()
        ours.setblocking(False)
        self.chan = ours
        self._beat()
        self.loop.remove_reader(lfd)
        self.loop.add_reader(ours.fileno(), self._on_message)

    def stop(self) -> None:
        """End the helper (it exits when its Unix socket closes) and wait for it (bounded)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.chan is not None:
            with contextlib.suppress(Exception):
                self.loop.remove_reader(self.chan.fileno())
            with contextlib.suppress(OSError):  # said, not only closed: a process forked since may hold this end
                self.chan.send(b"Q")
            self.chan.close()
            self.chan = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _beat(self) -> None:
        self._timer = self.loop.call_later(BEAT_S, self._beat)
        if self.chan is None:
            return
        msg = b"H" + json.dumps({"at": time.monotonic(), "answers": self.answers()}).encode()
        with contextlib.suppress(BlockingIOError, InterruptedError):
            self.chan.send(msg)  # a helper that does not read misses a beat: it answers less, never more
            self.beats += 1

    def _on_message(self) -> None:
        chan = self.chan
        if chan is None:
            return
        for _ in range(256):
            try:
                msg, fds, _, _ = socket.recv_fds(chan, _MSG, 1)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                msg, fds = b"", []
            if not msg and not fds:
                self._lost()
                return
            if msg[:1] == b"F" and fds:
                self.handed += 1
                self.serve(socket.socket(fileno=fds[0]), msg[1:])
                continue
            for fd in fds:
                os.close(fd)
            if msg[:1] == b"C":
                for name, n in json.loads(msg[1:]).items():
                    path, _, method = name.partition(" ")
                    self.counted(path, method, int(n))

    def _lost(self) -> None:
        """The helper ended (its end of the socket closed): accept on the event loop again."""
        logger.warning("the probe helper process ended; the event loop accepts connections again")
        self.stop()
        self.resume()


def _main(argv: list[str]) -> None:
    lfd, cfd, parent = int(argv[0]), int(argv[1]), int(argv[2])
    keep_alive_s, stale_s = float(argv[3]), float(argv[4])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the server, which closes the socket: we end
    if os.getppid() != parent:
        return
    lsock = socket.socket(fileno=lfd)
    chan = socket.socket(fileno=cfd)
    _Helper(lsock, chan, parent=parent, keep_alive_s=keep_alive_s, stale_s=stale_s).run()


if __name__ == "__main__":
    _main(sys.argv[1:])
