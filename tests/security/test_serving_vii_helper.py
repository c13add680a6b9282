"""Issue 47 (Serving VII): a probe on a new connection does not wait for the event loop.

kubelet opens a new connection for each probe; the event loop accepted it and answered in its turn: under
``bench_fairness.py``'s ``bodies:8`` such a probe's p99 was 0.9-3.3 s. The server now accepts in a helper process
(:mod:`admit.service.probe_proc`) that answers ``/healthz`` and a ready ``/readyz`` itself and hands every other
connection to the event loop with the bytes it read. It answers only from a fresh heartbeat of the loop, and ends
with the server. Real servers on free loopback ports, waited for on ``/readyz``; the loop is held by an event.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.security._rawhttp import BODY, answer, head

pytest.importorskip("fastapi")

CLOSE = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
KEYS = {"quiet": {"key_env": "K_QUIET", "tenant": "acme"}}
ENV = {"K_QUIET": "quiet-key"}
WAIT_S = 120  # a busy machine never ends a connection the test waits on


def _server(workers: int = 0, **limits: Any) -> Any:
    from admit.service.config import settings_from_dict
    from admit.service.http import create_app
    from admit.service.loopback import LoopbackServer
    from admit.service.server import ServerLimits

    settings = settings_from_dict({"service": {"limits": {"worker_processes": workers}, "keys": KEYS}})
    lim = ServerLimits(
        header_timeout_s=300, body_timeout_s=300, max_connections=500, keep_alive_s=300, probe_process=True, **limits
    )
    app = create_app(settings, environ=dict(ENV), processes=workers > 0)
    return LoopbackServer(app, limits=lim, ready_path="/readyz")


def _ask(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as s:
        s.sendall(data)
        return answer(s)


@contextmanager
def _held(srv: Any) -> Iterator[threading.Event]:
    """The server's event loop held (a callback waits on an event) from the block's start until its end."""
    loop = srv._server.servers[0].get_loop()
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(WAIT_S)

    loop.call_soon_threadsafe(hold)
    try:
        assert holding.wait(WAIT_S)
        yield release
    finally:
        release.set()


def test_probes_on_new_connections_are_answered_while_the_event_loop_is_held() -> None:
    """``/healthz`` (``Connection: close``, HTTP/1.0, ``HEAD``) and ``/readyz`` each on a new connection, answered
    while the loop is held, as the server answers them: same status, headers and body."""
    with _server(probe_stale_s=600) as srv:
        by_loop = {p: _ask(srv.port, f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode()) for p in ("/readyz",)}
        sent = srv._server.probe_process.beats
        for _ in range(WAIT_S * 10):  # a heartbeat since ready: the helper has /readyz's answer
            if srv._server.probe_process.beats > sent:
                break
            time.sleep(0.1)
        with _held(srv) as release:
            status, headers, body = _ask(srv.port, CLOSE)
            assert status == 200 and json.loads(body)["status"] == "ok" and headers["connection"] == "close"
            assert headers["x-content-type-options"] == "nosniff" and "content-security-policy" in headers
            assert headers["cache-control"] == "no-store" and headers["server"] == "uvicorn" and headers["date"]
            assert _ask(srv.port, b"GET /healthz HTTP/1.0\r\n\r\n")[0] == 200
            status, headers, body = _ask(srv.port, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert status == 200 and body == b"" and int(headers["content-length"]) > 0
            status, headers, body = _ask(srv.port, b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert (status, json.loads(body)) == (by_loop["/readyz"][0], json.loads(by_loop["/readyz"][2]))
            assert set(headers) - {"connection"} == set(by_loop["/readyz"][1])
            with socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT_S) as s:  # kept alive: the helper's
                for _ in range(3):
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    assert answer(s)[0] == 200
            assert not release.is_set()


def test_every_other_request_reaches_the_server_with_the_bytes_the_helper_read() -> None:
    """A ``/v1`` request, a probe in pieces, a probe then a request on one connection, a malformed probe: each
    served as the server serves it; the helper's answers are counted in ``/metrics``."""
    with _server(probe_stale_s=600) as srv:
        status, _, body = _ask(srv.port, head("quiet-key", len(BODY)) + BODY)
        assert status == 200 and json.loads(body)["decisions"]
        with socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT_S) as s:
            s.sendall(b"GET /heal")
            s.sendall(b"thz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer(s)[0] == 200
            s.sendall(head("quiet-key", len(BODY)) + BODY)
            assert answer(s)[0] == 200
        with socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT_S) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")  # no Host: the server closes it unanswered, as before
            with contextlib.suppress(ConnectionResetError):
                assert s.recv(65536) == b""
        assert srv._server.probe_process.handed >= 2
        for _ in range(WAIT_S * 10):  # the counts come back with a heartbeat (every 0.25 s)
            metrics = _ask(srv.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[2].decode()
            line = [x for x in metrics.splitlines() if 'route="/healthz",status="200"' in x and "requests" in x]
            if line and float(line[0].rsplit(" ", 1)[1]) >= 1:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the helper's answers were never counted")


def test_a_stale_heartbeat_sends_the_probe_to_the_event_loop() -> None:
    """The loop held past ``probe_stale_s``: the helper no longer answers for it; the probe waits for the loop
    and is answered once the loop runs again."""
    with (
        _server(probe_stale_s=0.5) as srv,
        _held(srv) as release,
        socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT_S) as s,
    ):
        time.sleep(1.0)  # no heartbeat can be sent while the loop is held: the last one is older than 0.5 s
        s.sendall(CLOSE)
        s.settimeout(1.0)
        with pytest.raises(TimeoutError):
            s.recv(1)
        release.set()
        s.settimeout(WAIT_S)
        assert answer(s)[0] == 200


def test_if_the_helper_dies_the_event_loop_accepts_again() -> None:
    with _server(probe_stale_s=600) as srv:
        helper = srv._server.probe_process
        helper.proc.kill()
        for _ in range(WAIT_S * 10):
            if helper.proc is None:
                break
            time.sleep(0.1)
        assert helper.proc is None
        assert _ask(srv.port, CLOSE)[0] == 200
        status, _, body = _ask(srv.port, head("quiet-key", len(BODY)) + BODY)
        assert status == 200 and json.loads(body)["decisions"]


def test_the_helper_ends_cleanly_at_shutdown_beside_worker_processes() -> None:
    """A server with a worker process shuts down: its helper is told to end and exits 0 (not killed)."""
    with _server(workers=1, probe_stale_s=600) as srv:
        status, _, body = _ask(srv.port, head("quiet-key", len(BODY)) + BODY)  # a worker forked and used
        assert status == 200 and json.loads(body)["decisions"]
        proc = srv._server.probe_process.proc
    assert proc.returncode == 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == pid and b"admit.service.probe_proc" in cmd:
                found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_admit_serve_answers_probes_from_its_helper_which_ends_with_the_server(tmp_path: Path) -> None:
    """``admit serve`` (a real process): its helper answers a probe while the server is stopped (``SIGSTOP``), and
    ends when the server is killed, so the port refuses connections: never an answer for a dead server."""
    from admit.testing import serve_subprocess

    cfg = tmp_path / "admit.toml"
    cfg.write_text('[service.keys.a]\nkey_env = "K_QUIET"\ntenant = "acme"\n\n[service.limits]\nprobe_stale_s = 600\n')
    started: list[subprocess.Popen[bytes]] = []
    with serve_subprocess(["--config", str(cfg)], env={**os.environ, **ENV}, on_start=started.append) as url:
        port = int(url.rsplit(":", 1)[1])
        server = started[0]
        helpers = _children(server.pid)
        assert len(helpers) == 1
        os.kill(server.pid, signal.SIGSTOP)
        try:
            assert _ask(port, CLOSE)[0] == 200
        finally:
            os.kill(server.pid, signal.SIGCONT)
        server.kill()
        server.wait(WAIT_S)
        for _ in range(WAIT_S * 10):
            if _gone(helpers[0]):
                break
            time.sleep(0.1)
        assert _gone(helpers[0])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=WAIT_S).close()


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", ("probe", b"/healthz", b"GET", False)),
        (b"HEAD /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", ("probe", b"/readyz", b"HEAD", True)),
        (b"GET /healthz HTTP/1.0\r\n\r\n", ("probe", b"/healthz", b"GET", True)),
        (b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", ("probe", b"/healthz", b"GET", False)),
        (b"GET /heal", ("wait", b"", b"", False)),
        (b"", ("wait", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n", ("wait", b"", b"", False)),
        (b"GET /healthz?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", ("other", b"", b"", False)),
        (b"GET /metrics HTTP/1.1\r\n", ("other", b"", b"", False)),
        (b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", ("other", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", ("other", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", ("other", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\n\r\n", ("other", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET", ("other", b"", b"", False)),
        (b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 9000, ("other", b"", b"", False)),
    ],
    ids=lambda v: repr(v[:40]) if isinstance(v, bytes) else "",
)
def test_what_the_helper_answers_itself(data: bytes, kind: tuple[str, bytes, bytes, bool]) -> None:
    from admit.service.probe_proc import PATHS, classify

    assert classify(data, PATHS) == kind
