"""``admit serve`` as a real process on a free loopback port, for tests and benchmarks (:func:`serve_subprocess`).

Example:
    >>> with serve_subprocess(["--config", "admit.toml"]) as url:  # doctest: +SKIP
    ...     httpx.get(f"{url}/healthz").json()["status"]
    'ok'
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

__all__ = [
    "ADMIT",
    "START_S",
    "ServerFailed",
    "free_port",
    "serve_subprocess",
    "server_subprocess",
    "stop",
    "wait_ready",
]

ADMIT: tuple[str, ...] = (sys.executable, "-c", "from admit.cli import main; main()")
"""The ``admit`` command, run by this interpreter (the code under test, whatever ``admit`` is on ``PATH``)."""

START_S = 600.0
"""How long a server may take to load its models: generous, so a busy machine cannot fail a test."""


class ServerFailed(AssertionError):
    """The server exited, or never answered ready, before its start-up time ran out (its log's tail included)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:  # a loopback URL the caller built
            return int(r.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_ready(
    url: str,
    proc: subprocess.Popen[bytes] | None = None,
    *,
    path: str = "/readyz",
    timeout_s: float = START_S,
    log: Path | None = None,
) -> None:
    """Wait until ``url + path`` answers 200 (``/readyz``: the models are loaded).

    Raises:
        ServerFailed: ``proc`` exited first, or ``timeout_s`` passed (the tail of ``log``, or of the process's
            piped stderr, in the message).
    """
    deadline = time.monotonic() + timeout_s
    while not _answers(url + path):
        if proc is not None and proc.poll() is not None:
            raise ServerFailed(f"the server exited with {proc.returncode}: {_tail(proc, log)}")
        if time.monotonic() > deadline:
            raise ServerFailed(f"{url}{path} did not answer 200 within {timeout_s:.0f} s: {_tail(proc, log)}")
        time.sleep(0.2)


def _tail(proc: subprocess.Popen[bytes] | None, log: Path | None) -> str:
    if log is not None:
        with contextlib.suppress(OSError):
            return log.read_text("utf-8", errors="replace")[-3000:]
    if proc is not None and proc.stderr is not None and proc.poll() is not None:
        return proc.stderr.read().decode(errors="replace")[-3000:]
    return ""


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """Terminate a child server and reap it (killed if it does not end within ``timeout_s``)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


@contextlib.contextmanager
def server_subprocess(
    argv: Sequence[str],
    url: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    ready_path: str = "/readyz",
    start_timeout_s: float = START_S,
    log: Path | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Iterator[str]:
    """Run the server command ``argv`` until the block ends; yield ``url`` once ``url + ready_path`` answers 200.

    Its stdout and stderr go to ``log`` (default: a temporary file, removed after), never to a pipe that could
    fill; a server that exits or never gets ready raises :class:`ServerFailed` with the log's tail.
    ``on_start`` gets the process once it is ready (a benchmark samples its memory).
    """
    owned = log is None
    path = Path(tempfile.mkstemp(prefix="admit-serve-", suffix=".log")[1]) if log is None else log
    out: IO[bytes] = path.open("wb")
    try:
        proc = subprocess.Popen(
            list(argv), env=dict(env) if env is not None else None, cwd=cwd, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_ready(url, proc, path=ready_path, timeout_s=start_timeout_s, log=path)
            if on_start is not None:
                on_start(proc)
            yield url
        finally:
            stop(proc)
    finally:
        out.close()
        if owned:
            with contextlib.suppress(OSError):
                os.unlink(path)


@contextlib.contextmanager
def serve_subprocess(
    args: Sequence[str] = (),
    *,
    command: Sequence[str] = ADMIT,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_level: str | None = "warning",
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    ready_path: str = "/readyz",
    start_timeout_s: float = START_S,
    log: Path | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Iterator[str]:
    """Start ``admit serve ARGS`` on ``host`` and a free port (or ``port``); yield its base URL once
    ``ready_path`` answers 200 (``/readyz``: its models are loaded); stop it when the block ends.

    Args:
        args: The options after ``serve`` (``--kb``, ``--config``, ...); ``--host``, ``--port`` and
            ``--log-level`` are added.
        command: The ``admit`` command (default: this interpreter's, :data:`ADMIT`; an installed one's path).
        host: The address to bind.
        port: The port (default: a free one).
        log_level: ``--log-level`` (``None``: not passed).
        env: The server's environment (default: this process's).
        cwd: Its working folder.
        ready_path: The path that says ready (``/healthz``: as soon as it answers, models loading or not).
        start_timeout_s: How long it may take to get ready (generous: a busy machine must not fail a test).
        log: Where its output goes (default: a temporary file, removed after).
        on_start: Called with the process once it is ready.

    Raises:
        ServerFailed: It exited, or was not ready within ``start_timeout_s``.
    """
    port = port if port is not None else free_port(host)
    argv = [*command, "serve", *args, "--host", host, "--port", str(port)]
    if log_level is not None:
        argv += ["--log-level", log_level]
    shown = f"[{host}]" if ":" in host else host
    with server_subprocess(
        argv,
        f"http://{shown}:{port}",
        env=env,
        cwd=cwd,
        ready_path=ready_path,
        start_timeout_s=start_timeout_s,
        log=log,
        on_start=on_start,
    ) as url:
        yield url
