"""A strategy from a third-party package, registered through the ``admit.strategies`` entry point only.

The package is a module plus a ``dist-info`` folder with ``entry_points.txt`` on ``sys.path`` (what ``pip install``
leaves); nothing in admit names it. Real processes: ``admit prune``, ``admit eval`` and ``admit serve`` on a
loopback port (``POST /v1/prune``), each a fresh interpreter that finds the strategy through the entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from admit.testing import serve_subprocess

pytestmark = pytest.mark.integration

PLUGIN = '''
"""first_word: keep the chunks that contain a long word of the question."""

from admit.prune.base import apply_threshold
from admit.prune.checks import int_at_least
from admit.prune.spec import StrategySpec


class FirstWordPruner:
    name = "first_word"

    def prune(self, question, candidates, settings):
        n = settings.params.get("min_len", 5)
        words = {w.strip("?.,").lower() for w in question.split() if len(w.strip("?.,")) >= n}
        grades = [5 if words & set(c.chunk.text.lower().replace(".", " ").split()) else 1 for c in candidates]
        return apply_threshold(self.name, candidates, grades, settings)


SPEC = StrategySpec(
    name="first_word",
    build=lambda resources: FirstWordPruner(),
    params={"min_len": int_at_least(1)},
    regrade_from_grades=True,
    source_modules=("first_word_plugin",),
    default_grid={"min_len": [4, 5]},
)
'''

RECORDS = [
    {
        "id": "q1",
        "question": "How long is the retention of audit records?",
        "candidates": [
            {"id": "a", "text": "Audit records have a retention of 90 days."},
            {"id": "b", "text": "The cafeteria opens at eight."},
            {"id": "c", "text": "Records of audit events are stored encrypted."},
        ],
        "required": ["a"],
    },
    {
        "id": "q2",
        "question": "Which certificate expired?",
        "candidates": [
            {"id": "x", "text": "The upstream certificate expired yesterday."},
            {"id": "y", "text": "Our logo was redesigned."},
        ],
        "required": ["x"],
    },
]


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    (site / "first_word_plugin.py").write_text(PLUGIN, "utf-8")
    info = site / "admit_first_word-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: admit-first-word\nVersion: 0.1\n", "utf-8")
    (info / "entry_points.txt").write_text("[admit.strategies]\nfirst_word = first_word_plugin:SPEC\n", "utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def _admit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_admit_prune_runs_the_plugin(plugin_env: dict[str, str], tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    out = tmp_path / "out.jsonl"
    args = ["prune", "--input", str(src), "--output", str(out), "--prune", "first_word", "--reranker", "bm25"]
    p = _admit(plugin_env, *args, "--set", "min_len=5")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["strategy"] for r in rows] == ["first_word", "first_word"]
    assert rows[0]["kept"] == ["a", "c"] and rows[1]["kept"] == ["x"]
    # the plug-in's declared parameters are checked like a built-in's
    bad = _admit(plugin_env, *args, "--set", "min_lenn=5")
    assert bad.returncode != 0 and "unknown prune parameter `min_lenn`" in bad.stderr
    # the help lists it
    assert "first_word" in _admit(plugin_env, "prune", "--help").stdout


def test_admit_eval_runs_the_plugin(plugin_env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    out = tmp_path / "eval"
    args = ["eval", "--data", str(data), "--prune", "first_word", "--reranker", "bm25", "--out", str(out)]
    p = _admit(plugin_env, *args, "--cache", str(tmp_path / "cache"), "--no-progress", "--json")
    assert p.returncode == 0, p.stderr
    configs = json.loads(p.stdout)["configs"]
    assert sorted(configs) == ["first_word min_len=4", "first_word min_len=5"]
    assert configs["first_word min_len=5"]["retained_recall"] == 1.0


@pytest.fixture(scope="module")
def served(plugin_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("serve")
    cfg = tmp / "admit.toml"
    cfg.write_text(
        '[service]\nprune_strategy = "first_word"\n\n'
        '[service.keys.acme]\nkey_env = "ADMIT_PLUGIN_KEY"\ntenant = "acme"\n',
        "utf-8",
    )
    with serve_subprocess(["--config", str(cfg)], env={**plugin_env, "ADMIT_PLUGIN_KEY": "plugin-key"}) as url:
        yield url


def test_v1_prune_runs_the_plugin(served: str) -> None:
    rec = RECORDS[0]
    body = {"question": rec["question"], "candidates": rec["candidates"], "params": {"min_len": 5}}
    r = httpx.post(f"{served}/v1/prune", json=body, headers={"X-API-Key": "plugin-key"}, timeout=120)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["strategy"] == "first_word" and got["kept_ids"] == ["a", "c"]
    body["params"] = {"min_lenn": 5}
    r = httpx.post(f"{served}/v1/prune", json=body, headers={"X-API-Key": "plugin-key"}, timeout=120)
    assert r.status_code == 422 and "min_lenn" in r.text
