"""Slow clients: ``/healthz`` beside 20,000 connections that never finish their headers (or drip a body).

Starts a server on loopback twice: ``admit serve`` (uvicorn with admit's header read timeout, body read deadline
and connection cap: ``admit.service.server``), and the same app under plain ``uvicorn.run`` (what ``admit
serve`` ran before issue 26). For each, a probe sends sequential ``/healthz`` requests on a quiet server, then
while ``--connections`` slow connections (spread over ``--procs`` client processes; ``--reopen``: re-opened as
the server closes them) send ``GET /healthz HTTP/1.1`` and one header line, then nothing; a tenth send full
headers with ``Content-Length: 5000`` and a few body bytes instead. Prints p50/p99 of the probe, failed probes,
and how many slow connections the server closed.

    python bench/bench_slowloris.py                       # 20,000 connections, 20 s under load
    python bench/bench_slowloris.py --connections 5000 --seconds 10 --only admit
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import resource
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from admit.testing.serve import free_port, serve_subprocess, server_subprocess


def _raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "
BODY = b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"


def _slow_client(port: int, n: int, seconds: float, reopen: bool, out: mp.Queue, ready: mp.Queue) -> None:  # type: ignore[type-arg]
    """Hold ``n`` slow connections for ``seconds`` (``reopen``: re-open each one the server closes)."""
    _raise_fd_limit()
    poller = select.poll()
    socks: dict[int, tuple[socket.socket, bool]] = {}
    closed = failed = 0

    def open_one(i: int) -> None:
        nonlocal failed
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            failed += 1
            s.close()
            return
        socks[s.fileno()] = (s, False)
        poller.register(s, select.POLLOUT | select.POLLIN)
        del i

    for i in range(n):
        open_one(i)
    end = time.monotonic() + seconds
    k = 0
    told = False
    while time.monotonic() < end:
        if not told and k >= n:  # every connection has sent its unfinished request
            ready.put(1)
            told = True
            end = time.monotonic() + seconds  # held this long once all are in
        for fd, ev in poller.poll(200):
            s, sent = socks.get(fd, (None, False))
            if s is None:
                continue
            if ev & select.POLLOUT and not sent:
                with contextlib.suppress(OSError):
                    s.send(BODY if k % 10 == 0 else HEAD)
                k += 1
                socks[fd] = (s, True)
                poller.modify(fd, select.POLLIN)
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                closed += 1
                poller.unregister(fd)
                del socks[fd]
                s.close()
                if reopen and time.monotonic() < end:
                    open_one(0)
    if not told:
        ready.put(0)
    for s, _ in socks.values():
        s.close()
    out.put((closed, failed))


def _probe(url: str, n: int, seconds: float) -> tuple[list[float], int]:
    lat: list[float] = []
    errors = 0
    end = time.monotonic() + seconds
    while len(lat) + errors < n and time.monotonic() < end:
        t = time.perf_counter()
        try:
            with httpx.Client(timeout=10) as c:  # a new connection each time: what a health checker does
                ok = c.get(f"{url}/healthz").status_code == 200
        except httpx.HTTPError:
            ok = False
        if ok:
            lat.append((time.perf_counter() - t) * 1000)
        else:
            errors += 1
        time.sleep(0.02)
    return lat, errors


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")


def _run(mode: str, args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    port = free_port()
    cfg = tmp / "admit.toml"
    cfg.write_text("[service]\n[service.limits]\nheader_timeout_s = 10\nbody_timeout_s = 30\n", "utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started: list[subprocess.Popen[bytes]] = []
    if mode == "admit":
        server = serve_subprocess(
            ["--config", str(cfg)], port=port, env=env, ready_path="/healthz", on_start=started.append
        )
    else:
        code = (
            "import uvicorn; from admit.service.http import create_app; "
            f"uvicorn.run(create_app(), host='127.0.0.1', port={port}, log_level='warning', access_log=False)"
        )
        argv, url = [sys.executable, "-c", code], f"http://127.0.0.1:{port}"
        server = server_subprocess(argv, url, env=env, ready_path="/healthz", on_start=started.append)
    with server as url:
        quiet, quiet_err = _probe(url, args.probes, 30)
        q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
        ready: mp.Queue = mp.Queue()  # type: ignore[type-arg]
        per = args.connections // args.procs
        kids = [
            mp.Process(target=_slow_client, args=(port, per, args.seconds, args.reopen, q, ready))
            for _ in range(args.procs)
        ]
        for k in kids:
            k.start()
        opened = sum(ready.get(timeout=args.seconds + 60) for _ in kids)  # every slow request is sent
        time.sleep(1.0)
        loud, loud_err = _probe(url, args.probes, args.seconds)
        results = [q.get(timeout=2 * args.seconds + 120) for _ in kids]
        for k in kids:
            k.join(30)
        alive = started[0].poll() is None
    return {
        "mode": mode,
        "quiet": quiet,
        "quiet_err": quiet_err,
        "loud": loud,
        "loud_err": loud_err,
        "closed": sum(r[0] for r in results),
        "connect_failed": sum(r[1] for r in results),
        "alive": alive,
        "ready": opened,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=20_000)
    ap.add_argument("--procs", type=int, default=4, help="client processes holding the slow connections")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the slow connections are held")
    ap.add_argument("--probes", type=int, default=100, help="/healthz probes per phase")
    ap.add_argument("--only", choices=["admit", "plain"], default=None)
    ap.add_argument("--reopen", action="store_true", help="re-open every slow connection the server closes")
    args = ap.parse_args()
    _raise_fd_limit()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in [args.only] if args.only else ["admit", "plain"]:
            rows.append(_run(mode, args, Path(tmp)))
    load = os.getloadavg()[0]
    how = "re-opened when closed" if args.reopen else "not re-opened"
    print(
        f"{args.connections} slow connections ({how}) over {args.procs} processes, {args.seconds:g} s; load {load:.1f}"
    )
    print(
        f"{'server':<8} {'quiet p50':>9} {'p99':>7} {'slow p50':>9} {'p99':>8} {'p50 x':>6} {'p99 x':>6} failed  closed"
    )
    for r in rows:
        q, s = r["quiet"], r["loud"]
        assert isinstance(q, list) and isinstance(s, list)
        q50, q99, s50, s99 = (
            statistics.median(q),
            _pct(q, 0.99),
            statistics.median(s) if s else float("nan"),
            _pct(s, 0.99),
        )
        print(
            f"{r['mode']:<8} {q50:>7.1f}ms {q99:>5.1f}ms {s50:>7.1f}ms {s99:>6.1f}ms",
            f"{s50 / q50:>6.2f} {s99 / q99:>6.2f}",
            f"{r['loud_err']:>3}/{len(s) + int(r['loud_err'])}  {r['closed']} (connect errors {r['connect_failed']}, "
            f"server alive: {r['alive']})",
        )


if __name__ == "__main__":
    main()
