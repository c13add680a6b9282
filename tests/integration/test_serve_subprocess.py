"""``admit.testing.serve_subprocess``: the one helper that starts ``admit serve``, waits until ready and stops it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from admit.testing import serve_subprocess
from admit.testing.serve import ServerFailed

pytest.importorskip("fastapi")
pytestmark = pytest.mark.integration


def test_it_yields_a_ready_server_and_stops_it_after(tmp_path: Path) -> None:
    cfg = tmp_path / "admit.toml"
    cfg.write_text('[service.keys.a]\nkey_env = "SERVE_HELPER_KEY"\ntenant = "acme"\n', "utf-8")
    started: list[subprocess.Popen[bytes]] = []
    env = {"SERVE_HELPER_KEY": "k" * 24}
    with serve_subprocess(["--config", str(cfg)], env=_env(env), on_start=started.append) as url:
        assert url.startswith("http://127.0.0.1:")
        ready = httpx.get(f"{url}/readyz", timeout=120)
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert httpx.get(f"{url}/healthz", timeout=120).json()["kb"] is False
        assert started and started[0].poll() is None
    assert started[0].poll() is not None  # stopped and reaped when the block ended
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz", timeout=120)


def test_a_server_that_cannot_start_fails_with_its_own_error_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[service]\nprune_strategy = "top-n"\n', "utf-8")
    with pytest.raises(ServerFailed) as info, serve_subprocess(["--config", str(cfg)], env=_env({})):
        pytest.fail("the block must not run")
    assert "exited with 2" in str(info.value) and "prune_strategy" in str(info.value)


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", **extra}
