"""First contact III, the small items: ``admit replay`` on a trace without requests, the streamable-HTTP MCP
server's start line, and ``py.typed``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration._live import ADMIT, REPO, admit, env, free_port, stop

pytestmark = pytest.mark.integration


def test_replay_of_a_trace_without_requests_is_one_error_and_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps({"request_id": f"r{i}", "decisions": []}) + "\n" for i in range(5)), "utf-8")
    policy = REPO / "src" / "admit" / "policies" / "default.toml"
    res = admit("replay", str(trace), "--policy", str(policy), "--out", str(tmp_path / "out"))
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "trace_requests = true" in lines[0] and "4 more lines" in lines[0], lines[0]
    assert not (tmp_path / "out").exists(), "nothing replayed, nothing written"


def test_streamable_http_mcp_says_where_it_listens(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    config = tmp_path / "admit.toml"
    config.write_text('[service.keys.a]\nkey_env = "FC3_KEY"\ntenant = "acme"\n', "utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [*ADMIT, "mcp", "--transport", "streamable-http", "--config", str(config), "--port", str(port)],
        env=env(FC3_KEY="k" * 24), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        seen = []
        for raw in proc.stderr:  # the line comes once the socket is bound
            line = raw.decode(errors="replace").rstrip("\n")
            seen.append(line)
            if "listening on" in line:
                break
        assert seen and seen[-1] == f"admit mcp: listening on http://127.0.0.1:{port}/mcp (streamable-http)", seen
    finally:
        stop(proc)


def test_the_package_ships_py_typed() -> None:
    assert (REPO / "src" / "admit" / "py.typed").is_file()
