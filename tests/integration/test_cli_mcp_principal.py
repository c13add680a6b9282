"""``admit mcp --kb KB --principal tenant:T`` with no config file: the principal syntax of every other command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("sqlite_vec")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "kb.db"
    subprocess.run(
        [
            *(sys.executable, "-c", "from admit.cli import main; main()", "ingest", "examples/docs"),
            *("--kb", str(path), "--registry", "examples/sources.toml", "--embedder", "fake", "--no-progress"),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=240,
    )
    return path


def _search(kb: Path, *flags: str) -> dict[str, Any]:
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from admit.cli import main; main()", "mcp", "--kb", str(kb), *flags],
        env=env,
        cwd=str(REPO),
    )

    async def main() -> Any:
        with anyio.fail_after(180):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("search_knowledge_base", {"question": "How do I fix error E4012?"})

    res = anyio.run(main)
    assert not res.is_error, res.content
    return dict(res.structured_content) if res.structured_content is not None else json.loads(res.content[0].text)


def test_principal_and_prune_without_a_config_file(kb: Path) -> None:
    out = _search(kb, "--principal", "tenant:globex", "--prune", "top_n")
    assert out["citations"] and all(p["source_id"].startswith("globex") for p in out["passages"])
    assert out["trace"]["pruner"]["strategy"] == "top_n"


def test_a_bad_principal_is_a_usage_error(kb: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", "mcp", "--kb", str(kb), "--principal", "globex"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert res.returncode == 2 and "--principal" in res.stderr and "Traceback" not in res.stderr
