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
from typing import IO, TypedDict, Unpack

__all__ = [
    "ADMIT",
    "START_S",
    "ServerFailed",
    "ServerOptions",
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


class ServerOptions(TypedDict, total=False):
    """How a server process runs and when it counts as ready (:func:`server_subprocess`, :func:`serve_subprocess`)."""

    env: Mapping[str, str] | None
    """The server's environment (default: this process's)."""
    cwd: Path | str | None
    """Its working folder."""
    ready_path: str
    """The path that says ready (default ``/readyz``: its models are loaded; ``/healthz``: as soon as it answers)."""
    start_timeout_s: float
    """How long it may take to get ready (default :data:`START_S`: a busy machine must not fail a test)."""
    log: Path | None
    """Where its stdout and stderr go (default: a temporary file, removed after)."""
    on_start: Callable[[subprocess.Popen[bytes]], None] | None
    """Called with the process once it is ready (a benchmark samples its memory)."""


@contextlib.contextmanager
def server_subprocess(argv: Sequence[str], url: str, **options: Unpack[ServerOptions]) -> Iterator[str]:
    """Run the server command ``argv`` until the block ends; yield ``url`` once ``url + ready_path`` answers 200.

    Its output goes to a file, never to a pipe that could fill; a server that exits or never gets ready raises
    :class:`ServerFailed` with the log's tail (:class:`ServerOptions` for the rest).
    """
    log = options.get("log")
    path = Path(tempfile.mkstemp(prefix="admit-serve-", suffix=".log")[1]) if log is None else log
    env = options.get("env")
    out: IO[bytes] = path.open("wb")
    try:
        proc = subprocess.Popen(
            list(argv), env=dict(env) if env is not None else None, cwd=options.get("cwd"), stdout=out, stderr=out
        )
        try:
            path_ready = options.get("ready_path", "/readyz")
            wait_ready(url, proc, path=path_ready, timeout_s=options.get("start_timeout_s", START_S), log=path)
            on_start = options.get("on_start")
            if on_start is not None:
                on_start(proc)
            yield url
        finally:
            stop(proc)
    finally:
        out.close()
        if log is None:
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
    **options: Unpack[ServerOptions],
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
        options: The environment, working folder, ready path, start-up time, log and start hook
            (:class:`ServerOptions`).

    Raises:
        ServerFailed: It exited, or was not ready within ``start_timeout_s``.
    """
    port = port if port is not None else free_port(host)
    argv = [*command, "serve", *args, "--host", host, "--port", str(port)]
    if log_level is not None:
        argv += ["--log-level", log_level]
    shown = f"[{host}]" if ":" in host else host
    with server_subprocess(argv, f"http://{shown}:{port}", **options) as url:
        yield url
