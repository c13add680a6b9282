"""What long commands show on stderr while they work: search's steps, prune's bar (off when not a terminal)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    path = tmp_path / "demo.kb"
    res = CliRunner().invoke(
        main,
        [
            "ingest",
            str(ROOT / "examples" / "docs"),
            "--kb",
            str(path),
            "--registry",
            str(ROOT / "examples" / "sources.toml"),
            "--embedder",
            "fake:64",
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    return path


def test_search_says_what_it_is_doing_on_stderr(kb: Path) -> None:
    args = ["search", "What does error E4012 mean?", "--kb", str(kb), "--principal", "tenant:acme", "--json"]
    shown = CliRunner().invoke(main, [*args, "--progress"])
    assert shown.exit_code == 0, shown.output
    steps = shown.stderr.splitlines()
    assert steps[0].startswith("opening the knowledge base")
    assert steps[1].startswith("loading the embedding model")
    assert steps[2].startswith("searching")
    assert json.loads(shown.stdout)["admitted"]  # stdout is the result alone
    quiet = CliRunner().invoke(main, args)  # stderr is not a terminal here: nothing drawn
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_prune_shows_a_bar_over_the_records(tmp_path: Path) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": "E4012?", "candidates": [{"id": "a", "text": "E4012 quota"}]}) + "\n"
            for i in range(4)
        ),
        "utf-8",
    )
    base = [
        "prune",
        "--input",
        str(inp),
        "--output",
        str(tmp_path / "out.jsonl"),
        "--prune",
        "top_n",
        "--reranker",
        "bm25",
    ]
    shown = CliRunner().invoke(main, [*base, "--progress"])
    assert shown.exit_code == 0, shown.output
    assert "loading the reranker and the top_n pruner" in shown.stderr
    assert "4/4" in shown.stderr and "ETA" in shown.stderr
    quiet = CliRunner().invoke(main, base)
    assert quiet.exit_code == 0
    assert "ETA" not in quiet.stderr and "loading" not in quiet.stderr
